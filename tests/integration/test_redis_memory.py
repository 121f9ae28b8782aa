"""Redis at its maxmemory (noeviction): writes are refused until memory frees, and nothing gives up meanwhile.

A private redis-server is given a maxmemory below what it holds, so every write is refused with OOM while
reads and deletes go on, until the limit is lifted.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator

import pytest
import redis

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.health import OK, OUT_OF_MEMORY, redis_state
from hookline.api import context
from hookline.domain.models import JobRequest
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from tests.fakes.metrics import RecordingMetrics
from tests.integration.api.conftest import TENANT, make_key
from tests.integration.test_redis_outage import LoopThread
from tests.support.apigw import ApiClient
from tests.support.redis_server import RedisServer, restartable_redis
from tests.support.stack import wait_until

pytestmark = pytest.mark.integration

OOM_FOR_MS = 600  # how long past its due time the job waits with Redis full: several promoter retries


@pytest.fixture
def private_redis() -> Iterator[RedisServer]:
    with restartable_redis() as server:
        yield server


@pytest.fixture
def full_container(settings: Settings, private_redis: RedisServer) -> Iterator[Container]:
    """Yields a container on the private Redis, recording its metrics."""
    built = Container(
        dataclasses.replace(settings, redis_url=private_redis.url),
        metrics=RecordingMetrics(),
        consumer="memory-executor",
    )
    context.use(built)
    yield built
    built.close()


def fill(client: redis.Redis) -> None:
    """Sets a maxmemory far below what the server holds, with noeviction: every write is refused (OOM).

    Filling the server to a limit instead leaves it at the edge, where the memory of the connections'
    buffers decides whether a small write is refused: not a condition a test can hold.
    """
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", 1)


def free(client: redis.Redis) -> None:
    """Lifts the limit, as giving the node more memory would: writes are taken again."""
    client.config_set("maxmemory", 0)


def metrics(container: Container) -> RecordingMetrics:
    assert isinstance(container.metrics, RecordingMetrics)
    return container.metrics


def test_given_redis_full_when_a_job_falls_due_then_the_promoter_waits_it_out_and_promotes_once_memory_frees(
    full_container: Container,
) -> None:
    container = full_container
    promoter, client = container.promoter, container.redis
    job = container.submitter.submit(TENANT, JobRequest(url="http://127.0.0.1:9/hook", delay_s=0.2)).job
    fill(client)
    promoting = LoopThread(lambda: promoter.run(container.clock.now_ms() + 3_000))
    promoting.start()

    # Due, but promote.lua's XADD is refused: the promoter backs off and stays, the member stays due.
    time.sleep(max(0.0, job.due_ms + OOM_FOR_MS - container.clock.now_ms()) / 1000)
    assert (promoting.is_alive(), promoting.error) == (True, None)
    assert client.zscore(redis_keys.due_key(job.shard), job.member().encode()) is not None
    assert metrics(container).counts["RedisOutOfMemory"] >= 1

    free(client)

    wait_until(lambda: client.xlen(redis_keys.ready_stream(job.shard)) == 1, timeout_s=5)
    assert client.zscore(redis_keys.due_key(job.shard), job.member().encode()) is None
    promoting.join(timeout=15)
    assert not promoting.is_alive() and promoting.error is None


def test_given_redis_full_when_health_checked_then_degraded_naming_out_of_memory_and_ok_once_freed(
    full_container: Container,
) -> None:
    client = full_container.redis
    fill(client)

    full = ApiClient().get("/healthz")
    free(client)
    freed = ApiClient().get("/healthz")

    assert (full.status, full.json()) == (
        200,
        {"status": "degraded", "checks": {"redis": "out_of_memory", "dynamodb": "ok"}},
    )
    assert (freed.status, freed.json()) == (
        200,
        {"status": "ok", "checks": {"redis": "ok", "dynamodb": "ok"}},
    )


def test_given_redis_full_when_a_job_is_submitted_then_it_is_accepted_and_counted(
    full_container: Container,
) -> None:
    client = ApiClient(make_key(full_container))
    fill(full_container.redis)

    response = client.post("/v1/jobs", {"url": "http://127.0.0.1:9/hook"})

    # Stored in DynamoDB and noted for the reaper, as when Redis is down: indexed once memory frees.
    assert response.status == 201
    assert full_container.jobs.get(TENANT, response.json()["id"]).job_id == response.json()["id"]
    assert metrics(full_container).counts["RedisOutOfMemory"] >= 1


def test_given_every_node_refusing_writes_then_redis_state_is_out_of_memory_until_the_limit_is_lifted(
    redis_client: redis.Redis,
) -> None:
    assert redis_state(redis_client) == OK
    redis_client.config_set("maxmemory", 1)  # on every node of a cluster
    try:
        full = redis_state(redis_client)
    finally:
        redis_client.config_set("maxmemory", 0)

    assert (full, redis_state(redis_client)) == (OUT_OF_MEMORY, OK)
