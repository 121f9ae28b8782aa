"""Checks made before routing that need no dependency: body size, media type, odd JSON, request ids.

They run on public paths too, so these requests reach no key store, Redis or DynamoDB.
"""

from __future__ import annotations

import json

import pytest

from hookline.api.gate import MAX_JSON_DEPTH, MAX_REQUEST_BYTES
from tests.support.apigw import invoke, proxy_event

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
