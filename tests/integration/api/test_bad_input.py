"""Bad input gets a 4xx and stores nothing: times, headers, booleans."""

from __future__ import annotations

from typing import Any

import pytest

from hookline.constants import MAX_BODY_BYTES, MAX_HEADER_VALUE_BYTES, MAX_HEADERS_BYTES
from hookline.models import JobRequest, JobStatus
from tests.integration.api.conftest import TENANT, Api
from tests.support.apigw import ApiClient, ApiResponse
from tests.support.receiver import Receiver

pytestmark = pytest.mark.integration

HOOK = "http://127.0.0.1:9/hook"
SCHEDULE = {"expression": "0 9 * * *", "job": {"url": HOOK}}
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
    schedules: list[dict[str, Any]] = listed.json()["schedules"]
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


# Answers and booleans.


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
