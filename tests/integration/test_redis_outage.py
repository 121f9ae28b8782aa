"""Redis blips: the promote and execute loops wait an outage out, resuming within a second of its end."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.index import RedisIndex
from hookline.domain.models import JobRequest, JobStatus
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from tests.support.receiver import Receiver
from tests.support.redis_server import RedisServer, free_port, restartable_redis
from tests.support.stack import wait_until

pytestmark = pytest.mark.integration

TENANT = "acme"
# The loops back off at most 1 s between tries; the rest is this machine's scheduling (2 shared cores).
RESUME_TARGET_MS = 1_000
SCHEDULING_SLACK_MS = 300


@pytest.fixture
def private_redis() -> Iterator[RedisServer]:
    with restartable_redis() as server:
        yield server


@pytest.fixture
def outage_container(settings: Settings, private_redis: RedisServer) -> Iterator[Container]:
    built = Container(dataclasses.replace(settings, redis_url=private_redis.url), consumer="outage-executor")
    yield built
    built.close()


class LoopThread(threading.Thread):
    """Runs one loop invocation to its deadline, keeping what it raised instead of dying silently."""

    def __init__(self, target: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self._target_fn = target
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._target_fn()
        except BaseException as error:
            self.error = error


def test_given_redis_restarts_while_a_job_falls_due_when_loops_run_then_it_fires_within_a_second_of_return(
    outage_container: Container, private_redis: RedisServer, receiver: Receiver
) -> None:
    container = outage_container
    executor, promoter = container.executor, container.promoter  # built (group created) while Redis is up
    deadline_ms = container.clock.now_ms() + 15_000
    loops = [
        LoopThread(lambda: promoter.run(deadline_ms)),
        LoopThread(lambda: executor.run(deadline_ms, block_ms=200)),
    ]
    for loop in loops:
        loop.start()
    request = JobRequest.model_validate({"url": receiver.url(), "body": "x", "delay_s": 2.0})
    job = container.submitter.submit(TENANT, request).job

    time.sleep(0.5)
    private_redis.stop()  # down before the job is due, back 1.5 s after it was due
    time.sleep(max(0.0, (job.due_ms + 1_500 - container.clock.now_ms()) / 1000))
    back_ms = private_redis.start()

    receiver.wait_for(1, timeout_s=8)
    wait_until(lambda: container.jobs.get(TENANT, job.job_id).status is JobStatus.SUCCEEDED, timeout_s=5)
    delivered_ms = receiver.requests[0].received_ms
    for loop in loops:
        loop.join(timeout=20)
    assert [loop.error for loop in loops] == [None, None]
    assert delivered_ms - back_ms <= RESUME_TARGET_MS + SCHEDULING_SLACK_MS, (
        f"delivered {delivered_ms - back_ms} ms after Redis answered again"
    )


def test_given_executor_blocked_in_xreadgroup_when_redis_is_flushed_then_read_ends_empty_and_group_is_back(
    redis_client: redis.Redis,
) -> None:
    index = RedisIndex(redis_client, consumer="blocked")
    index.ensure_group(0)
    result: dict[str, Any] = {}

    def read() -> None:
        try:
            result["entries"] = index.read_ready([0], count=10, block_ms=5_000)
        except Exception as error:
            result["error"] = error

    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def blocked() -> bool:
        clients = redis_client.client_list()
        return any(c.get("cmd") == "xreadgroup" and "b" in c.get("flags", "") for c in clients)

    wait_until(blocked, timeout_s=5, interval_s=0.01)
    redis_client.flushall()
    reader.join(timeout=10)

    assert result == {"entries": []}
    groups = redis_client.xinfo_groups(redis_keys.ready_stream(0))
    assert [group["name"] for group in groups] == [redis_keys.CONSUMER_GROUP.encode()]


def test_given_redis_down_at_cold_start_when_the_executor_runs_then_it_waits_until_its_deadline(
    settings: Settings,
) -> None:
    down = Container(dataclasses.replace(settings, redis_url=f"redis://127.0.0.1:{free_port()}/0"))
    try:
        started = time.monotonic()
        processed = down.executor.run(down.clock.now_ms() + 1_500, block_ms=200)
        elapsed_s = time.monotonic() - started
    finally:
        down.close()

    assert processed == 0
    assert 1.4 <= elapsed_s < 3.0  # it backed off until the deadline instead of failing at once
