"""The executor with named queues, over the fakes: a paused queue's delivery is parked with no attempt spent
and released by a resume; settings missing from Redis are read from the record; a deleted queue limits
nothing; a queue's slot is released when the delivery ends."""

from __future__ import annotations

import pytest

from hookline.domain.models import JobStatus
from hookline.domain.queues import Queue, limiter_name
from hookline.usecases.execute import Disposition
from hookline.usecases.queue_admission import QueueAdmission
from hookline.usecases.queues import QueueManager
from tests.fakes.callbacks import ok
from tests.fakes.queue_store import FakeQueueStore
from tests.unit.usecases.test_executor import during
from tests.unit.usecases.world import TENANT, World, idle_state


@pytest.fixture
def queues() -> FakeQueueStore:
    return FakeQueueStore()


@pytest.fixture
def manager(world: World, queues: FakeQueueStore) -> QueueManager:
    return QueueManager(queues, world.redis("api"), world.clock, world.shards, world.metrics)


def _executor(world: World, queues: FakeQueueStore) -> None:
    world.executor(queues=QueueAdmission(world.redis("executor-queues"), queues, world.metrics))


def test_given_paused_queue_when_due_job_delivered_then_parked_no_attempt_and_resume_delivers(
    world: World, queues: FakeQueueStore, manager: QueueManager
) -> None:
    queues.put(Queue(TENANT, "mail"), None)
    manager.pause(TENANT, "mail")
    _executor(world, queues)
    job = world.submit(queue="mail")

    assert world.drain() == [Disposition.DEFERRED]
    held = world.job(job)
    assert (held.status, held.attempt, world.callbacks.requests) == (JobStatus.SCHEDULED, 0, [])
    assert world.state() == idle_state()  # parked: neither due, ready nor in flight
    assert manager.get(TENANT, "mail").figures.parked == 1

    manager.resume(TENANT, "mail")

    assert world.drain() == [Disposition.SUCCEEDED]
    assert world.job(job).attempt == 1
    assert manager.get(TENANT, "mail").figures.parked == 0


def test_given_settings_missing_from_redis_when_delivered_then_read_from_record_and_obeyed(
    world: World, queues: FakeQueueStore
) -> None:
    queues.put(Queue(TENANT, "mail", paused_since_ms=1), None)  # written to DynamoDB only
    _executor(world, queues)
    job = world.submit(queue="mail")

    assert world.drain() == [Disposition.DEFERRED]
    assert world.job(job).attempt == 0
    assert queues.faults.calls("get") == 1


def test_given_queue_with_concurrency_when_delivered_then_slot_taken_and_released(
    world: World, queues: FakeQueueStore
) -> None:
    queues.put(Queue(TENANT, "mail", max_concurrency=1), None)
    _executor(world, queues)
    job = world.submit(queue="mail")
    held: list[list[str]] = []
    world.callbacks.then(during(lambda: held.append(list(world.holders(TENANT, limiter_name("mail")))), ok()))

    assert world.drain() == [Disposition.SUCCEEDED]
    assert held == [[f"{job.job_id}:1"]]
    assert world.job(job).status is JobStatus.SUCCEEDED
    assert world.holders(TENANT, limiter_name("mail")) == {}


def test_given_deleted_queue_when_its_job_delivered_then_no_queue_limits_it(
    world: World, queues: FakeQueueStore
) -> None:
    _executor(world, queues)
    job = world.submit(queue="gone")  # the submitter of this world checks no queue

    assert world.drain() == [Disposition.SUCCEEDED]
    assert world.job(job).attempt == 1
    assert world.metrics.counts["QueueGone"] == 1
