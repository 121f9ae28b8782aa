"""hookline_client against the API over real HTTP: every route, cursor iterators, typed errors, retries."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import boto3
import pytest
from botocore.config import Config

from hookline.api import context
from hookline.api.views import JobView
from hookline.domain.cron.schedule import ScheduleRequest
from hookline.domain.models import JobRequest
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from hookline.usecases.auth import mint_key
from hookline_client import (
    AsyncClient,
    Client,
    Conflict,
    NotFound,
    RateLimited,
    RetryPolicy,
    Unauthorized,
    Unavailable,
    ValidationFailed,
)
from tests.integration.api.conftest import Api, make_key
from tests.support.http_api import serving_api
from tests.support.receiver import Receiver
from tests.support.redis_server import free_port

# The client talks to the API once as a REST API serves it and once as an HTTP API does (payload format 2.0).
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("payload_format")]

HOOK = "http://127.0.0.1:9/hook"


def test_given_client_when_using_job_routes_then_answers_are_the_api_models(api: Api, served: str) -> None:
    with Client(served, api.acme.api_key) as client:
        job = client.submit_job(JobRequest(url=HOOK, delay_s=60, body={"n": 1}))
        same = client.submit_job({"url": HOOK, "delay_s": 60, "idempotency_key": "k"})
        batch = client.submit_batch([{"url": HOOK, "delay_s": 60}, {"url": "ftp://nope"}])
        fetched = client.get_job(job.id)
        page = client.list_jobs(status="scheduled", limit=2)
        everything = list(client.iter_jobs(page_size=2))
        cancelled = client.cancel_job(job.id)

    assert isinstance(job, JobView) and job.status == "scheduled" and job.body == '{"n":1}'
    assert fetched.id == job.id
    assert [r.status for r in batch.results] == [201, 422]
    assert len(page.jobs) == 2 and page.next is not None
    assert {j.id for j in everything} == {job.id, same.id, batch.results[0].job.id}  # type: ignore[union-attr]
    assert [j.id for j in everything] == sorted((j.id for j in everything), reverse=True)  # newest first
    assert cancelled.status == "cancelled"


def test_given_dead_jobs_when_replayed_through_the_client_then_attempts_and_replays_are_typed(
    api: Api, served: str, receiver: Receiver
) -> None:
    dead = [api.dead_job(receiver) for _ in range(3)]

    with Client(served, api.acme.api_key) as client:
        attempts = client.list_executions(dead[0].job_id)
        listed = [job.id for job in client.iter_dead_letters(page_size=2)]
        one = client.replay_job(dead[0].job_id)
        by_id = client.replay_dead_letters([dead[1].job_id])
        rest = list(client.replay_all_dead_letters())
        with pytest.raises(Conflict) as again:
            client.replay_job(dead[0].job_id)

    assert [(a.attempt, a.status_code, a.outcome) for a in attempts] == [(1, 404, "permanent")]
    assert sorted(listed) == sorted(job.job_id for job in dead)
    assert one.status == "scheduled" and [j.id for j in by_id.replayed] == [dead[1].job_id]
    assert [j.id for batch in rest for j in batch.replayed] == [dead[2].job_id]
    assert again.value.status == 409 and again.value.request_id


def test_given_client_when_managing_schedules_then_create_list_pause_resume_delete(
    api: Api, served: str
) -> None:
    with Client(served, api.acme.api_key) as client:
        created = client.create_schedule(
            ScheduleRequest.model_validate({"expression": "0 9 * * *", "job": {"url": HOOK}})
        )
        listed = [s.id for s in client.iter_schedules(page_size=1)]
        fetched = client.get_schedule(created.id)
        paused = client.pause_schedule(created.id)
        resumed = client.resume_schedule(created.id)
        instances = client.list_schedule_jobs(created.id)
        client.delete_schedule(created.id)
        with pytest.raises(NotFound):
            client.get_schedule(created.id)

    assert listed == [created.id]
    assert fetched.next_fire_times and len(fetched.next_fire_times) == 5
    assert (paused.paused, resumed.paused) == (True, False)
    assert instances.jobs == []


def test_given_client_when_reading_stats_health_and_document_then_each_answers(api: Api, served: str) -> None:
    with Client(served, api.acme.api_key) as client:
        client.submit_job({"url": HOOK, "delay_s": 60})
        stats = client.get_stats()
        health = client.health()
        document = client.openapi()

    assert stats.last_hour.submitted == 1 and stats.backlog.due == 1
    assert health.status == "ok"
    assert "/v1/stats" in document["paths"]


def test_given_errors_when_calling_then_typed_exceptions_carry_envelope_and_request_id(
    api: Api, served: str
) -> None:
    with Client(served, api.acme.api_key) as client, pytest.raises(NotFound) as missing:
        client.get_job("01ARZ3NDEKTSV4RRFFQ69G5FAV")
    with Client(served, api.acme.api_key) as client, pytest.raises(ValidationFailed) as invalid:
        client.submit_job({"url": HOOK, "max_attempts": 0})
    with Client(served, "hl_wrong_key") as client, pytest.raises(Unauthorized) as anonymous:
        client.list_jobs()

    assert (missing.value.status, missing.value.code) == (404, "not_found")
    assert missing.value.request_id and missing.value.request_id in str(missing.value)
    assert [d["field"] for d in invalid.value.details] == ["max_attempts"]
    assert anonymous.value.body == {"error": anonymous.value.body["error"]}


def test_given_rate_limited_key_when_calling_then_retry_after_is_waited_for_within_bounds(
    api: Api, served: str
) -> None:
    key = make_key(api.container, rate_limit_per_s=1)
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        time.sleep(seconds)

    with Client(served, key, sleep=sleep) as client:
        client.list_jobs()
        client.list_jobs()  # over 1/s: answered 429, Retry-After 1, then admitted
    with (
        Client(served, key, retry=RetryPolicy(max_retries=0)) as client,
        pytest.raises(RateLimited) as refused,
    ):
        client.list_jobs()
        client.list_jobs()

    assert waits == [1.0]
    assert refused.value.retry_after_s == 1.0


def test_given_dependency_down_when_calling_then_503_is_retried_boundedly_and_unsafe_posts_are_not(
    settings: Settings,
) -> None:
    down = Container(replace(settings, aws_endpoint_url=f"http://127.0.0.1:{free_port()}"))
    down.__dict__["dynamodb"] = boto3.client(
        "dynamodb",
        endpoint_url=down.settings.aws_endpoint_url,
        region_name=down.settings.aws_region,
        config=Config(retries={"mode": "standard", "max_attempts": 1}, connect_timeout=1),
    )
    context.use(down)
    waits: list[float] = []
    try:
        with (
            serving_api() as base_url,
            Client(base_url, mint_key("acme", 0)[1], sleep=waits.append) as client,
        ):
            with pytest.raises(Unavailable) as read:
                client.get_job("01ARZ3NDEKTSV4RRFFQ69G5FAV")
            retried = list(waits)
            waits.clear()
            with pytest.raises(Unavailable):
                client.submit_job({"url": HOOK})  # no idempotency key: a repeat could store two jobs
            unkeyed = list(waits)
            waits.clear()
            with pytest.raises(Unavailable):
                client.submit_job({"url": HOOK, "idempotency_key": "once"})
    finally:
        down.close()

    assert retried == [0.5, 1.0, 2.0]  # three retries, doubling, then the error
    assert read.value.code == "dependency_unavailable"
    assert unkeyed == []
    assert waits == [0.5, 1.0, 2.0]


def test_given_async_client_when_used_then_same_routes_and_errors(api: Api, served: str) -> None:
    async def scenario() -> tuple[JobView, list[str], int, str]:
        async with AsyncClient(served, api.acme.api_key) as client:
            job = await client.submit_job({"url": HOOK, "delay_s": 60})
            await client.submit_job({"url": HOOK, "delay_s": 120})
            ids = [j.id async for j in client.iter_jobs(page_size=1)]
            stats = await client.get_stats()
            try:
                await client.get_job("01ARZ3NDEKTSV4RRFFQ69G5FAV")
            except NotFound as error:
                code = error.code
            return job, ids, stats.last_hour.submitted, code

    job, ids, submitted, code = asyncio.run(scenario())

    assert job.status == "scheduled" and len(ids) == 2 and job.id in ids
    assert (submitted, code) == (2, "not_found")
