"""Authentication, scopes, the request rate limit and every error answer, through the submit handler."""

from __future__ import annotations

import json

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.api.gate import MAX_BATCH_REQUEST_BYTES, MAX_REQUEST_BYTES
from hookline.domain.constants import MAX_BODY_BYTES
from hookline.domain.delivery import LimiterVerdict
from hookline.usecases.auth import KEY_CACHE_TTL_MS
from tests.fakes.clock import FrozenClock
from tests.integration.api.conftest import Api, make_key
from tests.support.apigw import ApiClient, invoke, proxy_event

# Every request goes once as a REST API event and once as an HTTP API event (payload format 2.0).
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("payload_format")]

HOOK = "http://127.0.0.1:9/hook"
UNAUTHORIZED = {"error": {"code": "unauthorized", "message": "missing or invalid API key", "details": []}}


def test_given_missing_malformed_unknown_or_revoked_key_then_the_same_401(api: Api) -> None:
    revoked = make_key(api.container)
    api.container.keys.revoke_key(revoked.split("_")[1], api.container.clock.now_ms())
    unknown = "hl_0123456789abcdef_" + "0" * 48
    wrong_secret = api.acme.api_key[:-4] + "0000"  # type: ignore[index]
    requests = [
        proxy_event("GET", "/v1/jobs"),
        proxy_event("GET", "/v1/jobs", headers={"Authorization": "Basic abc"}),
        proxy_event("GET", "/v1/jobs", api_key="hl_short"),
        proxy_event("GET", "/v1/jobs", api_key=unknown),
        proxy_event("GET", "/v1/jobs", api_key=wrong_secret),
        proxy_event("GET", "/v1/jobs", api_key=revoked),
    ]

    answers = [invoke(event) for event in requests]

    assert [(a.status, a.json()) for a in answers] == [(401, UNAUTHORIZED)] * len(requests)


def test_given_revoked_key_when_cached_then_accepted_at_most_until_the_cache_bound(api: Api) -> None:
    clock = FrozenClock(api.container.clock.now_ms())
    api.container.clock = clock
    api.container.__dict__.pop("authenticator", None)
    key = make_key(api.container)
    client = ApiClient(key)
    assert client.get("/v1/jobs").status == 200

    api.container.keys.revoke_key(key.split("_")[1], clock.now_ms())
    clock.advance(KEY_CACHE_TTL_MS - 1)
    still_cached = client.get("/v1/jobs").status
    clock.advance(1)
    after_bound = client.get("/v1/jobs").status

    assert (still_cached, after_bound) == (200, 401)


def test_given_invalid_body_without_key_when_posting_then_401_not_422(api: Api) -> None:
    response = ApiClient().post("/v1/jobs", {"url": 5})

    assert response.json() == UNAUTHORIZED


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/v1/jobs", {"url": HOOK}),
        ("POST", "/v1/jobs/batch", {"jobs": [{"url": HOOK}]}),
        ("DELETE", "/v1/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV", None),
        ("POST", "/v1/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV/replay", None),
        ("POST", "/v1/dead-letters/replay", {"all": True}),
    ],
)
def test_given_read_only_key_when_writing_then_403_and_nothing_changes(
    api: Api, method: str, path: str, body: object
) -> None:
    reader = ApiClient(make_key(api.container, scopes=("jobs:read",)))

    response = reader.request(method, path, json_body=body)

    assert (response.status, response.error_code) == (403, "forbidden")
    assert api.acme.get("/v1/jobs").json()["jobs"] == []


@pytest.mark.parametrize("path", ["/v1/jobs", "/v1/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV", "/v1/dead-letters"])
def test_given_write_only_key_when_reading_then_403(api: Api, path: str) -> None:
    writer = ApiClient(make_key(api.container, scopes=("jobs:write",)))

    response = writer.get(path)

    assert (response.status, response.error_code) == (403, "forbidden")


def test_given_key_rate_when_exceeded_then_429_with_retry_after_until_the_window_passes(api: Api) -> None:
    clock = FrozenClock(1_800_000_000_000)
    api.container.clock = clock
    api.container.__dict__.pop("authenticator", None)
    client = ApiClient(make_key(api.container, rate_limit_per_s=2))

    statuses = [client.get("/v1/jobs").status for _ in range(2)]
    clock.advance(300)
    refused = client.get("/v1/jobs")
    clock.advance(699)
    still_refused = client.get("/v1/jobs")
    clock.advance(1)
    admitted = client.get("/v1/jobs")

    assert statuses == [200, 200]
    assert (refused.status, refused.error_code, refused.headers["retry-after"]) == (429, "rate_limited", "1")
    assert (still_refused.status, still_refused.headers["retry-after"]) == (429, "1")
    assert admitted.status == 200


def test_given_two_keys_when_one_is_limited_then_the_other_is_not(api: Api) -> None:
    limited = ApiClient(make_key(api.container, rate_limit_per_s=1))
    limited.get("/v1/jobs")

    assert limited.get("/v1/jobs").status == 429
    assert api.acme.get("/v1/jobs").status == 200
    assert api.container.redis.exists(redis_keys.api_rate_key(api.acme.api_key.split("_")[1]))  # type: ignore[union-attr]


class RefusingLimiter:
    """An API rate limiter that refuses every request until retry_at_ms."""

    def __init__(self, retry_at_ms: int) -> None:
        self.retry_at_ms = retry_at_ms
        self.asked: list[str] = []

    def admit_api_call(
        self, key_id: str, now_ms: int, limit: int, period_ms: int, token: str
    ) -> LimiterVerdict:
        self.asked.append(key_id)
        return LimiterVerdict(False, self.retry_at_ms)


def test_given_the_containers_api_rate_limiter_refuses_then_the_api_answers_429(api: Api) -> None:
    limiter = RefusingLimiter(api.container.clock.now_ms() + 2_500)
    api.container.api_rate_limiter = limiter  # type: ignore[assignment]

    refused = api.acme.get("/v1/jobs")

    assert (refused.status, refused.error_code, refused.headers["retry-after"]) == (429, "rate_limited", "3")
    assert limiter.asked == [api.acme.api_key.split("_")[1]]  # type: ignore[union-attr]


def test_given_default_rate_when_key_sets_none_then_settings_apply(api: Api) -> None:
    from dataclasses import replace

    api.container.settings = replace(api.container.settings, api_rate_limit_per_s=1)

    assert [api.acme.get("/v1/jobs").status for _ in range(2)] == [200, 429]


@pytest.mark.parametrize(
    ("path", "limit"), [("/v1/jobs", MAX_REQUEST_BYTES), ("/v1/jobs/batch", MAX_BATCH_REQUEST_BYTES)]
)
def test_given_body_over_the_limit_when_posting_then_413(api: Api, path: str, limit: int) -> None:
    body = json.dumps({"url": HOOK, "body": "x" * limit})

    response = api.acme.request("POST", path, body=body, headers={"Content-Type": "application/json"})

    assert (response.status, response.error_code) == (413, "payload_too_large")


def test_given_payload_of_256_kib_when_submitted_then_accepted_and_one_byte_more_is_422(api: Api) -> None:
    accepted = api.acme.post("/v1/jobs", {"url": HOOK, "body": "x" * MAX_BODY_BYTES})
    refused = api.acme.post("/v1/jobs", {"url": HOOK, "body": "x" * (MAX_BODY_BYTES + 1)})

    assert accepted.status == 201
    assert (refused.status, refused.json()["error"]["details"][0]["field"]) == (422, "body")


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_given_non_json_body_when_posting_then_415(api: Api, content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}

    response = api.acme.request("POST", "/v1/jobs", body=json.dumps({"url": HOOK}), headers=headers)

    assert (response.status, response.error_code) == (415, "unsupported_media_type")


def test_given_json_with_charset_when_posting_then_accepted(api: Api) -> None:
    headers = {"Content-Type": "application/json; charset=utf-8"}

    response = api.acme.request("POST", "/v1/jobs", body=json.dumps({"url": HOOK}), headers=headers)

    assert response.status == 201


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"url": 1}', "url"),
        ('{"url": "http://127.0.0.1:9/", "max_attempts": 0}', "max_attempts"),
        (
            '{"url": "http://127.0.0.1:9/", "rate_limit": {"key": "k", "limit": 0, "period_s": 1}}',
            "rate_limit.limit",
        ),
        ('{"url": "http://127.0.0.1:9/", "unknown": 1}', "unknown"),
        ("{not json", ""),
        ("[]", ""),
    ],
)
def test_given_invalid_job_when_posting_then_422_with_field_path(api: Api, body: str, field: str) -> None:
    response = api.acme.request("POST", "/v1/jobs", body=body, headers={"Content-Type": "application/json"})

    assert (response.status, response.error_code) == (422, "validation_error")
    assert response.json()["error"]["details"][0]["field"] == field


def test_given_unknown_route_or_method_then_enveloped_404_and_405(api: Api) -> None:
    missing = api.acme.get("/v1/nothing-here")
    wrong_method = api.acme.request("PUT", "/v1/jobs")

    assert (missing.status, missing.error_code) == (404, "not_found")
    assert (wrong_method.status, wrong_method.error_code) == (405, "method_not_allowed")
    assert wrong_method.headers["allow"] == "GET, POST"


def test_given_request_id_when_answering_then_it_is_echoed_on_success_and_error(api: Api) -> None:
    ok = invoke(proxy_event("GET", "/v1/jobs", api_key=api.acme.api_key, request_id="req-1"))
    refused = invoke(proxy_event("GET", "/v1/jobs", request_id="req-2"))

    assert (ok.status, ok.headers["x-request-id"]) == (200, "req-1")
    assert (refused.status, refused.headers["x-request-id"]) == (401, "req-2")


@pytest.mark.parametrize(
    "body",
    [
        '{"url": "http://127.0.0.1:9/", "headers": {"a": "\\udc00"}}',
        '{"url": "http://127.0.0.1:9/", "body": {"\\ud800": 1}}',
        '{"url": "http://127.0.0.1:9/", "body": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"url": "http://127.0.0.1:9/", "body": ' + "[" * 900 + "]" * 900 + "}",
    ],
    ids=["surrogate-header", "surrogate-key", "nested-100000", "nested-900"],
)
def test_given_json_no_store_can_hold_when_posting_then_4xx_never_500(api: Api, body: str) -> None:
    for path in ("/v1/jobs", "/v1/jobs/batch"):
        response = api.acme.request("POST", path, body=body, headers={"Content-Type": "application/json"})

        assert 400 <= response.status < 500, response.body
        assert response.error_code == "validation_error"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/jobs"),
        ("POST", "/v1/jobs/batch"),
        ("GET", "/v1/jobs"),
        ("GET", "/v1/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV"),
        ("DELETE", "/v1/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV"),
        ("GET", "/v1/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV/executions"),
        ("POST", "/v1/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV/replay"),
        ("GET", "/v1/dead-letters"),
        ("POST", "/v1/dead-letters/replay"),
    ],
)
def test_given_any_keyed_route_when_called_without_key_then_401(api: Api, method: str, path: str) -> None:
    response = ApiClient().request(method, path, json_body={} if method == "POST" else None)

    assert (response.status, response.json()) == (401, UNAUTHORIZED)
