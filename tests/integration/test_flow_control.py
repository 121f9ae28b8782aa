"""Rate and concurrency limits: never exceeded, and denied deliveries still all arrive."""

from __future__ import annotations

import dataclasses

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.index import RedisIndex
from hookline.domain.delivery import Slot
from hookline.domain.models import JobRequest, JobStatus
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from hookline.usecases.execute import Disposition
from tests.support.receiver import Receiver, Reply
from tests.support.stack import running_loops, wait_until

pytestmark = pytest.mark.integration

TENANT = "acme"


def submit_all(container: Container, receiver: Receiver, count: int, **fields: object) -> list[str]:
    return [
        container.submitter.submit(
            TENANT, JobRequest.model_validate({"url": receiver.url("/limited"), "body": str(i), **fields})
        ).job.job_id
        for i in range(count)
    ]


def all_succeeded(container: Container, job_ids: list[str]) -> bool:
    return all(container.jobs.get(TENANT, j).status is JobStatus.SUCCEEDED for j in job_ids)


def test_given_rate_limited_key_when_many_jobs_are_due_then_no_window_exceeds_the_limit(
    container: Container, receiver: Receiver
) -> None:
    limit, period_ms = 3, 1000
    job_ids = submit_all(container, receiver, 10, rate_limit={"key": "k", "limit": limit, "period_s": 1})

    with running_loops(container):
        wait_until(lambda: all_succeeded(container, job_ids), timeout_s=15, interval_s=0.2)

    assert len(receiver.requests) == 10
    starts = sorted(e.started_ms for j in job_ids for e in container.jobs.executions(TENANT, j))
    assert len(starts) == 10  # denials spent no attempt
    for t in starts:
        assert sum(1 for s in starts if t - period_ms < s <= t) <= limit
    assert starts[-1] - starts[0] >= 3 * period_ms  # 10 deliveries at 3 per second need 3 full windows


def test_given_concurrency_limited_key_when_jobs_run_then_at_most_limit_overlap(
    container: Container, receiver: Receiver
) -> None:
    receiver.script("/limited", [Reply(200, delay_s=0.3)] * 6)
    job_ids = submit_all(container, receiver, 6, max_concurrency={"key": "db", "limit": 2})

    with running_loops(container):
        wait_until(lambda: all_succeeded(container, job_ids), timeout_s=15, interval_s=0.2)

    spans = [(e.started_ms, e.finished_ms) for j in job_ids for e in container.jobs.executions(TENANT, j)]
    assert len(spans) == 6
    overlaps = max(sum(1 for s, f in spans if s <= t < f) for t, _ in spans)
    assert overlaps <= 2
    assert overlaps == 2  # the limit is reached, not just respected by running one at a time


def test_given_tenant_rate_default_when_jobs_have_no_limit_then_tenant_window_holds(
    settings: Settings, receiver: Receiver
) -> None:
    limited = Container(dataclasses.replace(settings, tenant_rate_limit_per_s=2), consumer="tenant-limited")
    try:
        job_ids = submit_all(limited, receiver, 5)
        with running_loops(limited):
            wait_until(lambda: all_succeeded(limited, job_ids), timeout_s=15, interval_s=0.2)
        starts = sorted(e.started_ms for j in job_ids for e in limited.jobs.executions(TENANT, j))
    finally:
        limited.close()

    assert len(starts) == 5
    assert all(sum(1 for s in starts if t - 1000 < s <= t) <= 2 for t in starts)
    assert starts[-1] - starts[0] >= 2000


def test_given_live_holder_when_a_duplicate_entry_of_its_job_is_deferred_then_its_slot_stays_held(
    container: Container, receiver: Receiver
) -> None:
    (job_id,) = submit_all(container, receiver, 1, max_concurrency={"key": "db", "limit": 1})
    holder = RedisIndex(container.redis, consumer="live-holder")
    holder.ensure_group(0)
    (entry,) = holder.read_ready([0], count=10, block_ms=100)
    now_ms = container.clock.now_ms()
    token = f"{job_id}:{entry.member.generation}"
    slot = Slot(TENANT, "db", token)
    assert holder.acquire_slot(slot, now_ms, 1, now_ms + 60_000).admitted
    container.jobs.claim(entry.member, now_ms)  # the holder's callback is under way
    container.index.index(entry.member, 0, now_ms, now_ms)  # ...when a duplicate entry of the job appears

    # The duplicate cannot claim while the holder's lease holds: it is deferred to the lease's end.
    assert container.executor.drain() == [Disposition.DEFERRED]

    holders = container.redis.zrange(redis_keys.concurrency_key(TENANT, "db"), 0, -1)
    assert holders == [token.encode()], "the duplicate released the live holder's slot"
