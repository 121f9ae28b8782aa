"""The submit handler behind an HTTP API (ApiKind=Http): events in payload format 2.0, built here as an HTTP
API's $default route sends them, answered in the 2.0 shape with the REST API's checks and envelope.

These requests reach no key store, Redis or DynamoDB (public routes, missing keys, refused bodies); the
keyed routes run as both formats in tests/integration/api (the payload_format fixture).
"""

from __future__ import annotations

import base64
import json
import warnings
from typing import Any

import pytest

from functions.submit.app import NO_METRICS_WARNING, handler
from hookline.api.gate import MAX_REQUEST_BYTES
from hookline.api.payload import http_api_response, is_http_api_event, rest_event
from tests.support.apigw import PAYLOAD_FORMATS, LambdaContext, invoke, proxy_event, using_payload_format

JSON = {"content-type": "application/json"}


def v2_event(
    method: str,
    raw_path: str,
    *,
    headers: dict[str, str] | None = None,
    body: str | None = None,
    is_base64: bool = False,
    raw_query: str = "",
    cookies: list[str] | None = None,
    request_id: str = "req-http-1",
) -> dict[str, Any]:
    """Returns the event an HTTP API's $default route sends for one request (payload format 2.0)."""
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": raw_path,
        "rawQueryString": raw_query,
        "headers": {"host": "abc123.execute-api.us-east-1.amazonaws.com", **(headers or {})},
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "http": {
                "method": method,
                "path": raw_path,
                "protocol": "HTTP/1.1",
                "sourceIp": "192.0.2.1",
                "userAgent": "test",
            },
            "requestId": request_id,
            "routeKey": "$default",
            "stage": "$default",
            "time": "05/Dec/2026:07:00:00 +0000",
            "timeEpoch": 1_796_454_000_000,
        },
        "isBase64Encoded": is_base64,
    }
    if body is not None:
        event["body"] = body
    if cookies:
        event["cookies"] = cookies
    return event


def call(event: dict[str, Any]) -> dict[str, Any]:
    """Returns the handler's raw answer, checked to be one an HTTP API reads."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=NO_METRICS_WARNING)
        answer = handler(event, LambdaContext())
    # An HTTP API ignores multiValueHeaders, and an answer without statusCode would become a 200 whose body
    # is the whole answer.
    assert "multiValueHeaders" not in answer
    assert isinstance(answer["statusCode"], int)
    assert all(isinstance(value, str) for value in answer["headers"].values())
    return answer


def envelope_code(answer: dict[str, Any]) -> str:
    return str(json.loads(answer["body"])["error"]["code"])


def test_given_v2_event_for_a_public_route_then_routed_and_answered_in_the_v2_shape() -> None:
    answer = call(v2_event("GET", "/openapi.json"))

    assert answer["statusCode"] == 200
    assert "/v1/jobs" in json.loads(answer["body"])["paths"]
    assert answer["headers"]["X-Request-Id"] == "req-http-1"


def test_given_v2_event_without_key_for_a_keyed_route_then_401_in_the_envelope() -> None:
    missing = call(v2_event("GET", "/v1/jobs"))
    not_bearer = call(v2_event("GET", "/v1/jobs", headers={"authorization": "Basic abc"}))

    assert (missing["statusCode"], envelope_code(missing)) == (401, "unauthorized")
    assert (not_bearer["statusCode"], envelope_code(not_bearer)) == (401, "unauthorized")
    assert missing["body"] == not_bearer["body"]


def test_given_v2_event_for_an_unknown_route_then_404_not_found_with_or_without_a_key() -> None:
    # An HTTP API's $default route sends every path to the function; a REST API answered 404 itself.
    without_key = call(v2_event("GET", "/v1/nothing-here"))
    unknown_key = call(v2_event("GET", "/v1/nothing-here", headers={"authorization": "Bearer hl_x_y"}))

    assert (without_key["statusCode"], envelope_code(without_key)) == (404, "not_found")
    assert without_key["body"] == unknown_key["body"]


def test_given_v2_event_with_a_method_the_path_does_not_serve_then_405_with_allow() -> None:
    answer = call(v2_event("DELETE", "/healthz"))

    assert (answer["statusCode"], envelope_code(answer)) == (405, "method_not_allowed")
    assert answer["headers"]["Allow"] == "GET"


def test_given_v2_event_with_a_json_body_as_text_then_checked_and_passed_on() -> None:
    # An HTTP API hands application/json over as text (isBase64Encoded false).
    passed = call(v2_event("POST", "/healthz", headers=JSON, body='{"a": 1}'))
    not_json_media = call(v2_event("POST", "/healthz", headers={"content-type": "text/plain"}, body="{}"))

    assert passed["statusCode"] == 405  # past the gate: /healthz answers GET only
    assert (not_json_media["statusCode"], envelope_code(not_json_media)) == (415, "unsupported_media_type")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"a": "\xff"}', (400, "invalid_encoding")),
        (b'{"a": "\xed\xa0\x80"}', (400, "invalid_encoding")),
        (b'{"a": "\\ud800"}', (422, "validation_error")),
    ],
    ids=["invalid-byte", "encoded-surrogate", "lone-surrogate-escape"],
)
def test_given_v2_event_with_a_base64_body_then_its_bytes_are_checked(
    raw: bytes, expected: tuple[int, str]
) -> None:
    event = v2_event("POST", "/healthz", headers=JSON, body=base64.b64encode(raw).decode(), is_base64=True)

    answer = call(event)

    assert (answer["statusCode"], envelope_code(answer)) == expected


def test_given_v2_event_with_a_base64_utf8_body_then_it_passes_like_text() -> None:
    body = base64.b64encode('{"a": "café"}'.encode()).decode()

    assert call(v2_event("POST", "/healthz", headers=JSON, body=body, is_base64=True))["statusCode"] == 405


def test_given_v2_body_one_byte_over_the_limit_then_413() -> None:
    over = json.dumps({"x": "a" * (MAX_REQUEST_BYTES - 8)})

    answer = call(v2_event("POST", "/healthz", headers=JSON, body=over))

    assert (answer["statusCode"], envelope_code(answer)) == (413, "payload_too_large")


def test_given_v2_event_when_rewritten_then_the_rest_event_holds_the_same_request() -> None:
    event = v2_event(
        "post",
        "/v1/jobs",
        headers={"content-type": "application/json", "x-forwarded-for": "192.0.2.1, 198.51.100.2"},
        body="eyJ9",
        is_base64=True,
        raw_query="tag=a&tag=b%2Cc&empty=&q=a+b",
        cookies=["a=1", "b=2"],
    )

    rest = rest_event(event)

    assert (rest["httpMethod"], rest["path"], rest["requestContext"]["requestId"]) == (
        "POST",
        "/v1/jobs",
        "req-http-1",
    )
    assert rest["multiValueQueryStringParameters"] == {"tag": ["a", "b,c"], "empty": [""], "q": ["a b"]}
    assert rest["queryStringParameters"] == {"tag": "b,c", "empty": "", "q": "a b"}
    assert rest["headers"]["cookie"] == "a=1; b=2"
    assert rest["headers"]["x-forwarded-for"] == "192.0.2.1, 198.51.100.2"
    assert (rest["body"], rest["isBase64Encoded"]) == ("eyJ9", True)
    assert is_http_api_event(event) and not is_http_api_event(rest)


def test_given_v2_event_without_raw_query_then_the_parameters_are_kept_whole() -> None:
    event = v2_event("GET", "/v1/jobs")
    event["rawQueryString"] = ""
    event["queryStringParameters"] = {"cursor": "a,b"}

    assert rest_event(event)["multiValueQueryStringParameters"] == {"cursor": ["a,b"]}


def test_given_rest_answer_when_framed_for_http_api_then_values_join_and_set_cookie_goes_to_cookies() -> None:
    answer = http_api_response(
        {
            "statusCode": 429,
            "headers": {"X-Request-Id": "r"},
            "multiValueHeaders": {
                "Content-Type": ["application/json"],
                "Vary": ["Accept", "Origin"],
                "Set-Cookie": ["a=1", "b=2"],
            },
            "body": "{}",
            "isBase64Encoded": False,
        }
    )

    assert answer == {
        "statusCode": 429,
        "headers": {"X-Request-Id": "r", "Content-Type": "application/json", "Vary": "Accept, Origin"},
        "body": "{}",
        "isBase64Encoded": False,
        "cookies": ["a=1", "b=2"],
    }


@pytest.mark.parametrize("version", PAYLOAD_FORMATS)
def test_given_unrouted_request_without_key_in_either_format_then_the_same_404(version: str) -> None:
    with using_payload_format(version):
        answer = invoke(proxy_event("POST", "/v1/nothing-here", json_body={}))

    assert (answer.status, answer.error_code) == (404, "not_found")
