"""What each route does when Redis or DynamoDB is down (docs/api.md, "When a dependency is down")."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import replace

import boto3
import pytest
from botocore.config import Config

from hookline.api import context
from hookline.domain.clock import SystemClock
from hookline.domain.models import JobRequest, JobStatus
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from tests.fakes.clock import FrozenClock
from tests.integration.api.conftest import TENANT, make_key
from tests.support.apigw import ApiClient
from tests.support.redis_server import free_port

pytestmark = pytest.mark.integration

HOOK = "http://127.0.0.1:9/hook"


@pytest.fixture
def redis_down(settings: Settings) -> Iterator[Container]:
    """Yields a container whose Redis URL is a closed port; DynamoDB works."""
    built = Container(replace(settings, redis_url=f"redis://127.0.0.1:{free_port()}/0"))
    context.use(built)
    yield built
    built.close()


@pytest.fixture
def dynamodb_down(settings: Settings) -> Iterator[Container]:
    """Yields a container whose DynamoDB endpoint is a closed port (one attempt, no retries); Redis works."""
    built = Container(replace(settings, aws_endpoint_url=f"http://127.0.0.1:{free_port()}"))
    built.__dict__["dynamodb"] = boto3.client(
        "dynamodb",
        endpoint_url=built.settings.aws_endpoint_url,
        region_name=built.settings.aws_region,
        config=Config(retries={"mode": "standard", "max_attempts": 1}, connect_timeout=1),
    )
    context.use(built)
    yield built
    built.close()


class RefusingRedis:
    """A loopback port that accepts each connection and closes it at once, counting them: Redis down, with
    every connection attempt of the client visible."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"redis://127.0.0.1:{self._listener.getsockname()[1]}/0"
        self.attempts = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return  # closed
            self.attempts += 1
            connection.close()

    def close(self) -> None:
        self._listener.close()


@pytest.fixture
def refusing_redis(settings: Settings) -> Iterator[tuple[Container, RefusingRedis]]:
    """Yields a container whose Redis refuses every connection (counted) and whose clock stands still."""
    refusing = RefusingRedis()
    built = Container(replace(settings, redis_url=refusing.url), clock=FrozenClock(SystemClock().now_ms()))
    context.use(built)
    yield built, refusing
    built.close()
    refusing.close()


def test_given_redis_known_down_when_submitting_then_no_redis_attempt_and_each_job_is_noted_at_once(
    refusing_redis: tuple[Container, RefusingRedis],
) -> None:
    container, refusing = refusing_redis
    client = ApiClient(make_key(container))

    first = client.post("/v1/jobs", {"url": HOOK, "delay_s": 60})
    attempts_for_the_first = refusing.attempts
    later = [client.post("/v1/jobs", {"url": HOOK, "delay_s": 60}) for _ in range(4)]

    assert [r.status for r in (first, *later)] == [201] * 5
    # The first submit's rate limit check found Redis down after the client's retries; the limiter, the
    # indexing and the counts of the next four did not try Redis at all (the clock stands still: no probe).
    assert attempts_for_the_first >= 1
    assert refusing.attempts == attempts_for_the_first
    noted = {
        job.member.job_id for note in container.unindexed.unindexed(container.shards) for job in note.jobs
    }
    assert noted == {r.json()["id"] for r in (first, *later)}


def dead_job_id(container: Container) -> str:
    """Stores a dead job directly in DynamoDB (no Redis needed) and returns its id."""
    job = container.submitter.build(TENANT, JobRequest(url=HOOK), container.clock.now_ms())
    container.jobs.create(job.with_changes(status=JobStatus.DEAD, attempt=1), "hash", job.created_ms)
    return job.job_id


def test_given_redis_down_when_writing_then_dynamodb_records_it_and_the_limiter_fails_open(
    redis_down: Container,
) -> None:
    client = ApiClient(make_key(redis_down, rate_limit_per_s=1))
    dead = dead_job_id(redis_down)

    submitted = client.post("/v1/jobs", {"url": HOOK, "delay_s": 60})
    batch = client.post("/v1/jobs/batch", {"jobs": [{"url": HOOK}]})
    cancelled = client.delete(f"/v1/jobs/{submitted.json()['id']}")
    replayed = client.post(f"/v1/jobs/{dead}/replay")

    # Four requests at a limit of one per second: the limiter could not count them, so it let them pass.
    assert [r.status for r in (submitted, batch, cancelled, replayed)] == [201, 200, 200, 200]
    assert batch.json()["results"][0]["status"] == 201
    assert redis_down.jobs.get(TENANT, submitted.json()["id"]).status is JobStatus.CANCELLED
    # Scheduled and live in DynamoDB: the reaper's reconciliation indexes it once Redis is back.
    replayed_job = redis_down.jobs.get(TENANT, dead)
    assert (replayed_job.status, replayed_job.generation) == (JobStatus.SCHEDULED, 2)


def test_given_redis_down_when_reading_then_every_read_route_answers(redis_down: Container) -> None:
    client = ApiClient(make_key(redis_down))
    dead = dead_job_id(redis_down)

    answers = [
        client.get("/v1/jobs"),
        client.get(f"/v1/jobs/{dead}"),
        client.get(f"/v1/jobs/{dead}/executions"),
        client.get("/v1/dead-letters"),
    ]

    assert [a.status for a in answers] == [200, 200, 200, 200]
    assert [job["id"] for job in answers[3].json()["jobs"]] == [dead]


def test_given_redis_down_when_health_checked_then_503_naming_redis(redis_down: Container) -> None:
    response = ApiClient().get("/healthz")

    assert (response.status, response.error_code) == (503, "dependency_unavailable")
    assert response.json()["error"]["details"] == [{"dependency": "redis", "status": "unavailable"}]


def test_given_dynamodb_down_when_called_then_503_in_the_envelope_and_health_names_it(
    dynamodb_down: Container,
) -> None:
    key = "hl_0123456789abcdef_" + "0" * 48

    health = ApiClient().get("/healthz")
    listing = ApiClient(key).get("/v1/jobs")

    assert (health.status, health.json()["error"]["details"]) == (
        503,
        [{"dependency": "dynamodb", "status": "unavailable"}],
    )
    assert (listing.status, listing.error_code) == (503, "dependency_unavailable")


def test_given_both_up_when_health_checked_then_200_without_a_key(container: Container) -> None:
    context.use(container)

    response = ApiClient().get("/healthz")

    assert response.status == 200
    assert response.json() == {"status": "ok", "checks": {"redis": "ok", "dynamodb": "ok"}}
