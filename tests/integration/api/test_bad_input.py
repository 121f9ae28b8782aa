"""Bad input gets a 4xx and stores nothing: times, encodings, media types, headers, scopes, booleans."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayRestResolver

from hookline.api import gate
from hookline.api.gate import principal
from hookline.domain.constants import MAX_BODY_BYTES, MAX_HEADER_VALUE_BYTES, MAX_HEADERS_BYTES
from hookline.domain.models import JobRequest, JobStatus
from tests.integration.api.conftest import TENANT, Api, make_key
from tests.support.apigw import ApiClient, ApiResponse, LambdaContext, invoke, proxy_event
from tests.support.receiver import Receiver

pytestmark = pytest.mark.integration

HOOK = "http://127.0.0.1:9/hook"
SCHEDULE = {"expression": "0 9 * * *", "job": {"url": HOOK}}
JSON = {"Content-Type": "application/json"}
OUT_OF_RANGE = [
    "0001-01-01T00:00:00+23:59",
    "9999-12-31T23:59:59-23:59",
    "9999-12-31T23:59:59Z",
    "1969-12-31T23:59:59.999Z",
    "2100-01-01T00:00:00Z",
]


def detail(response: ApiResponse) -> dict[str, Any]:
    """Returns the first per-field detail of a 422."""
    assert (response.status, response.error_code) == (422, "validation_error"), response.body
    first: dict[str, Any] = response.json()["error"]["details"][0]
    return first


def stored_jobs(api: Api) -> list[dict[str, Any]]:
    listed = api.acme.get("/v1/jobs")
    assert listed.status == 200, listed.body
    jobs: list[dict[str, Any]] = listed.json()["jobs"]
    return jobs


def stored_schedules(api: Api) -> list[dict[str, Any]]:
    listed = api.acme.get("/v1/schedules")
    assert listed.status == 200, listed.body
    # As created: a listed schedule also carries its next occurrence, which a create does not answer.
    schedules: list[dict[str, Any]] = [{**s, "next_fire_times": None} for s in listed.json()["schedules"]]
    return schedules


def patch(client: ApiClient, path: str, body: Any) -> ApiResponse:
    return client.request("PATCH", path, json_body=body)


# Times.


@pytest.mark.parametrize("run_at", OUT_OF_RANGE)
def test_given_run_at_outside_the_window_when_submitting_then_422_time_out_of_range_and_nothing_stored(
    api: Api, run_at: str
) -> None:
    alone = api.acme.post("/v1/jobs", {"url": HOOK, "run_at": run_at})
    batch = api.acme.post("/v1/jobs/batch", {"jobs": [{"url": HOOK, "run_at": run_at}]})

    assert {k: detail(alone)[k] for k in ("field", "type")} == {
        "field": "run_at",
        "type": "time_out_of_range",
    }
    item = batch.json()["results"][0]
    assert (batch.status, item["status"], item["error"]["details"][0]["type"]) == (
        200,
        422,
        "time_out_of_range",
    )
    assert stored_jobs(api) == []


def test_given_run_at_at_either_end_of_the_window_when_submitting_then_stored_and_listed(api: Api) -> None:
    first = api.acme.post("/v1/jobs", {"url": HOOK, "run_at": "1970-01-01T00:00:00Z"})
    last = api.acme.post("/v1/jobs", {"url": HOOK, "run_at": "2100-01-01T23:58:59.999+23:59"})

    assert (first.status, last.status) == (201, 201), last.body
    assert sorted(job["run_at"] for job in stored_jobs(api)) == [
        "1970-01-01T00:00:00.000Z",
        "2099-12-31T23:59:59.999Z",
    ]


@pytest.mark.parametrize("when", OUT_OF_RANGE)
@pytest.mark.parametrize("bound", ["start_at", "end_at"])
def test_given_schedule_bound_outside_the_window_when_created_or_patched_then_422_and_nothing_stored(
    api: Api, bound: str, when: str
) -> None:
    created = api.acme.post("/v1/schedules", {**SCHEDULE, bound: when})
    existing = api.acme.post("/v1/schedules", SCHEDULE).json()
    patched = patch(api.acme, f"/v1/schedules/{existing['id']}", {bound: when})

    assert (detail(created)["field"], detail(created)["type"]) == (bound, "time_out_of_range")
    assert (detail(patched)["field"], detail(patched)["type"]) == (bound, "time_out_of_range")
    assert stored_schedules(api) == [existing]


def test_given_job_stored_before_the_window_existed_when_listing_then_200_without_its_time(api: Api) -> None:
    # Items written before the bound (year 0 in UTC) must not turn every list of the tenant into a 500.
    now_ms = api.container.clock.now_ms()
    job = api.container.submitter.build(TENANT, JobRequest(url=HOOK), now_ms)
    api.container.jobs.create(job.with_changes(due_ms=-62_135_683_140_000), "hash", now_ms)

    assert [(j["id"], j["run_at"]) for j in stored_jobs(api)] == [(job.job_id, None)]


# Encodings and media types.


@pytest.mark.usefixtures("payload_format")
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/jobs"),
        ("POST", "/v1/jobs/batch"),
        ("POST", "/v1/dead-letters/replay"),
        ("POST", "/v1/schedules"),
        ("PATCH", "/v1/schedules/01ARZ3NDEKTSV4RRFFQ69G5FAV"),
    ],
)
def test_given_body_that_is_not_utf8_when_sent_then_400_invalid_encoding(
    api: Api, method: str, path: str
) -> None:
    event = proxy_event(method, path, headers=JSON, api_key=api.acme.api_key)
    # API Gateway hands every body over base64-encoded: template.yaml declares the binary media type */*.
    event["body"] = base64.b64encode(b'{"url": "http://127.0.0.1:9/\xff\xfe"}').decode()
    event["isBase64Encoded"] = True

    response = invoke(event)

    assert (response.status, response.error_code) == (400, "invalid_encoding"), response.body
    assert stored_jobs(api) == []


@pytest.mark.usefixtures("payload_format")
def test_given_utf8_body_sent_base64_encoded_when_submitting_then_stored_as_sent(api: Api) -> None:
    event = proxy_event("POST", "/v1/jobs", headers=JSON, api_key=api.acme.api_key)
    event["body"] = base64.b64encode(json.dumps({"url": HOOK, "body": "café"}).encode()).decode()
    event["isBase64Encoded"] = True

    response = invoke(event)

    assert (response.status, response.json()["body"]) == (201, "café")


@pytest.mark.usefixtures("payload_format")
@pytest.mark.parametrize(
    "content_type",
    [
        "APPLICATION/JSON",
        "Application/Json; Charset=UTF-8",
        " application/json ",
        "application/vnd.api+json",
        "application/merge-patch+json; charset=utf-8",
    ],
)
def test_given_json_media_type_in_any_case_or_with_a_json_suffix_when_submitting_then_201(
    api: Api, content_type: str
) -> None:
    headers = {"Content-Type": content_type}

    response = api.acme.request("POST", "/v1/jobs", body=json.dumps({"url": HOOK}), headers=headers)

    assert response.status == 201, response.body


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "APPLICATION/XML", "multipart/mixed; boundary=x", "application/x-www-form-urlencoded"],
)
def test_given_media_type_without_a_body_when_posting_then_it_is_ignored_never_500(
    api: Api, content_type: str
) -> None:
    # No body, nothing to parse: a route that needs one says so (422), one that takes none runs (curl -d '').
    headers = {"Content-Type": content_type}

    submitted = api.acme.request("POST", "/v1/jobs", headers=headers)
    replayed = api.acme.request("POST", "/v1/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV/replay", headers=headers)

    assert (submitted.status, submitted.error_code) == (422, "validation_error"), submitted.body
    assert (replayed.status, replayed.error_code) == (404, "not_found"), replayed.body


# Headers.


def test_given_header_value_over_the_limit_when_submitting_then_422_and_at_the_limit_201(api: Api) -> None:
    at_limit = api.acme.post("/v1/jobs", {"url": HOOK, "headers": {"X-A": "a" * MAX_HEADER_VALUE_BYTES}})
    over = api.acme.post(
        "/v1/jobs", {"url": HOOK, "headers": {"X-A": "é" * (MAX_HEADER_VALUE_BYTES // 2 + 1)}}
    )

    assert at_limit.status == 201
    assert (detail(over)["field"], detail(over)["type"]) == ("headers", "header_too_large")
    assert len(stored_jobs(api)) == 1


def test_given_headers_over_the_total_limit_when_submitting_then_422_and_nothing_stored(api: Api) -> None:
    value = "a" * (MAX_HEADER_VALUE_BYTES - 8)
    headers = {f"X-{n}": value for n in range(MAX_HEADERS_BYTES // len(value) + 1)}

    response = api.acme.post("/v1/jobs", {"url": HOOK, "headers": headers})

    assert (detail(response)["field"], detail(response)["type"]) == ("headers", "headers_too_large")
    assert stored_jobs(api) == []


def test_given_350_kb_header_and_a_large_body_when_submitting_then_422_never_500(api: Api) -> None:
    # It used to be stored and re-sent on every attempt; with a large body the item passed DynamoDB's limit.
    for body in ("", "b" * 200_000):
        response = api.acme.post("/v1/jobs", {"url": HOOK, "headers": {"X-Big": "a" * 350_000}, "body": body})

        assert detail(response)["field"] == "headers"
    assert stored_jobs(api) == []


def largest_job() -> dict[str, Any]:
    """Returns a job at every size limit at once: body, headers (count and bytes), url and keys."""
    names = [f"X-{n:02d}" for n in range(50)]
    per_header = MAX_HEADERS_BYTES // len(names)
    headers = {name: "v" * (per_header - len(name)) for name in names}
    assert sum(len(n) + len(v) for n, v in headers.items()) <= MAX_HEADERS_BYTES
    url = HOOK + "?" + "é" * (2048 - len(HOOK) - 1)
    return {
        "url": url,
        "headers": headers,
        "body": "😀" * (MAX_BODY_BYTES // 4),
        "idempotency_key": "k" * 128,
        "rate_limit": {"key": "r" * 128, "limit": 1, "period_s": 1},
        "max_concurrency": {"key": "c" * 128, "limit": 1},
    }


def test_given_job_at_every_size_limit_when_submitted_or_scheduled_then_the_items_fit_in_dynamodb(
    api: Api,
) -> None:
    # moto refuses items over DynamoDB's 400 KB, as DynamoDB does.
    job = largest_job()
    template = {k: v for k, v in job.items() if k != "idempotency_key"}

    submitted = api.acme.post("/v1/jobs", job)
    scheduled = api.acme.post("/v1/schedules", {**SCHEDULE, "job": template})

    assert (submitted.status, scheduled.status) == (201, 201), scheduled.body[:300]


@pytest.mark.parametrize("body", ["x" * (MAX_BODY_BYTES + 1), {"text": "é" * (MAX_BODY_BYTES // 2)}])
def test_given_a_body_over_the_limit_when_submitted_then_422_names_the_body_field_and_nothing_stored(
    api: Api, body: Any
) -> None:
    refused = api.acme.post("/v1/jobs", {"url": HOOK, "body": body})

    assert (detail(refused)["field"], f"exceeds {MAX_BODY_BYTES} bytes" in detail(refused)["message"]) == (
        "body",
        True,
    )
    assert stored_jobs(api) == []


def test_given_template_whose_stored_form_is_too_large_when_scheduling_then_422_never_500(api: Api) -> None:
    # Every quote in a string body is escaped when the template is stored as JSON text: twice the bytes.
    template = {"url": HOOK, "body": '"' * MAX_BODY_BYTES}

    response = api.acme.post("/v1/schedules", {**SCHEDULE, "job": template})

    assert (detail(response)["field"], detail(response)["type"]) == ("job", "template_too_large")
    assert stored_schedules(api) == []


@pytest.mark.parametrize(
    ("headers", "kind"),
    [
        ({"X-A": "a\x00b"}, "header_value"),
        ({"X-A": "a\rb"}, "header_value"),
        ({"X-A": "a\nb"}, "header_value"),
        ({"X-A": "a\x0bb"}, "header_value"),
        ({"X-A": "a\x01b"}, "header_value"),
        ({"X-A": "a\x7fb"}, "header_value"),
        ({"X-A": " padded"}, "header_value"),
        ({"X-A": "padded\t"}, "header_value"),
        ({"X(A)": "x"}, "header_name"),
        ({"X A": "x"}, "header_name"),
        ({"X-Ä": "x"}, "header_name"),
        ({"": "x"}, "header_name"),
        ({"Proxy-Authorization": "Basic eA=="}, "header_reserved"),
        ({"proxy-connection": "close"}, "header_reserved"),
    ],
)
def test_given_header_http_cannot_carry_when_submitting_or_scheduling_then_422_and_nothing_stored(
    api: Api, headers: dict[str, str], kind: str
) -> None:
    submitted = api.acme.post("/v1/jobs", {"url": HOOK, "headers": headers})
    scheduled = api.acme.post("/v1/schedules", {**SCHEDULE, "job": {"url": HOOK, "headers": headers}})

    assert (detail(submitted)["field"], detail(submitted)["type"]) == ("headers", kind)
    assert (detail(scheduled)["field"], detail(scheduled)["type"]) == ("job.headers", kind)
    assert (stored_jobs(api), stored_schedules(api)) == ([], [])


def test_given_headers_the_checks_accept_when_delivered_then_sent_as_given(
    api: Api, receiver: Receiver
) -> None:
    # The converse: whatever the submit checks let through goes out on the wire and is not dead-lettered.
    headers = {"!#$%&'*+-.^_`|~09Az": "token", "X-Spaced": "a b\tc", "X-Utf8": "café", "X-Empty": ""}
    api.container.executor  # noqa: B018 - building it creates the consumer groups
    created = api.acme.post("/v1/jobs", {"url": receiver.url("/headers"), "headers": headers})
    assert created.status == 201

    api.deliver_ready()

    assert api.container.jobs.get(TENANT, created.json()["id"]).status is JobStatus.SUCCEEDED
    seen = receiver.requests[0].headers
    assert {name: seen[name.lower()].encode("latin-1").decode() for name in headers} == headers


# Scope first, then the body.


@pytest.mark.parametrize(
    ("scope", "method", "path", "body"),
    [
        ("jobs:read", "POST", "/v1/jobs", '{"url": 5}'),
        ("jobs:read", "POST", "/v1/jobs", "{not json"),
        ("jobs:read", "POST", "/v1/jobs/batch", '{"jobs": "x"}'),
        ("jobs:read", "POST", "/v1/dead-letters/replay", '{"all": "x"}'),
        ("jobs:read", "DELETE", "/v1/jobs/" + "x" * 65, None),
        ("schedules:read", "POST", "/v1/schedules", '{"expression": 1}'),
        ("schedules:read", "PATCH", "/v1/schedules/01ARZ3NDEKTSV4RRFFQ69G5FAV", '{"paused": "x"}'),
        ("jobs:write", "GET", "/v1/jobs", None),
    ],
)
def test_given_key_without_the_scope_when_sending_an_invalid_request_then_403_not_422(
    api: Api, scope: str, method: str, path: str, body: str | None
) -> None:
    client = ApiClient(make_key(api.container, scopes=(scope,)))
    query = {"limit": "0"} if method == "GET" else None

    response = client.request(method, path, body=body, headers=JSON, query=query)

    assert (response.status, response.error_code) == (403, "forbidden"), response.body


def test_given_key_without_the_scope_when_the_body_is_not_json_then_403_before_415(api: Api) -> None:
    reader = ApiClient(make_key(api.container, scopes=("jobs:read",)))

    response = reader.request("POST", "/v1/jobs", body="url=x", headers={"Content-Type": "text/plain"})

    assert (response.status, response.error_code) == (403, "forbidden")


def test_given_key_with_the_scope_when_the_route_does_not_exist_then_404_and_405_as_before(api: Api) -> None:
    reader = ApiClient(make_key(api.container, scopes=("jobs:read",)))

    assert reader.get("/v1/nothing").status == 404
    assert reader.request("PUT", "/v1/jobs", json_body={}).status == 405


def test_given_keyed_route_that_declares_no_scope_when_called_then_403_and_it_does_not_run(api: Api) -> None:
    app = APIGatewayRestResolver(enable_validation=True)
    calls: list[str] = []

    @app.post("/v1/undeclared")
    def undeclared() -> dict[str, str]:
        calls.append(principal().tenant)
        return {}

    answer = gate.handle(
        app, proxy_event("POST", "/v1/undeclared", api_key=api.acme.api_key), LambdaContext()
    )

    assert (answer["statusCode"], json.loads(answer["body"])["error"]["code"]) == (403, "forbidden")
    assert calls == []


# Answers and booleans.


@pytest.mark.parametrize(("method", "path"), [("DELETE", "/v1/jobs/\n"), ("PATCH", "/v1/schedules/\n")])
def test_given_id_that_is_a_newline_when_routed_then_404_as_the_operation_documents(
    api: Api, method: str, path: str
) -> None:
    # Found by the fuzzer: the path matched /v1/jobs (or /v1/schedules) up to its newline, hence a 405.
    response = api.acme.request(method, path, json_body={})

    assert (response.status, response.error_code) == (404, "not_found")


def test_given_schedule_when_deleted_then_204_with_no_body_and_no_content_type(api: Api) -> None:
    created = api.acme.post("/v1/schedules", SCHEDULE).json()

    response = api.acme.delete(f"/v1/schedules/{created['id']}")

    assert (response.status, response.body) == (204, "")
    assert "content-type" not in response.headers
    assert stored_schedules(api) == []


@pytest.mark.parametrize(
    "selection",
    [
        {"all": 1},
        {"all": "true"},
        {"all": "yes"},
        {"all": 1.0},
        {"ids": ["01ARZ3NDEKTSV4RRFFQ69G5FAV"], "all": 0},
    ],
)
def test_given_all_that_is_not_a_json_boolean_when_replaying_then_422_and_nothing_replayed(
    api: Api, receiver: Receiver, selection: dict[str, Any]
) -> None:
    dead = api.dead_job(receiver)

    response = api.acme.post("/v1/dead-letters/replay", selection)

    assert detail(response)["field"] == "all"
    assert api.container.jobs.get(TENANT, dead.job_id).status is JobStatus.DEAD


@pytest.mark.parametrize("paused", [1, 0, "true", "false"])
def test_given_paused_that_is_not_a_json_boolean_when_scheduling_then_422(api: Api, paused: object) -> None:
    created = api.acme.post("/v1/schedules", {**SCHEDULE, "paused": paused})
    existing = api.acme.post("/v1/schedules", SCHEDULE).json()
    patched = patch(api.acme, f"/v1/schedules/{existing['id']}", {"paused": paused})

    assert (detail(created)["field"], detail(patched)["field"]) == ("paused", "paused")
    assert stored_schedules(api) == [existing]
