"""Reconciliation: a run reads only what can be overdue; a Redis that lost its state is rebuilt at once."""

from __future__ import annotations

import threading
import time

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.domain import constants
from hookline.domain.models import JobRequest, JobStatus
from hookline.plumbing.wiring import Container
from hookline.usecases.reap import ReapReport
from tests.support.receiver import Receiver
from tests.support.stack import wait_until

pytestmark = pytest.mark.integration

TENANT = "acme"


def submit(container: Container, receiver: Receiver, **fields: object) -> str:
    request = JobRequest.model_validate({"url": receiver.url(), "body": "x", **fields})
    return container.submitter.submit(TENANT, request).job.job_id


def reap(container: Container) -> ReapReport:
    return container.reaper.run(container.clock.now_ms() + 5_000)


def in_redis(container: Container) -> int:
    return int(
        container.redis.zcard(redis_keys.due_key(0)) + container.redis.zcard(redis_keys.inflight_key(0))
    )


def test_given_redis_keeps_its_state_when_reaped_then_only_what_can_be_overdue_is_read_and_flush_rebuilds(
    container: Container, receiver: Receiver
) -> None:
    later = [submit(container, receiver, delay_s=3_600) for _ in range(5)]
    now = [submit(container, receiver) for _ in range(3)]  # due: in the ready stream, not yet delivered
    first = reap(container)  # Redis never had a rebuild: everything is read once

    normal = reap(container)
    container.redis.flushall()
    after_flush = reap(container)
    next_normal = reap(container)

    seen = [(r.live_seen, r.reindexed) for r in (first, normal, after_flush, next_normal)]
    assert seen == [(8, 0), (3, 0), (8, 8), (3, 0)]
    assert [r.rebuilt for r in (first, normal, after_flush, next_normal)] == [[0], [], [0], []]
    assert in_redis(container) == len(later) + len(now)
    assert all(report.reconcile_complete == {0: True} for report in (first, normal, after_flush, next_normal))


def test_given_in_flight_member_older_than_the_longest_lease_when_reaped_then_it_counts_as_missing(
    container: Container, receiver: Receiver
) -> None:
    job_id = submit(container, receiver)
    job = container.jobs.get(TENANT, job_id)
    longest_lease_ms = constants.LONGEST_ATTEMPT_MS
    reap(container)
    # Its entry is lost (a consumer deleted with it pending, a partial loss): its in-flight member stays.
    ((entry_id, _),) = container.redis.xrange(redis_keys.ready_stream(0))
    container.redis.xdel(redis_keys.ready_stream(0), entry_id)
    stale_ms = container.clock.now_ms() - longest_lease_ms - 1_000
    container.redis.zadd(redis_keys.inflight_key(0), {job.member().encode(): stale_ms})

    report = reap(container)

    assert report.reindexed == 1
    assert report.rebuilt == []
    entries = container.redis.xrange(redis_keys.ready_stream(0))
    assert [fields[b"m"].decode() for _, fields in entries] == [job.member().encode()]
    assert container.redis.zscore(redis_keys.inflight_key(0), job.member().encode()) > stale_ms


def test_given_reaper_watching_when_redis_is_flushed_then_in_flight_jobs_are_indexed_again_within_a_second(
    container: Container, receiver: Receiver
) -> None:
    job_ids = [submit(container, receiver) for _ in range(3)]
    later = submit(container, receiver, delay_s=3_600)
    deadline_ms = container.clock.now_ms() + 6_000
    reports: list[ReapReport] = []
    watcher = threading.Thread(
        target=lambda: reports.append(container.reaper.watch(deadline_ms)), daemon=True
    )
    watcher.start()
    time.sleep(1.5)

    flushed_at = time.monotonic()
    container.redis.flushall()
    wait_until(lambda: in_redis(container) == 4, timeout_s=4, interval_s=0.01)
    recovered_s = time.monotonic() - flushed_at
    watcher.join(timeout=10)

    assert recovered_s < 1.5, f"re-indexed {recovered_s:.2f} s after the flush"
    (report,) = reports
    assert report.rebuilt == [0, 0]  # the first pass (no rebuild yet), then the flush
    assert all(container.jobs.get(TENANT, j).status is JobStatus.SCHEDULED for j in [*job_ids, later])
