"""Crash recovery: an executor that dies after claiming, and a Redis that loses everything."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.index import RedisIndex
from hookline.domain.models import ExecutionOutcome, JobRequest, JobStatus, Member
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from hookline.ports import NullMetrics
from hookline.usecases.promote import Promoter
from tests.support.receiver import Receiver
from tests.support.redis_mode import connect, disconnect
from tests.support.stack import running_loops, wait_until

pytestmark = pytest.mark.integration

TENANT = "acme"


def submit(container: Container, receiver: Receiver, **fields: object) -> str:
    request = JobRequest.model_validate({"url": receiver.url(), "body": "x", "timeout_s": 1, **fields})
    return container.submitter.submit(TENANT, request).job.job_id


def reap(container: Container) -> None:
    container.reaper.run(container.clock.now_ms() + 5_000)


def test_given_executor_died_after_claim_when_reaped_then_job_runs_and_lost_attempt_is_recorded(
    container: Container, receiver: Receiver
) -> None:
    job_id = submit(container, receiver)
    shard = container.jobs.get(TENANT, job_id).shard
    doomed = RedisIndex(container.redis, consumer="doomed-executor")
    doomed.ensure_group(shard)
    (entry,) = doomed.read_ready([shard], count=10, block_ms=100)
    container.jobs.claim(
        entry.member, container.clock.now_ms()
    )  # ...and the executor dies: no delivery, no ack
    lease_expires_ms = container.jobs.get(TENANT, job_id).lease_expires_at_ms
    assert lease_expires_ms is not None

    with running_loops(container):

        def recovered() -> bool:
            reap(container)
            return container.jobs.get(TENANT, job_id).status is JobStatus.SUCCEEDED

        wait_until(recovered, timeout_s=10, interval_s=0.2)

    (request,) = receiver.requests
    assert request.received_ms >= lease_expires_ms
    assert request.headers["hookline-attempt"] == "2"
    executions = container.jobs.executions(TENANT, job_id)
    assert [(e.attempt, e.outcome) for e in executions] == [
        (1, ExecutionOutcome.LEASE_EXPIRED),
        (2, ExecutionOutcome.SUCCEEDED),
    ]
    assert container.redis.xpending(redis_keys.ready_stream(shard), redis_keys.CONSUMER_GROUP)["pending"] == 0


def test_given_redis_flushed_when_reaped_then_every_live_job_is_reindexed_and_fires(
    container: Container, receiver: Receiver
) -> None:
    immediate = {submit(container, receiver) for _ in range(3)}
    delayed = {submit(container, receiver, delay_s=1.0) for _ in range(3)}
    running = submit(container, receiver)
    shard = container.jobs.get(TENANT, running).shard
    index = container.index
    index.ensure_group(shard)
    (entry,) = [e for e in index.read_ready([shard], 10, 100) if e.member.job_id == running]
    container.jobs.claim(entry.member, container.clock.now_ms())  # a running attempt Redis will forget
    container.redis.flushall()

    report = container.reaper.run(container.clock.now_ms() + 5_000)

    assert report.reindexed == len(immediate | delayed | {running})
    with running_loops(container):
        receiver.wait_for(7, timeout_s=10)
        wait_until(
            lambda: all(
                container.jobs.get(TENANT, j).status is JobStatus.SUCCEEDED
                for j in immediate | delayed | {running}
            ),
            timeout_s=5,
        )
    assert Counter(r.headers["webhook-id"] for r in receiver.requests) == Counter(
        {j: 1 for j in immediate | delayed | {running}}
    )
    assert container.reaper.run(container.clock.now_ms() + 5_000).reindexed == 0


def test_given_many_concurrent_promoters_when_jobs_fall_due_then_each_is_promoted_exactly_once(
    container: Container, redis_url: str
) -> None:
    now_ms = container.clock.now_ms()
    members = [Member(TENANT, f"job{i:05d}", 1) for i in range(2000)]
    pipe_index = container.index
    for i, member in enumerate(members):
        pipe_index.index(member, 0, now_ms + 50 + i % 400, now_ms)
    clients = [connect(redis_url) for _ in range(4)]
    promoters = [
        Promoter(RedisIndex(client), container.clock, [0], NullMetrics(), max_sleep_ms=50, batch=100)
        for client in clients
    ]
    # The deadline counts from after indexing (slow under load), so every member falls due well inside it.
    deadline_ms = max(container.clock.now_ms(), now_ms + 450) + 1000
    threads = [threading.Thread(target=p.run, args=(deadline_ms,)) for p in promoters]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    for client in clients:
        disconnect(client)

    entries = container.redis.xrange(redis_keys.ready_stream(0))
    counts = Counter(fields[b"m"].decode() for _, fields in entries)
    assert counts == Counter({m.encode(): 1 for m in members})
    assert container.redis.zcard(redis_keys.due_key(0)) == 0


def test_given_cancelled_job_when_its_entry_is_read_then_it_is_dropped_and_never_fires(
    container: Container, receiver: Receiver
) -> None:
    job_id = submit(container, receiver, delay_s=0.3)
    cancelled = container.jobs.cancel(TENANT, job_id, container.clock.now_ms())
    assert cancelled.status is JobStatus.CANCELLED
    shard = cancelled.shard

    with running_loops(container):
        time.sleep(0.8)
        wait_until(lambda: container.redis.zcard(redis_keys.inflight_key(shard)) == 0, timeout_s=3)

    assert receiver.requests == []
    assert container.jobs.get(TENANT, job_id).status is JobStatus.CANCELLED
    assert container.redis.xlen(redis_keys.ready_stream(shard)) == 0


def test_given_attempt_holding_its_lease_when_its_entry_runs_out_of_deliveries_then_job_is_not_killed(
    settings: Settings, receiver: Receiver
) -> None:
    container = Container(dataclasses.replace(settings, max_deliveries=1), consumer="reaper-test")
    try:
        job_id = submit(container, receiver, timeout_s=30)
        shard = container.jobs.get(TENANT, job_id).shard
        slow = RedisIndex(container.redis, consumer="slow-executor")
        slow.ensure_group(shard)
        (entry,) = slow.read_ready([shard], count=10, block_ms=100)
        container.jobs.claim(entry.member, container.clock.now_ms())  # a long callback is under way...
        time.sleep(settings.redeliver_after_ms / 1000 + 0.1)  # ...idle past redeliver_after_ms: reaped

        report = container.reaper.run(container.clock.now_ms() + 5_000)

        job = container.jobs.get(TENANT, job_id)
        assert (job.status, report.dead_lettered) == (JobStatus.RUNNING, 0)
        assert container.redis.xlen(redis_keys.dead_stream(shard)) == 0
    finally:
        container.close()
