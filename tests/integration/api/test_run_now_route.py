"""POST /v1/jobs/{id}/run-now: a waiting job becomes due now in a new generation, its attempts unchanged,
and is delivered once even when its earlier entry was already queued or fires later."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from hookline.domain.models import JobStatus
from hookline.usecases.execute import Disposition
from hookline_client import AsyncClient, Client, Conflict
from hookline_client.cli import main
from tests.integration.api.conftest import OTHER_TENANT, TENANT, Api
from tests.support.receiver import Receiver, Reply

pytestmark = pytest.mark.integration


def test_given_a_job_due_in_an_hour_when_run_now_then_delivered_once_and_its_old_entry_dropped(
    api: Api, receiver: Receiver
) -> None:
    job = api.submit(receiver.url(), delay_s=3600)

    response = api.acme.post(f"/v1/jobs/{job.job_id}/run-now")

    moved = api.container.jobs.get(TENANT, job.job_id)
    assert (response.status, response.json()["status"], response.json()["attempt"]) == (200, "scheduled", 0)
    assert (moved.generation, moved.attempt, moved.max_attempts) == (2, 0, job.max_attempts)
    assert moved.due_ms < job.due_ms
    assert api.container.executor.drain() == [Disposition.SUCCEEDED]
    # The earlier generation's entry, still due in an hour, fires as the promoter would move it: dropped.
    api.container.index.index(job.member(), job.shard, moved.due_ms, moved.due_ms)
    assert api.container.executor.drain() == [Disposition.STALE]
    assert len(receiver.requests) == 1


def test_given_a_job_already_queued_when_run_now_then_the_queued_entry_is_stale_and_it_fires_once(
    api: Api, receiver: Receiver
) -> None:
    # Due now: index.lua put it straight on the ready stream, as the promoter does once a job is due.
    job = api.submit(receiver.url())

    response = api.acme.post(f"/v1/jobs/{job.job_id}/run-now")

    assert response.status == 200
    assert sorted(api.container.executor.drain()) == sorted([Disposition.STALE, Disposition.SUCCEEDED])
    assert len(receiver.requests) == 1
    assert api.container.jobs.get(TENANT, job.job_id).status is JobStatus.SUCCEEDED


def test_given_a_retry_waiting_out_its_backoff_when_run_now_then_the_next_attempt_comes_now(
    api: Api, receiver: Receiver
) -> None:
    receiver.script("/flaky", [Reply(503, headers={"Retry-After": "3600"})])
    job = api.submit(receiver.url("/flaky"), max_backoff_s=3600)
    assert api.container.executor.drain() == [Disposition.RETRIED]
    waiting = api.container.jobs.get(TENANT, job.job_id)

    response = api.acme.post(f"/v1/jobs/{job.job_id}/run-now")

    assert (response.status, response.json()["attempt"]) == (200, 1)
    assert api.container.executor.drain() == [Disposition.SUCCEEDED]
    assert [r.headers["hookline-attempt"] for r in receiver.requests] == ["1", "2"]  # the budget goes on
    assert api.container.jobs.get(TENANT, job.job_id).max_attempts == waiting.max_attempts


def test_given_a_finished_unknown_or_foreign_job_when_run_now_then_409_or_404_and_nothing_changes(
    api: Api, receiver: Receiver
) -> None:
    dead = api.dead_job(receiver)
    foreign = api.submit(receiver.url(), OTHER_TENANT, delay_s=3600)

    finished = api.acme.post(f"/v1/jobs/{dead.job_id}/run-now")
    unknown = api.acme.post("/v1/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV/run-now")
    theirs = api.acme.post(f"/v1/jobs/{foreign.job_id}/run-now")

    assert (finished.status, finished.error_code) == (409, "job_not_waiting")
    assert (unknown.status, unknown.error_code) == (404, "not_found")
    assert (theirs.status, theirs.error_code) == (404, "not_found")
    assert api.container.jobs.get(TENANT, dead.job_id) == dead
    assert api.container.jobs.get(OTHER_TENANT, foreign.job_id) == foreign


@pytest.mark.usefixtures("payload_format")
def test_given_the_clients_when_running_now_then_the_job_due_now_or_conflict(api: Api, served: str) -> None:
    first, second = api.submit(delay_s=3600), api.submit(delay_s=3600)

    with Client(served, str(api.acme.api_key)) as client:
        moved = client.run_job_now(first.job_id)
    also = asyncio.run(_run_now_async(served, str(api.acme.api_key), second.job_id))
    api.container.jobs.cancel(TENANT, first.job_id, api.container.clock.now_ms())

    with Client(served, str(api.acme.api_key)) as client, pytest.raises(Conflict) as refused:
        client.run_job_now(first.job_id)
    assert (moved.id, also.id) == (first.job_id, second.job_id)
    assert refused.value.code == "job_not_waiting"


async def _run_now_async(served: str, key: str, job_id: str) -> object:
    async with AsyncClient(served, key) as client:
        return await client.run_job_now(job_id)


def test_given_the_cli_when_running_now_then_json_shows_the_job(
    api: Api, served: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOOKLINE_API", served)
    monkeypatch.setenv("HOOKLINE_KEY", str(api.acme.api_key))
    monkeypatch.chdir(tmp_path)  # no stray .hookline/dev.env from the checkout
    job = api.submit(delay_s=3600)

    assert main(["jobs", "run-now", job.job_id, "--json"]) == 0

    shown = json.loads(capsys.readouterr().out)
    assert (shown["id"], shown["status"]) == (job.job_id, "scheduled")
    assert api.container.jobs.get(TENANT, job.job_id).generation == job.generation + 1
