"""Health and documentation routes: /healthz, /openapi.json and the Swagger UI at /docs (no API key)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi import swagger_ui
from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer
from aws_lambda_powertools.event_handler.openapi.swagger_ui.html import generate_swagger_html

from hookline.adapters.redis.health import OK, redis_state
from hookline.api.context import container
from hookline.api.errors import error_response
from hookline.api.views import ErrorEnvelope, HealthView

logger = logging.getLogger(__name__)

router = Router()

TITLE = "Hookline API"
VERSION = "1.0.0"
DESCRIPTION = (
    "Schedule HTTP callbacks. Authenticate with `Authorization: Bearer hl_<key id>_<secret>`. "
    'Every error answers `{"error": {"code", "message", "details"}}` with an `X-Request-Id` header.'
)
_SECURITY_SCHEMES: dict[str, Any] = {"bearer": HTTPBearer(bearerFormat="hl_<key id>_<secret>")}


@router.get(
    "/healthz",
    summary="Check Redis and DynamoDB",
    tags=["health"],
    operation_id="getHealth",
    security=[{}],  # an empty requirement: no key needed (an empty list would inherit the bearer one)
    responses={
        200: {
            "description": (
                'Both answer: status "ok", or "degraded" with the reason as the dependency\'s check '
                '(checks.redis "out_of_memory": Redis is at its maxmemory and refuses writes, so jobs are '
                "accepted but not delivered until memory frees)"
            ),
            "content": {content_types.APPLICATION_JSON: {"model": HealthView}},
        },
        503: {
            "description": "One of them does not; details name it",
            "content": {content_types.APPLICATION_JSON: {"model": ErrorEnvelope}},
        },
    },
)
def health() -> Response[str]:
    """Answers 200 when Redis and DynamoDB both answer (status "degraded" when one answers but is
    impaired, its check naming how), else 503 naming each one that failed."""
    current = container()
    # Through a lambda: building the job store checks the bucket count, itself a DynamoDB read.
    checks: dict[str, Callable[[], str]] = {
        "redis": lambda: redis_state(current.redis),
        "dynamodb": lambda: _state_of(current.jobs.check),
    }
    states: dict[str, str] = {}
    failed = []
    for name, check in checks.items():
        try:
            states[name] = check()
        except Exception as error:
            logger.warning("health check failed", extra={"dependency": name, "error": repr(error)})
            failed.append(name)
    if failed:
        details = [{"dependency": name, "status": "unavailable"} for name in failed]
        return error_response(503, "dependency_unavailable", f"unavailable: {', '.join(failed)}", details)
    impaired = {name: state for name, state in states.items() if state != OK}
    if impaired:
        logger.warning("health check: dependency impaired", extra={"checks": impaired})
    body = HealthView(status="degraded" if impaired else "ok", checks=states)
    return Response(200, content_types.APPLICATION_JSON, body.model_dump_json())


def _state_of(check: Callable[[], None]) -> str:
    """Runs a check that raises when its dependency does not answer; returns OK when it returns."""
    check()
    return OK


def openapi_document(app: APIGatewayRestResolver) -> str:
    """Returns the OpenAPI document of app's routes as JSON."""
    return app.get_openapi_json_schema(
        title=TITLE,
        version=VERSION,
        description=DESCRIPTION,
        security_schemes=_SECURITY_SCHEMES,
        security=[{"bearer": []}],
    )


@cache
def _swagger_assets() -> tuple[str, str]:
    """Returns Powertools' bundled Swagger UI script and style sheet, read once per process."""
    folder = Path(swagger_ui.__file__).parent
    return (
        (folder / "swagger-ui-bundle.min.js").read_text(encoding="utf-8"),
        (folder / "swagger-ui.min.css").read_text(encoding="utf-8"),
    )


def enable_docs(app: APIGatewayRestResolver) -> None:
    """Serves the OpenAPI document at /openapi.json and the Swagger UI at /docs.

    Not app.enable_swagger(): it re-reads (and leaks the handles of) 1.5 MB of assets on every request.
    """

    @app.get("/openapi.json", include_in_schema=False)
    def _openapi() -> Response[str]:
        return Response(200, content_types.APPLICATION_JSON, openapi_document(app))

    @app.get("/docs", include_in_schema=False)
    def _docs() -> Response[str]:
        script, style = _swagger_assets()
        # "</" inside the inlined JSON would end the <script> element early.
        spec = openapi_document(app).replace("</", "<\\/")
        html = generate_swagger_html(spec, script, style, swagger_base_url="", oauth2_config=None)
        return Response(200, "text/html; charset=utf-8", html)
