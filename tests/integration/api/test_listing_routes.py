"""Listing routes: jobs (newest first, status filter, cursor pages) and dead letters (list, replay)."""

from __future__ import annotations

import pytest

from hookline.adapters.dynamo import job_store
from hookline.domain.models import JobStatus
from hookline.usecases.manage import JobManager
from tests.fakes.clock import FrozenClock
from tests.integration.api.conftest import OTHER_TENANT, TENANT, Api
from tests.support.apigw import ApiClient, ApiResponse
from tests.support.receiver import Receiver

pytestmark = pytest.mark.integration


def all_pages(client: ApiClient, path: str, limit: int, **query: str) -> list[list[str]]:
    """Follows `next` from the first page to the last; returns each page's job ids."""
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        params = {"limit": str(limit), **query, **({"cursor": cursor} if cursor else {})}
        response = client.get(path, query=params)
        assert response.status == 200, response.body
        pages.append([job["id"] for job in response.json()["jobs"]])
        cursor = response.json()["next"]
        if cursor is None:
            return pages
        assert len(pages) < 20, "pagination does not end"


def test_given_seven_jobs_when_listed_by_three_then_three_pages_newest_first_without_gaps(api: Api) -> None:
    clock = FrozenClock(1_800_000_000_000)
    api.container.clock = clock
    api.container.__dict__.pop("submitter", None)
    created = []
    for _ in range(7):
        created.append(api.submit(delay_s=60).job_id)
        clock.advance(1)  # distinct milliseconds, so "newest first" is one exact order
    api.submit(tenant=OTHER_TENANT)

    pages = all_pages(api.acme, "/v1/jobs", 3)

    assert [len(page) for page in pages] == [3, 3, 1]
    assert [job_id for page in pages for job_id in page] == list(reversed(created))


def test_given_mixed_statuses_when_filtered_then_only_that_status_across_pages(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small read batches, so the filter has to span several DynamoDB queries per page.
    monkeypatch.setattr(job_store, "LIST_FILTERED_BATCH", 2)
    jobs = [api.submit(delay_s=60).job_id for _ in range(8)]
    cancelled = set(jobs[::2])
    for job_id in cancelled:
        assert api.acme.delete(f"/v1/jobs/{job_id}").status == 200

    pages = all_pages(api.acme, "/v1/jobs", 2, status="cancelled")
    scheduled = api.acme.get("/v1/jobs", query={"status": "scheduled", "limit": "100"}).json()

    listed = [job_id for page in pages for job_id in page]
    assert sorted(listed) == sorted(cancelled) and len(listed) == len(set(listed))
    assert all(len(page) <= 2 for page in pages)
    assert {job["id"] for job in scheduled["jobs"]} == set(jobs) - cancelled
    assert scheduled["next"] is None


def test_given_other_tenant_jobs_when_listing_then_none_of_them_show(api: Api) -> None:
    mine = api.submit().job_id
    api.submit(tenant=OTHER_TENANT)

    assert all_pages(api.acme, "/v1/jobs", 100) == [[mine]]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"limit": "101"}, "query.limit"),
        ({"limit": "0"}, "query.limit"),
        ({"status": "queued-ish"}, "query.status"),
        ({"cursor": "not-a-cursor"}, "cursor"),
    ],
)
def test_given_bad_query_when_listing_then_422_naming_the_field(
    api: Api, query: dict[str, str], field: str
) -> None:
    response = api.acme.get("/v1/jobs", query=query)

    assert (response.status, response.error_code) == (422, "validation_error")
    assert response.json()["error"]["details"][0]["field"] == field


def test_given_dead_jobs_when_dead_letters_listed_then_only_dead_ones_of_the_tenant_paginated(
    api: Api, receiver: Receiver
) -> None:
    dead = [api.dead_job(receiver).job_id for _ in range(3)]
    api.submit(delay_s=60)
    api.dead_job(receiver, tenant=OTHER_TENANT)

    pages = all_pages(api.acme, "/v1/dead-letters", 2)

    assert [len(page) for page in pages] == [2, 1]
    assert sorted(job_id for page in pages for job_id in page) == sorted(dead)


def test_given_dead_jobs_when_replayed_by_ids_then_each_replayed_or_reported(
    api: Api, receiver: Receiver
) -> None:
    dead = api.dead_job(receiver)
    live = api.submit(delay_s=60)
    foreign = api.dead_job(receiver, tenant=OTHER_TENANT)

    response = api.acme.post("/v1/dead-letters/replay", {"ids": [dead.job_id, live.job_id, foreign.job_id]})

    body = response.json()
    assert response.status == 200
    assert [job["id"] for job in body["replayed"]] == [dead.job_id]
    assert [(f["id"], f["error"]["code"]) for f in body["failed"]] == [
        (live.job_id, "conflict"),
        (foreign.job_id, "not_found"),
    ]
    assert api.container.jobs.get(TENANT, dead.job_id).status is JobStatus.SCHEDULED
    assert api.container.jobs.get(OTHER_TENANT, foreign.job_id).status is JobStatus.DEAD


def test_given_more_dead_jobs_than_a_batch_when_replaying_all_then_bounded_and_more_until_done(
    api: Api, receiver: Receiver
) -> None:
    c = api.container
    c.__dict__["manager"] = JobManager(c.jobs, c.index, c.clock, c.metrics, replay_batch=2)
    dead = {api.dead_job(receiver).job_id for _ in range(3)}

    first = api.acme.post("/v1/dead-letters/replay", {"all": True}).json()
    second = api.acme.post("/v1/dead-letters/replay", {"all": True}).json()

    assert (len(first["replayed"]), first["more"]) == (2, True)
    assert (len(second["replayed"]), second["more"]) == (1, False)
    assert {job["id"] for job in first["replayed"] + second["replayed"]} == dead
    assert api.acme.get("/v1/dead-letters").json()["jobs"] == []


@pytest.mark.parametrize("body", [{}, {"ids": [], "all": False}, {"ids": ["x"], "all": True}, {"all": False}])
def test_given_no_or_two_selections_when_replaying_dead_letters_then_422(
    api: Api, body: dict[str, object]
) -> None:
    response: ApiResponse = api.acme.post("/v1/dead-letters/replay", body)

    assert (response.status, response.error_code) == (422, "validation_error")
