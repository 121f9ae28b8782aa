"""Job routes through the submit handler: submit, batch, get, cancel, executions, replay; tenant isolation."""

from __future__ import annotations

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.domain.models import JobStatus
from tests.integration.api.conftest import OTHER_TENANT, TENANT, Api
from tests.support.receiver import Receiver

pytestmark = pytest.mark.integration

HOOK = "http://127.0.0.1:9/hook"  # loopback: the tests allow it, and it needs no DNS


def test_given_job_when_submitted_then_201_stored_and_indexed(api: Api) -> None:
    response = api.acme.post("/v1/jobs", {"url": HOOK, "delay_s": 60, "body": {"a": 1}})

    assert response.status == 201
    view = response.json()
    stored = api.container.jobs.get(TENANT, view["id"])
    assert (view["status"], stored.status, stored.body) == ("scheduled", JobStatus.SCHEDULED, '{"a":1}')
    assert api.due_members() == [stored.member().encode()]


def test_given_same_idempotency_key_when_resubmitted_then_200_same_job_and_409_if_different(api: Api) -> None:
    first = api.acme.post("/v1/jobs", {"url": HOOK, "idempotency_key": "k1"})
    again = api.acme.post("/v1/jobs", {"url": HOOK, "idempotency_key": "k1"})
    different = api.acme.post("/v1/jobs", {"url": HOOK + "/x", "idempotency_key": "k1"})

    assert (first.status, again.status) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert (different.status, different.error_code) == (409, "idempotency_key_reused")


def test_given_two_tenants_when_using_the_same_idempotency_key_then_each_gets_its_own_job(api: Api) -> None:
    mine = api.acme.post("/v1/jobs", {"url": HOOK, "idempotency_key": "same"})
    theirs = api.globex.post("/v1/jobs", {"url": HOOK + "/other", "idempotency_key": "same"})

    assert (mine.status, theirs.status) == (201, 201)
    assert mine.json()["id"] != theirs.json()["id"]
    assert api.container.jobs.get(OTHER_TENANT, theirs.json()["id"]).url == HOOK + "/other"


def test_given_job_when_fetched_by_owner_and_other_tenant_then_200_and_404(api: Api) -> None:
    job = api.submit()

    mine = api.acme.get(f"/v1/jobs/{job.job_id}")
    theirs = api.globex.get(f"/v1/jobs/{job.job_id}")
    unknown = api.acme.get("/v1/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV")

    assert (mine.status, mine.json()["id"], mine.json()["url"]) == (200, job.job_id, HOOK)
    assert (theirs.status, theirs.error_code) == (404, "not_found")
    assert (unknown.status, unknown.error_code) == (404, "not_found")
    # No existence oracle: a foreign id reads exactly like an unknown one, message aside.
    assert theirs.json()["error"]["details"] == unknown.json()["error"]["details"] == []


def test_given_batch_when_submitted_then_each_item_has_its_own_result(api: Api) -> None:
    api.submit(idempotency_key="taken")
    items = [
        {"url": HOOK},
        {"url": "ftp://127.0.0.1/x"},
        {"url": HOOK + "/other", "idempotency_key": "taken"},
        {"url": HOOK, "delay_s": 5},
    ]

    response = api.acme.post("/v1/jobs/batch", {"jobs": items})

    assert response.status == 200
    results = response.json()["results"]
    assert [(r["index"], r["status"]) for r in results] == [(0, 201), (1, 422), (2, 409), (3, 201)]
    assert results[1]["error"]["details"][0]["field"] == "url"
    assert results[2]["error"]["code"] == "idempotency_key_reused"
    for result in (results[0], results[3]):
        assert api.container.jobs.get(TENANT, result["job"]["id"]).status is JobStatus.SCHEDULED


@pytest.mark.parametrize("count", [0, 101])
def test_given_batch_of_wrong_size_when_submitted_then_422_and_nothing_stored(api: Api, count: int) -> None:
    response = api.acme.post("/v1/jobs/batch", {"jobs": [{"url": HOOK}] * count})

    assert (response.status, response.error_code) == (422, "validation_error")
    assert response.json()["error"]["details"][0]["field"] == "jobs"
    assert api.acme.get("/v1/jobs").json()["jobs"] == []


def test_given_scheduled_job_when_cancelled_then_200_cancelled_and_unindexed(api: Api) -> None:
    job = api.submit(delay_s=60)
    assert api.due_members() == [job.member().encode()]

    response = api.acme.delete(f"/v1/jobs/{job.job_id}")

    assert (response.status, response.json()["status"]) == (200, "cancelled")
    assert api.container.jobs.get(TENANT, job.job_id).status is JobStatus.CANCELLED
    assert api.due_members() == []


def test_given_cancelled_or_foreign_job_when_cancelled_then_409_or_404(api: Api) -> None:
    job = api.submit(delay_s=60)
    foreign = api.submit(delay_s=60, tenant=OTHER_TENANT)
    api.acme.delete(f"/v1/jobs/{job.job_id}")

    again = api.acme.delete(f"/v1/jobs/{job.job_id}")
    theirs = api.acme.delete(f"/v1/jobs/{foreign.job_id}")

    assert (again.status, again.error_code) == (409, "conflict")
    assert (theirs.status, theirs.error_code) == (404, "not_found")
    assert api.container.jobs.get(OTHER_TENANT, foreign.job_id).status is JobStatus.SCHEDULED


def test_given_running_job_when_cancelled_then_409_and_still_running(api: Api) -> None:
    job = api.submit()
    api.container.jobs.claim(job.member(), api.container.clock.now_ms())

    response = api.acme.delete(f"/v1/jobs/{job.job_id}")

    assert (response.status, response.error_code) == (409, "conflict")
    assert "running" in response.json()["error"]["message"]
    assert api.container.jobs.get(TENANT, job.job_id).status is JobStatus.RUNNING


def test_given_dead_job_when_executions_listed_then_every_attempt_and_404_for_other_tenant(
    api: Api, receiver: Receiver
) -> None:
    job = api.dead_job(receiver)

    mine = api.acme.get(f"/v1/jobs/{job.job_id}/executions")
    theirs = api.globex.get(f"/v1/jobs/{job.job_id}/executions")

    assert mine.status == 200
    assert [(e["attempt"], e["outcome"], e["status_code"]) for e in mine.json()["executions"]] == [
        (1, "permanent", 404)
    ]
    assert (theirs.status, theirs.error_code) == (404, "not_found")


def test_given_dead_job_when_replayed_then_scheduled_new_generation_attempts_reset_and_delivered(
    api: Api, receiver: Receiver
) -> None:
    dead = api.dead_job(receiver)

    response = api.acme.post(f"/v1/jobs/{dead.job_id}/replay")

    assert (response.status, response.json()["status"], response.json()["attempt"]) == (200, "scheduled", 0)
    replayed = api.container.jobs.get(TENANT, dead.job_id)
    assert (replayed.status, replayed.generation, replayed.run_attempt) == (
        JobStatus.SCHEDULED,
        dead.generation + 1,
        0,
    )
    assert (replayed.last_error, replayed.last_status_code) == (None, None)
    # Due now, so index.lua put it straight onto the ready stream (the in-flight index tracks it).
    assert api.container.redis.zscore(redis_keys.inflight_key(0), replayed.member().encode()) is not None
    assert api.deliver_ready() == 1
    assert [r.headers["hookline-attempt"] for r in receiver.requests] == ["1", "1"]  # a fresh run
    assert api.container.jobs.get(TENANT, dead.job_id).status is JobStatus.SUCCEEDED
    # Both runs keep their records: the replayed run's first attempt does not overwrite the old run's.
    history = api.acme.get(f"/v1/jobs/{dead.job_id}/executions").json()["executions"]
    assert [(e["attempt"], e["outcome"]) for e in history] == [(1, "permanent"), (2, "succeeded")]


def test_given_live_or_foreign_job_when_replayed_then_409_or_404(api: Api, receiver: Receiver) -> None:
    live = api.submit(delay_s=60)
    foreign = api.dead_job(receiver, tenant=OTHER_TENANT)

    conflict = api.acme.post(f"/v1/jobs/{live.job_id}/replay")
    theirs = api.acme.post(f"/v1/jobs/{foreign.job_id}/replay")

    assert (conflict.status, conflict.error_code) == (409, "conflict")
    assert (theirs.status, theirs.error_code) == (404, "not_found")
    assert api.container.jobs.get(OTHER_TENANT, foreign.job_id).status is JobStatus.DEAD
