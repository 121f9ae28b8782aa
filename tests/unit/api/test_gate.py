"""Checks made before routing that need no dependency: body size, media type, odd JSON, request ids.

They run on public paths too, so these requests reach no key store, Redis or DynamoDB.
"""

from __future__ import annotations

import base64
import json
import warnings

import pytest

from functions.submit.app import NO_METRICS_WARNING, app
from hookline.api.gate import MAX_JSON_DEPTH, MAX_REQUEST_BYTES, PUBLIC_PATHS
from hookline.api.scopes import scope_of
from tests.support.apigw import LambdaContext, invoke, proxy_event

# Every request goes once as a REST API event and once as an HTTP API event (payload format 2.0).
pytestmark = pytest.mark.usefixtures("payload_format")
JSON = {"Content-Type": "application/json"}


def post_public(body: str, headers: dict[str, str] | None = None, **event: object) -> tuple[int, str]:
    built = proxy_event("POST", "/healthz", body=body, headers=JSON if headers is None else headers)
    built.update(event)
    response = invoke(built)
    return response.status, response.error_code


def test_given_body_one_byte_over_the_limit_when_posting_then_413_and_at_the_limit_it_passes_on() -> None:
    at_limit = json.dumps({"x": "a" * (MAX_REQUEST_BYTES - 9)})
    over = json.dumps({"x": "a" * (MAX_REQUEST_BYTES - 8)})
    assert len(at_limit) == MAX_REQUEST_BYTES

    # Passing the gate, the request meets the router: /healthz answers GET only.
    assert post_public(at_limit) == (405, "method_not_allowed")
    assert post_public(over) == (413, "payload_too_large")


def test_given_multibyte_body_when_sized_then_bytes_count_not_characters() -> None:
    body = json.dumps({"x": "é" * (MAX_REQUEST_BYTES // 2)}, ensure_ascii=False)

    assert post_public(body) == (413, "payload_too_large")


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("application/json", 405),
        ("Application/JSON; charset=utf-8", 405),
        ("application/merge-patch+json", 405),
        ("text/plain", 415),
        ("application/jsonx", 415),
        ("", 415),
    ],
)
def test_given_media_type_when_posting_a_body_then_only_json_passes(content_type: str, expected: int) -> None:
    headers = {"Content-Type": content_type} if content_type else {}

    assert post_public('{"a": 1}', headers)[0] == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('{"a": "\\ud800"}', 422),
        ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), 422),
        ("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, 405),
        ("[" * 200_000 + "]" * 200_000, 422),
        ("{not json", 405),
        ('{"a": "\\ud83d\\ude00"}', 405),
    ],
    ids=["lone-surrogate", "too-deep", "deep-enough", "parser-recursion", "not-json", "paired-surrogates"],
)
def test_given_json_shape_when_posting_then_unstorable_text_is_422(body: str, expected: int) -> None:
    assert post_public(body)[0] == expected


def test_given_request_without_api_gateway_id_when_answered_then_a_fresh_id_is_made() -> None:
    event = proxy_event("GET", "/nowhere-public")
    event["path"] = "/healthz"
    event["httpMethod"] = "DELETE"
    del event["requestContext"]["requestId"]

    first, second = invoke(event), invoke(event)

    assert first.status == 405
    assert len(first.headers["x-request-id"]) == 32
    assert first.headers["x-request-id"] != second.headers["x-request-id"]


def post_public_bytes(raw: bytes) -> tuple[int, str]:
    """Posts raw bytes as API Gateway hands over a body that is not UTF-8 text: base64-encoded."""
    return post_public(base64.b64encode(raw).decode(), isBase64Encoded=True)


@pytest.mark.parametrize(
    "raw",
    [b'{"a": "\xff"}', b'{"a": "\xc3"}', b"\xfe\xff\x00{", b'{"a": "\xed\xa0\x80"}'],
    ids=["invalid-byte", "truncated-sequence", "utf16-bom", "encoded-surrogate"],
)
def test_given_body_that_is_not_utf8_when_posting_then_400_invalid_encoding(raw: bytes) -> None:
    assert post_public_bytes(raw) == (400, "invalid_encoding")


def test_given_base64_utf8_body_when_posting_then_checked_like_text() -> None:
    # Base64 bodies used to skip the text checks; the lone surrogate escape must be refused here too.
    assert post_public_bytes('{"a": "é"}'.encode())[0] == 405
    assert post_public_bytes(b'{"a": "\\ud800"}') == (422, "validation_error")


def test_given_text_body_holding_a_lone_surrogate_when_posting_then_400_not_500() -> None:
    # Only a Lambda event can carry this (no HTTP body can): text with no UTF-8 form.
    assert post_public('{"a": "\ud800"}') == (400, "invalid_encoding")


def test_given_resolver_reached_with_a_media_type_it_cannot_parse_then_415_not_500() -> None:
    # The gate normalises media types first; this is the net behind it, should one reach the resolver.
    event = proxy_event("POST", "/v1/jobs", body='{"url": 1}', headers={"Content-Type": "text/csv"})

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=NO_METRICS_WARNING)
        answer = app.resolve(event, LambdaContext())

    assert (answer["statusCode"], json.loads(answer["body"])["error"]["code"]) == (
        415,
        "unsupported_media_type",
    )


def test_given_every_keyed_route_then_it_declares_the_scope_of_its_family_and_method() -> None:
    routes = [r for r in app._static_routes + app._dynamic_routes if r.path not in PUBLIC_PATHS]
    assert len(routes) == 24  # the v1 routes of jobs, dead letters, schedules, queues, stats and the secret

    for route in routes:
        family = next((f for f in ("schedules", "queues") if route.path.startswith(f"/v1/{f}")), "jobs")
        family = "secrets" if route.path.startswith("/v1/signing-secret") else family
        access = "read" if route.method == "GET" else "write"
        assert scope_of(route.func) == f"{family}:{access}", (route.method, route.path)
