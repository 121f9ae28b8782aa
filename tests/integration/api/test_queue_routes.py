"""Named queues through the routes: create, replace by version, read with live figures, delete; bad input
stores nothing; a paused queue's due job starts nothing and spends no attempt, and a resume (or the heal after
a lost one) delivers it."""

from __future__ import annotations

from typing import Any

import pytest

from hookline.domain.models import JobStatus
from hookline.domain.queues import Queue
from tests.integration.api.conftest import TENANT, Api
from tests.support.apigw import ApiClient, ApiResponse
from tests.support.receiver import Receiver

pytestmark = pytest.mark.integration

HOOK = "http://127.0.0.1:9/hook"


def put(client: ApiClient, name: str, body: dict[str, Any]) -> ApiResponse:
    return client.request("PUT", f"/v1/queues/{name}", json_body=body)


def test_given_queue_routes_when_created_replaced_read_and_deleted_then_versions_and_figures_follow(
    api: Api,
) -> None:
    created = put(api.acme, "mail", {"rate_limit": {"limit": 5, "period_s": 1}, "max_concurrency": 2})
    assert created.status == 201, created.body
    assert created.json() | {"created_at": None, "updated_at": None} == {
        "name": "mail",
        "rate_limit": {"limit": 5, "period_s": 1.0},
        "max_concurrency": 2,
        "max_attempts": None,
        "min_backoff_s": None,
        "max_backoff_s": None,
        "timeout_s": None,
        "paused": False,
        "paused_since": None,
        "version": 1,
        "created_at": None,
        "updated_at": None,
        "figures": None,
    }

    replaced = put(api.acme, "mail", {"max_concurrency": 3, "version": 1})
    stale = put(api.acme, "mail", {"max_concurrency": 4, "version": 1})
    read = api.acme.get("/v1/queues/mail")

    assert (replaced.status, replaced.json()["version"], replaced.json()["rate_limit"]) == (200, 2, None)
    assert (stale.status, stale.error_code) == (409, "conflict")
    assert read.json()["max_concurrency"] == 3
    assert read.json()["figures"] == {"waiting": 0, "in_flight": 0, "in_rate_window": 0}
    assert [q["name"] for q in api.acme.get("/v1/queues").json()["queues"]] == ["mail"]
    assert api.globex.get("/v1/queues").json()["queues"] == []
    assert (api.globex.get("/v1/queues/mail").status, api.globex.get("/v1/queues/mail").error_code) == (
        404,
        "queue_not_found",
    )
    assert api.acme.delete("/v1/queues/mail").status == 200
    assert api.acme.get("/v1/queues/mail").error_code == "queue_not_found"


@pytest.mark.parametrize(
    ("name", "body", "want"),
    [
        pytest.param("mail", {"max_concurrency": 0}, (422, "validation_error"), id="zero_concurrency"),
        pytest.param(
            "mail", {"rate_limit": {"limit": 0, "period_s": 1}}, (422, "validation_error"), id="zero_rate"
        ),
        pytest.param(
            "mail", {"rate_limit": {"limit": 1, "period_s": 0}}, (422, "validation_error"), id="zero_period"
        ),
        pytest.param(
            "mail",
            {"min_backoff_s": 10, "max_backoff_s": 1},
            (422, "validation_error"),
            id="backoffs_crossed",
        ),
        pytest.param("mail", {"paused": True}, (422, "validation_error"), id="unknown_field"),
        pytest.param("a:b", {}, (422, "validation_error"), id="name_with_colon"),
        pytest.param("mail", {"version": 3}, (404, "queue_not_found"), id="version_of_no_queue"),
    ],
)
def test_given_bad_queue_input_when_put_then_4xx_with_code_and_nothing_stored(
    api: Api, name: str, body: dict[str, Any], want: tuple[int, str]
) -> None:
    answer = put(api.acme, name, body)

    assert (answer.status, answer.error_code) == want, answer.body
    assert api.acme.get("/v1/queues").json()["queues"] == []


def test_given_unknown_queue_when_submitting_job_or_schedule_then_404_and_nothing_stored(api: Api) -> None:
    job = api.acme.post("/v1/jobs", {"url": HOOK, "queue": "nope"})
    schedule = api.acme.post(
        "/v1/schedules", {"expression": "0 9 * * *", "job": {"url": HOOK, "queue": "nope"}}
    )

    assert (job.status, job.error_code) == (404, "queue_not_found")
    assert (schedule.status, schedule.error_code) == (404, "queue_not_found")
    assert api.acme.get("/v1/jobs").json()["jobs"] == []
    assert api.acme.get("/v1/schedules").json()["schedules"] == []


def test_given_queue_defaults_when_job_submitted_then_copied_unless_the_job_sets_them(api: Api) -> None:
    assert put(api.acme, "mail", {"max_attempts": 7, "timeout_s": 3}).status == 201

    defaulted = api.acme.post("/v1/jobs", {"url": HOOK, "queue": "mail", "delay_s": 60}).json()
    own = api.acme.post("/v1/jobs", {"url": HOOK, "queue": "mail", "delay_s": 60, "max_attempts": 2}).json()
    put(api.acme, "mail", {"max_attempts": 9})

    assert (defaulted["max_attempts"], defaulted["timeout_s"], defaulted["queue"]) == (7, 3.0, "mail")
    assert (own["max_attempts"], own["timeout_s"]) == (2, 3.0)
    assert api.acme.get(f"/v1/jobs/{defaulted['id']}").json()["max_attempts"] == 7


def _paused_job(api: Api, receiver: Receiver) -> str:
    """Creates and pauses queue mail, submits a job due now to it, and runs the executor over it."""
    assert put(api.acme, "mail", {}).status == 201
    assert api.acme.post("/v1/queues/mail/pause").json()["paused"] is True
    job = api.acme.post("/v1/jobs", {"url": receiver.url("/mail"), "queue": "mail"})
    assert job.status == 201, job.body
    api.deliver_ready()
    return str(job.json()["id"])


def test_given_paused_queue_when_due_job_runs_then_nothing_starts_no_attempt_and_resume_delivers(
    api: Api, receiver: Receiver
) -> None:
    job_id = _paused_job(api, receiver)

    held = api.container.jobs.get(TENANT, job_id)
    assert (held.status, held.attempt, receiver.requests) == (JobStatus.SCHEDULED, 0, [])
    assert api.acme.get("/v1/queues/mail").json()["figures"]["waiting"] == 1

    resumed = api.acme.post("/v1/queues/mail/resume")
    delivered = api.deliver_ready()

    assert resumed.json()["paused"] is False
    assert delivered == 1
    assert [r.path for r in receiver.requests] == ["/mail"]
    done = api.container.jobs.get(TENANT, job_id)
    assert (done.status, done.attempt) == (JobStatus.SUCCEEDED, 1)
    assert api.acme.get("/v1/queues/mail").json()["figures"]["waiting"] == 0


def test_given_resume_lost_before_redis_when_reaper_heals_then_parked_job_delivered(
    api: Api, receiver: Receiver
) -> None:
    job_id = _paused_job(api, receiver)
    paused = api.container.queue_store.get(TENANT, "mail")
    # The resume reached DynamoDB only (the process died before Redis heard of it).
    api.container.queue_store.put(
        Queue(TENANT, "mail", version=paused.version + 1, created_ms=paused.created_ms), paused.version
    )

    api.container.reaper.run(api.container.clock.now_ms() + 2_000)
    api.deliver_ready()

    assert [r.path for r in receiver.requests] == ["/mail"]
    assert api.container.jobs.get(TENANT, job_id).status is JobStatus.SUCCEEDED


def test_given_deleted_queue_when_its_parked_job_runs_then_released_and_delivered(
    api: Api, receiver: Receiver
) -> None:
    job_id = _paused_job(api, receiver)

    assert api.acme.delete("/v1/queues/mail").status == 200
    api.deliver_ready()

    assert api.container.jobs.get(TENANT, job_id).status is JobStatus.SUCCEEDED
