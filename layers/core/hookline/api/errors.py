"""Maps domain, validation, routing and dependency errors to HTTP answers in one envelope, once."""

from __future__ import annotations

import json
import logging
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from botocore.exceptions import BotoCoreError, ClientError

from hookline.adapters.dynamo.errors import is_transient
from hookline.api.views import ErrorEnvelope, error_body
from hookline.domain.errors import DependencyDown, HooklineError, InvalidRequest, RateLimited

logger = logging.getLogger(__name__)


def error_response(
    status: int,
    code: str,
    message: str,
    details: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> Response[str]:
    """Returns a JSON error response in the envelope."""
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps(error_body(code, message, details)),
        headers=headers,
    )


def domain_error_response(error: HooklineError) -> Response[str]:
    """Returns the answer for a domain error (its status, its code, Retry-After for 429)."""
    details = []
    if isinstance(error, InvalidRequest) and error.field:
        details.append({"field": error.field, "message": str(error)})
    headers = {"Retry-After": str(error.retry_after_s)} if isinstance(error, RateLimited) else None
    if error.http_status >= 500:
        logger.error("dependency failure", extra={"code": error.code, "reason": str(error)})
    return error_response(error.http_status, error.code, str(error), details, headers)


def error_responses(*statuses: int) -> dict[int, Any]:
    """Returns OpenAPI response entries documenting the envelope for each status."""
    descriptions = {
        400: "Body is not UTF-8 text",
        401: "Missing, malformed, unknown or revoked API key",
        403: "The key lacks the scope this route needs",
        404: "No such item for this tenant",
        409: "Conflicts with the item's current state",
        413: "Request body over the limit",
        415: "Body is not JSON",
        422: "Validation failed; details name each field",
        429: "Rate limited; see Retry-After",
        503: "A dependency is unavailable",
    }
    return {
        status: {
            "description": descriptions[status],
            "content": {content_types.APPLICATION_JSON: {"model": ErrorEnvelope}},
        }
        for status in statuses
    }


def _field_path(location: Any) -> str:
    """Returns a field's dotted path within the request body: the resolver's leading "body" (where in the
    request) is dropped, a field of the job named body is kept."""
    if not isinstance(location, (list, tuple)):
        return ""
    parts = [str(part) for part in location]
    return ".".join(parts[1:] if parts[:1] == ["body"] else parts)


def _allowed_methods(app: APIGatewayRestResolver, path: str) -> list[str]:
    """Returns the methods some route serves for path (empty when no route matches it).

    The whole path must match: a rule's `$` also matches before a final newline, so `/v1/jobs/%0A` would
    claim GET and POST of `/v1/jobs` and answer a 405 its own operation does not document.
    """
    routes = app._static_routes + app._dynamic_routes
    return sorted({route.method for route in routes if route.rule.fullmatch(path)})


def _aws_error_response(error: BotoCoreError | ClientError) -> Response[str]:
    """Returns 503 for a failure the DynamoDB adapter calls transient (its list, not a copy), else 500."""
    if is_transient(error):
        logger.warning("DynamoDB unavailable", extra={"error": repr(error)})
        return domain_error_response(DependencyDown("dynamodb is unavailable; retry later"))
    logger.error("unexpected DynamoDB error", exc_info=error)
    return error_response(500, "internal_error", "internal error")


def failure_response(error: Exception) -> Response[str]:
    """Returns the answer for an error raised outside validation: domain, dependency, or a bug (500)."""
    if isinstance(error, HooklineError):
        return domain_error_response(error)
    if isinstance(error, (BotoCoreError, ClientError)):
        return _aws_error_response(error)
    logger.error("unhandled error", exc_info=error)
    return error_response(500, "internal_error", "internal error")


def register(app: APIGatewayRestResolver) -> None:
    """Installs the exception and not-found handlers on app."""

    @app.exception_handler(RequestValidationError)
    def _validation(error: RequestValidationError) -> Response[str]:
        details = [
            {
                # A JSON syntax error's location is a character offset, not a field.
                "field": "" if item.get("type") == "json_invalid" else _field_path(item.get("loc", ())),
                "message": str(item.get("msg", "")),
                "type": item.get("type"),
            }
            for item in error.errors()
        ]
        return error_response(422, "validation_error", "the request is not valid", details)

    @app.exception_handler(RequestUnsupportedContentType)
    def _media_type(error: RequestUnsupportedContentType) -> Response[str]:
        # The gate lets only JSON through; this is the resolver's own refusal, should one reach it.
        return error_response(415, "unsupported_media_type", "send the body as application/json")

    @app.exception_handler(Exception)
    def _failure(error: Exception) -> Response[str]:
        return failure_response(error)

    @app.not_found
    def _not_found(error: NotFoundError) -> Response[str]:
        event = app.current_event
        allowed = _allowed_methods(app, event.path)
        if allowed:
            message = f"{event.http_method} is not allowed here; use {', '.join(allowed)}"
            return error_response(405, "method_not_allowed", message, headers={"Allow": ", ".join(allowed)})
        return error_response(404, "not_found", f"no route for {event.http_method} {event.path}")
