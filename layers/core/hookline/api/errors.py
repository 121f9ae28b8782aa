"""Maps domain and validation errors to HTTP answers, once, for every route."""

from __future__ import annotations

import json
import logging
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from hookline.api.views import error_body
from hookline.errors import HooklineError, InvalidRequest, RateLimited

logger = logging.getLogger(__name__)


def error_response(
    status: int, code: str, message: str, details: list[dict[str, Any]] | None = None
) -> Response[str]:
    """Returns a JSON error response in the envelope."""
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps(error_body(code, message, details)),
    )


def _field_path(location: Any) -> str:
    parts = [str(part) for part in location if part != "body"] if isinstance(location, (list, tuple)) else []
    return ".".join(parts)


def register(app: APIGatewayRestResolver) -> None:
    """Installs the exception handlers on app."""

    @app.exception_handler(RequestValidationError)
    def _validation(error: RequestValidationError) -> Response[str]:
        details = [
            {
                "field": _field_path(item.get("loc", ())),
                "message": str(item.get("msg", "")),
                "type": item.get("type"),
            }
            for item in error.errors()
        ]
        return error_response(422, "validation_error", "the request is not valid", details)

    @app.exception_handler(HooklineError)
    def _domain(error: HooklineError) -> Response[str]:
        details = []
        if isinstance(error, InvalidRequest) and error.field:
            details.append({"field": error.field, "message": str(error)})
        response = error_response(error.http_status, error.code, str(error), details)
        if isinstance(error, RateLimited):
            response.headers["Retry-After"] = str(error.retry_after_s)
        if error.http_status >= 500:
            logger.error("dependency failure", extra={"code": error.code})
        return response
