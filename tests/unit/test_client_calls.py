"""The client's pure parts: when to retry, Retry-After in both forms, errors from any answer."""

from __future__ import annotations

import email.utils
import time

import httpx
import pytest

from hookline_client import Forbidden, RetryPolicy, ServerError, calls
from hookline_client.calls import api_error, retry_after_s


def response(status: int, headers: dict[str, str] | None = None, body: bytes = b"{}") -> httpx.Response:
    return httpx.Response(status, headers=headers, content=body)


def test_given_retry_after_as_seconds_or_http_date_when_read_then_both_give_seconds() -> None:
    in_ten_s = email.utils.formatdate(time.time() + 10, usegmt=True)

    assert retry_after_s(response(429, {"Retry-After": "3"})) == 3.0
    assert 8 <= (retry_after_s(response(503, {"Retry-After": in_ten_s})) or 0) <= 10
    assert retry_after_s(response(503, {"Retry-After": "soon"})) is None
    assert retry_after_s(response(503)) is None


@pytest.mark.parametrize(
    ("status", "headers", "retries_done", "call", "expected"),
    [
        (429, {"Retry-After": "2"}, 0, calls.get_job("j"), 2.0),
        (503, {}, 1, calls.get_job("j"), 1.0),  # no Retry-After: 0.5 s doubled per retry
        (503, {}, 3, calls.get_job("j"), None),  # out of retries
        (429, {"Retry-After": "31"}, 0, calls.get_job("j"), None),  # longer than max_wait_s: not waited
        (503, {}, 0, calls.submit_job({"url": "https://x"}), None),  # could store a second job
        (503, {}, 0, calls.submit_job({"url": "https://x", "idempotency_key": "k"}), 0.5),
        (503, {}, 0, calls.create_schedule({"expression": "* * * * *", "job": {"url": "https://x"}}), None),
        (429, {"Retry-After": "1"}, 0, calls.create_schedule({"expression": "* * * * *", "job": {}}), 1.0),
        (500, {}, 0, calls.get_job("j"), None),
    ],
)
def test_given_an_answer_when_deciding_then_only_safe_429_and_503_are_retried_within_bounds(
    status: int, headers: dict[str, str], retries_done: int, call: calls.Call[object], expected: float | None
) -> None:
    assert RetryPolicy().wait_s(call, response(status, headers), retries_done) == expected


def test_given_answers_without_the_envelope_when_raising_then_the_class_follows_the_status() -> None:
    gateway = api_error(response(403, body=b'{"message": "Missing Authentication Token"}'))
    proxy = api_error(response(502, body=b"<html>Bad gateway</html>"))

    assert isinstance(gateway, Forbidden) and gateway.code == "http_error"
    assert gateway.message == "Missing Authentication Token"
    assert isinstance(proxy, ServerError) and "Bad gateway" in proxy.message and proxy.request_id is None
