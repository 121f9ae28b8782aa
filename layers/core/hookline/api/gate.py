"""What every request passes before routing: its request id, the API key, the key's rate, the route's
scope, body checks.

Powertools validates a body before any middleware runs, so these checks run here, in front of the resolver:
a caller without a key or without the route's scope learns nothing from validation errors, and an
oversized, non-JSON or non-UTF-8 body is refused before it is parsed.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.api_gateway import Route
from aws_lambda_powertools.utilities.typing import LambdaContext

from hookline.api.context import container
from hookline.api.errors import failure_response
from hookline.api.scopes import matched_route, scope_of
from hookline.domain.errors import (
    Forbidden,
    HooklineError,
    IndexUnavailable,
    InvalidRequest,
    RateLimited,
    Unauthorized,
)
from hookline.usecases.auth import Principal

logger = logging.getLogger(__name__)

REQUEST_ID_HEADER = "X-Request-Id"
PUBLIC_PATHS = frozenset({"/healthz", "/openapi.json", "/docs", "/dashboard"})
# One job's payload may be 256 KiB (constants.MAX_BODY_BYTES); JSON escaping can double it, hence 1 MiB.
MAX_REQUEST_BYTES = 1024 * 1024
# A batch of 100 jobs; Lambda refuses synchronous payloads over 6 MB (API Gateway itself allows 10 MB).
MAX_BATCH_REQUEST_BYTES = 5 * 1024 * 1024
BATCH_PATH = "/v1/jobs/batch"
RATE_WINDOW_MS = 1000
# Deeper JSON is refused: pydantic stops serialising at a lower depth than the parser's recursion limit.
MAX_JSON_DEPTH = 64
_METHODS_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})

_principal: ContextVar[Principal | None] = ContextVar("principal", default=None)


class PayloadTooLarge(HooklineError):
    """The request body is over the limit."""

    code = "payload_too_large"
    http_status = 413


class UnsupportedMediaType(HooklineError):
    """The request body is not declared as JSON."""

    code = "unsupported_media_type"
    http_status = 415


class InvalidEncoding(HooklineError):
    """The request body is not UTF-8 text, so it cannot be JSON (RFC 8259 8.1)."""

    code = "invalid_encoding"
    http_status = 400


def handle(
    app: APIGatewayRestResolver, event: dict[str, Any], lambda_context: LambdaContext
) -> dict[str, Any]:
    """Checks one API Gateway proxy event, routes it, and tags the answer with the request id."""
    request_id = _request_id(event)
    try:
        found, admitted = _admit(app, event)
        with _acting_for(found):
            response = app.resolve(admitted, lambda_context)
    except Exception as error:
        # Authentication reads DynamoDB before routing: its failures, too, answer in the envelope.
        response = _proxy_response(failure_response(error))
    return _with_header(response, REQUEST_ID_HEADER, request_id)


def principal() -> Principal:
    """Returns who the current request acts for; handle() has checked its key holds the route's scope."""
    found = _principal.get()
    if found is None:
        # Only a caller that skipped handle() (resolving events itself) gets here: it proved nothing.
        raise Unauthorized("missing or invalid API key")
    return found


@contextmanager
def _acting_for(found: Principal | None) -> Iterator[None]:
    token = _principal.set(found)
    try:
        yield
    finally:
        _principal.reset(token)


def _admit(app: APIGatewayRestResolver, event: dict[str, Any]) -> tuple[Principal | None, dict[str, Any]]:
    """Authenticates, rate-limits, checks the route's scope and the body.

    A request no route serves skips the key: the resolver answers it 404 or 405 and runs no handler, so
    the answer tells nothing the published OpenAPI document does not. (A REST API answers such requests
    404 itself; an HTTP API's $default route sends them here, and they get the same 404 with or without a
    key.)

    Returns the principal (None for public routes and unrouted requests) and the event to route: its body
    as UTF-8 text and a JSON media type spelled as the resolver's parser expects it.
    """
    path = str(event.get("path") or "/")
    route = matched_route(app, str(event.get("httpMethod") or ""), path)
    found = None
    if path not in PUBLIC_PATHS and route is not None:
        found = container().authenticator.authenticate(_bearer(_headers(event)))
        _check_rate(found)
        _check_scope(route, found)
    return found, _checked_body(event, path)


def _check_scope(route: Route, found: Principal) -> None:
    scope = scope_of(route.func)
    if scope is None:
        # A keyed route that declares no scope is a bug; refusing is the side that leaks nothing.
        logger.error("route declares no scope", extra={"route": route.path, "method": route.method})
        raise Forbidden("this route is not open to API keys")
    if scope not in found.scopes:
        raise Forbidden(f"this key lacks the {scope} scope")


def _headers(event: Mapping[str, Any]) -> dict[str, str]:
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    for name, values in (event.get("multiValueHeaders") or {}).items():
        if values and str(name).lower() not in headers:
            headers[str(name).lower()] = str(values[-1])
    return headers


def _bearer(headers: Mapping[str, str]) -> str | None:
    value = headers.get("authorization", "")
    return value[7:].strip() if value[:7].lower() == "bearer " else None


def _check_rate(found: Principal) -> None:
    """Admits one request for the key or raises RateLimited; fails open when Redis is unreachable, at once
    while the container's Redis circuit says it is down (usecases/circuit.py)."""
    current = container()
    limit = found.rate_limit_per_s or current.settings.api_rate_limit_per_s
    now_ms = current.clock.now_ms()
    circuit = current.redis_circuit
    # Fail open: every route's state lives in DynamoDB, which throttles on its own; refusing all traffic
    # because the limiter is down would turn a Redis outage into an API outage.
    if not circuit.allows():
        current.metrics.count("ApiRateLimiterUnavailable")
        return
    try:
        verdict = current.api_rate_limiter.admit_api_call(
            found.key_id, now_ms, limit, RATE_WINDOW_MS, uuid.uuid4().hex
        )
    except IndexUnavailable:
        circuit.failed()
        logger.warning("API rate limiter unavailable; admitting the request", exc_info=True)
        current.metrics.count("ApiRateLimiterUnavailable")
        return
    circuit.succeeded()
    if not verdict.admitted:
        retry_after_s = max(1, math.ceil((verdict.retry_at_ms - now_ms) / 1000))
        raise RateLimited(f"over {limit} requests per second for this key", retry_after_s)


def _checked_body(event: dict[str, Any], path: str) -> dict[str, Any]:
    """Refuses a body that is too large, not declared as JSON, not UTF-8 or unstorable; returns the event
    with the body as text and its media type normalised (the same event when nothing changes)."""
    method = str(event.get("httpMethod") or "").upper()
    raw = _body_bytes(event)
    if not raw:
        # Nothing to parse, but the resolver would still pick a parser by media type and fail on one it
        # does not know (a 500): without a body the media type means nothing, so it is dropped.
        return _with_json_media_type(event, None) if method in _METHODS_WITH_BODY else event
    limit = MAX_BATCH_REQUEST_BYTES if path == BATCH_PATH else MAX_REQUEST_BYTES
    if len(raw) > limit:
        raise PayloadTooLarge(f"the request body exceeds {limit} bytes")
    if method not in _METHODS_WITH_BODY:
        return event  # no route of these methods reads a body
    if not _is_json(_media_type(event)):
        raise UnsupportedMediaType("send the body as application/json")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidEncoding(f"the request body is not UTF-8 (byte {error.start})") from error
    _check_text(text)
    return {**_with_json_media_type(event, "application/json"), "body": text, "isBase64Encoded": False}


def _body_bytes(event: Mapping[str, Any]) -> bytes:
    """Returns the body's bytes: base64-decoded when API Gateway encoded it (it was not UTF-8 text)."""
    body = event.get("body") or ""
    try:
        if event.get("isBase64Encoded"):
            return base64.b64decode(str(body), validate=True)
        return str(body).encode("utf-8")
    except (binascii.Error, UnicodeEncodeError) as error:
        # Text holding a lone surrogate (no UTF-8 form), or base64 API Gateway would never send.
        raise InvalidEncoding("the request body is not UTF-8") from error


def _media_type(event: Mapping[str, Any]) -> str:
    """Returns the body's media type without parameters, lower case (media types are case-insensitive)."""
    return _headers(event).get("content-type", "").split(";")[0].strip().lower()


def _with_json_media_type(event: dict[str, Any], media_type: str | None) -> dict[str, Any]:
    """Returns the event with every Content-Type header replaced by media_type (removed when None).

    The resolver picks its parser by a case-sensitive prefix test, so `APPLICATION/JSON` or a `+json`
    type, which are JSON (RFC 9110 8.3.1, RFC 6839), would fail there; the gate has checked them already.
    """
    changed = dict(event)
    for field, value in (("headers", media_type), ("multiValueHeaders", [media_type])):
        original = event.get(field) or {}
        kept = {name: v for name, v in original.items() if str(name).lower() != "content-type"}
        if media_type is not None:
            kept["Content-Type"] = value
        if original or kept:
            changed[field] = kept
    return changed


def _check_text(body: str) -> None:
    """Refuses JSON that parses but cannot be handled: unpaired surrogate escapes, or deep nesting.

    `"\\ud800"` is valid JSON but not Unicode text, so no store could encode it; and the serialisers
    downstream give up on deep nesting. Either would otherwise fail deep inside, as a 500.
    """
    try:
        parsed = json.loads(body)
    except ValueError:
        return  # not JSON at all: the resolver's validation names the error
    except RecursionError as error:
        raise InvalidRequest(f"the body nests deeper than {MAX_JSON_DEPTH} levels") from error
    if _depth(parsed) > MAX_JSON_DEPTH:
        raise InvalidRequest(f"the body nests deeper than {MAX_JSON_DEPTH} levels")
    try:
        json.dumps(parsed, ensure_ascii=False).encode()
    except UnicodeEncodeError as error:
        raise InvalidRequest("the body holds an unpaired UTF-16 surrogate escape") from error


def _depth(value: Any) -> int:
    """Returns how deeply arrays and objects nest in a parsed JSON value (iteratively: no recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


def _is_json(media_type: str) -> bool:
    """Tells whether a media type is JSON: application/json or any application/*+json (RFC 6839)."""
    return media_type == "application/json" or (
        media_type.startswith("application/") and media_type.endswith("+json")
    )


def _request_id(event: Mapping[str, Any]) -> str:
    context = event.get("requestContext") or {}
    request_id = context.get("requestId") if isinstance(context, Mapping) else None
    return str(request_id) if request_id else uuid.uuid4().hex


def _proxy_response(response: Response[str]) -> dict[str, Any]:
    headers = {
        name: [str(v) for v in (value if isinstance(value, list) else [value])]
        for name, value in response.headers.items()
    }
    return {
        "statusCode": response.status_code,
        "multiValueHeaders": headers,
        "body": response.body if isinstance(response.body, str) else json.dumps(response.body),
        "isBase64Encoded": False,
    }


def _with_header(response: dict[str, Any], name: str, value: str) -> dict[str, Any]:
    if "multiValueHeaders" in response:
        response["multiValueHeaders"] = {**(response["multiValueHeaders"] or {}), name: [value]}
    else:
        response["headers"] = {**(response.get("headers") or {}), name: value}
    return response
