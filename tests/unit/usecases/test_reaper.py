"""Reaper on fakes: re-delivery of crashed executors' entries, dead-lettering, and rebuilding lost indexes.

An executor "crashes" by reading entries and doing nothing more (they stay pending under its consumer).
Entries idle for REDELIVER_AFTER_MS are re-delivered; the MAX_DELIVERIES-th delivery is the last. The
reaper's sleeps (its back-off from a Redis blip, watch's interval) spend the frozen clock.
"""

from __future__ import annotations

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.domain.callbacks import CallbackRequest, CallbackResult
from hookline.domain.delivery import Finish
from hookline.domain.models import Job, JobStatus
from hookline.usecases.execute import Disposition
from hookline.usecases.reap import ReapReport
from tests.fakes.callbacks import ok
from tests.unit.usecases.world import (
    GROUP,
    LEASE_MS,
    MAX_DELIVERIES,
    REDELIVER_AFTER_MS,
    T0,
    World,
    entry,
    idle_state,
    member,
)

READY = redis_keys.ready_stream(0)


def crash_reading(world: World, consumer: str) -> None:
    """Makes consumer read every ready entry and then die holding them."""
    doomed = world.redis(consumer)
    doomed.ensure_group(0)
    doomed.read_ready([0], 100, 0)


def exhaust(world: World) -> None:
    """Lets MAX_DELIVERIES - 1 executors crash on the ready entries in turn, each re-delivered after it."""
    for n in range(MAX_DELIVERIES - 1):
        crash_reading(world, f"doomed{n}")
        world.clock.advance(REDELIVER_AFTER_MS)
        world.reap()
    crash_reading(world, "doomed-last")
    world.clock.advance(REDELIVER_AFTER_MS)


def test_given_entry_of_a_crashed_executor_when_idle_past_the_lease_then_redelivered(world: World) -> None:
    job = world.submit()
    crash_reading(world, "doomed")

    world.clock.advance(REDELIVER_AFTER_MS - 1)
    assert world.reaper().run(world.clock.now_ms() + 60_000).redelivered == 0
    assert world.state()["pending"] == [(member(job), "doomed", 1)]
    world.clock.advance(1)
    report = world.reaper().run(world.clock.now_ms() + 60_000)

    assert (report.redelivered, report.dead_lettered, report.reindexed) == (1, 0, 0)
    assert world.state() == idle_state(
        ready=[entry(job.member(), 1)], inflight={member(job): T0 + REDELIVER_AFTER_MS}
    )
    assert world.drain() == [Disposition.SUCCEEDED]
    assert world.state() == idle_state()


def test_given_a_readd_grace_when_reaped_then_an_idle_entry_is_left_to_the_readers_until_it_passes(
    world: World,
) -> None:
    job = world.submit()
    crash_reading(world, "doomed")
    grace_ms = 3_000

    world.clock.advance(REDELIVER_AFTER_MS + grace_ms - 1)  # idle: a reader's in-place claim comes first
    assert world.reaper(readd_grace_ms=grace_ms).run(world.clock.now_ms() + 60_000).redelivered == 0
    assert world.state()["pending"] == [(member(job), "doomed", 1)]
    world.clock.advance(1)

    assert world.reaper(readd_grace_ms=grace_ms).run(world.clock.now_ms() + 60_000).redelivered == 1


def test_given_entry_redelivered_max_times_when_reaped_then_job_dead_lettered(world: World) -> None:
    job = world.submit()
    exhaust(world)

    report = world.reaper().run(world.clock.now_ms() + 60_000)

    assert report.dead_lettered == 1
    after = world.job(job)
    assert (after.status, after.generation, after.attempt) == (JobStatus.DEAD, 1, 0)
    assert after.last_error == "deliveries_exhausted"
    now = world.clock.now_ms()
    assert world.state() == idle_state(
        dead=[{"m": member(job), "reason": "deliveries_exhausted", "at": str(now)}]
    )
    assert world.callbacks.requests == []


def test_given_exhausted_entry_of_a_job_that_moved_on_when_reaped_then_only_acknowledged(
    world: World,
) -> None:
    job = world.submit()
    assert world.drain() == [Disposition.SUCCEEDED]
    world.memory.add_entry(READY, entry(job.member(), MAX_DELIVERIES - 1))  # a late duplicate, re-delivered
    crash_reading(world, "doomed")
    world.clock.advance(REDELIVER_AFTER_MS)

    report = world.reaper().run(world.clock.now_ms() + 60_000)

    assert report.dead_lettered == 0
    assert world.job(job).status is JobStatus.SUCCEEDED
    assert world.state() == idle_state()


def test_given_dynamodb_down_when_dead_lettering_then_entry_kept_and_dead_lettered_next_run(
    world: World,
) -> None:
    job = world.submit()
    exhaust(world)
    world.store.faults.fail_next("mark_dead")

    world.reaper().run(world.clock.now_ms() + 60_000)  # the failed step is retried: the run goes on

    assert world.metrics.counts["ReapStepFailed"] == 1
    assert world.job(job).status is JobStatus.SCHEDULED
    assert [(m, consumer) for m, consumer, _ in world.state()["pending"]] == [(member(job), "reaper")]
    world.clock.advance(REDELIVER_AFTER_MS)
    assert world.reaper().run(world.clock.now_ms() + 60_000).dead_lettered == 1
    assert world.job(job).status is JobStatus.DEAD
    assert len(world.state()["dead"]) == 1
    assert world.state()["pending"] == []


def test_given_redis_fails_the_dead_letter_after_the_job_was_marked_dead_then_a_later_pass_writes_it(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    job = world.submit()
    exhaust(world)
    redis = world.redis("reaper")
    redis.faults.fail_next("dead_letter")

    report = world.reaper(redis=redis).run(world.clock.now_ms() + 60_000)

    assert report.dead_lettered == 0
    assert world.job(job).status is JobStatus.DEAD
    assert world.state()["dead"] == []
    assert [(m, consumer) for m, consumer, _ in world.state()["pending"]] == [(member(job), "reaper")]
    assert world.metrics.counts["DeadFeedFailed"] == 1
    assert "writing its dead-stream entry failed, a later pass writes it" in caplog.text
    world.clock.advance(REDELIVER_AFTER_MS)

    assert world.reaper(redis=redis).run(world.clock.now_ms() + 60_000).dead_lettered == 1

    now = world.clock.now_ms()
    assert world.state() == idle_state(
        dead=[{"m": member(job), "reason": "deliveries_exhausted", "at": str(now)}]
    )
    assert world.job(job).status is JobStatus.DEAD
    assert world.metrics.counts["DeadLettered"] == 1


def test_given_last_delivery_in_flight_when_its_entry_is_exhausted_then_the_attempt_keeps_the_job(
    world: World,
) -> None:
    job = world.submit(timeout_s=30)
    for n in range(MAX_DELIVERIES - 1):
        crash_reading(world, f"doomed{n}")
        world.clock.advance(REDELIVER_AFTER_MS)
        world.reap()
    seen: dict[str, object] = {}

    def slow(request: CallbackRequest) -> CallbackResult:
        # The entry's beats stopped (a Redis blip) while the lease, claimed just now, still runs.
        world.clock.advance(REDELIVER_AFTER_MS)
        seen["report"] = world.reaper().run(world.clock.now_ms() + 60_000)
        seen["during"] = world.job(job)
        return ok()

    world.callbacks.then(slow)
    claimed_at = world.clock.now_ms()

    assert world.drain() == [Disposition.SUCCEEDED]

    report, during = seen["report"], seen["during"]
    assert isinstance(report, ReapReport) and isinstance(during, Job)
    assert report.dead_lettered == 0
    # While the reaper ran, the attempt still held the job under its lease: it was not killed.
    assert (during.status, during.attempt, during.lease_expires_at_ms) == (
        JobStatus.RUNNING,
        1,
        claimed_at + LEASE_MS,
    )
    after = world.job(job)
    assert (after.status, after.attempt) == (JobStatus.SUCCEEDED, 1)
    assert world.state() == idle_state()  # the exhausted entry was only acknowledged


def test_given_malformed_entry_pending_when_reaped_then_dead_lettered_and_the_other_entries_recovered(
    world: World,
) -> None:
    world.executor()  # the consumer group exists
    world.memory.add_entry(READY, {"d": "0"})  # no member: written by something else, or cut short
    job = world.submit()
    world.memory.read_raw(READY, GROUP, "doomed")  # an executor that died right after its read
    world.clock.advance(REDELIVER_AFTER_MS)

    report = world.reaper().run(world.clock.now_ms() + 60_000)

    assert (report.redelivered, report.malformed, report.reconcile_complete) == (1, 1, {0: True})
    now = world.clock.now_ms()
    assert world.state() == idle_state(
        ready=[entry(job.member(), 1)],
        inflight={member(job): now},
        dead=[{"m": "", "reason": "malformed_entry", "at": str(now)}],
    )
    assert world.metrics.counts["MalformedEntries"] == 1
    assert world.drain() == [Disposition.SUCCEEDED]


def test_given_redis_lost_everything_when_reaped_then_every_live_job_indexed_again(world: World) -> None:
    ready, later = world.submit(), world.submit(delay_s=60)
    running = world.submit()
    claim = world.store.claim(running.member(), T0)  # ...by an executor that will be lost with Redis
    done = world.submit()
    world.store.finish(
        world.store.claim(done.member(), T0).job, Finish(JobStatus.SUCCEEDED, 200, None), [], T0
    )
    world.memory.flushall()

    report = world.reaper().run(T0 + 60_000)

    assert (report.live_seen, report.reindexed, report.reconcile_complete) == (3, 3, {0: True})
    lease = claim.job.lease_expires_at_ms
    assert lease is not None
    assert world.state() == idle_state(
        ready=[entry(ready.member())],
        inflight={member(ready): T0},
        due={member(later): T0 + 60_000, member(running): lease + 1},
        wake=1,
    )
    assert world.reaper().run(T0 + 60_000).reindexed == 0
    assert world.drain() == [Disposition.SUCCEEDED]


def test_given_more_live_jobs_than_a_page_when_reconciled_then_all_seen(world: World) -> None:
    jobs = [world.submit(delay_s=10) for _ in range(230)]
    world.memory.flushall()

    report = world.reaper().run(T0 + 60_000)

    assert (report.live_seen, report.reindexed) == (230, 230)
    assert set(world.state()["due"]) == {member(j) for j in jobs}


def test_given_deadline_passed_when_reaped_then_nothing_is_done_and_no_shard_reported(world: World) -> None:
    world.submit()
    world.memory.flushall()

    report = world.reaper().run(T0)

    assert report == ReapReport()
    assert world.state() == idle_state()


# Redis failing in the reaper's loops.


def test_given_redis_blip_mid_run_when_reaping_then_it_backs_off_and_reaps_the_shard_again(
    world: World,
) -> None:
    job = world.submit()
    crash_reading(world, "doomed")
    world.clock.advance(REDELIVER_AFTER_MS)
    redis = world.redis("reaper")
    redis.faults.fail("redeliver", on_call=1, times=2)
    start = world.clock.now_ms()

    report = world.reaper(redis).run(start + 60_000)

    assert (report.redelivered, report.reconcile_complete) == (1, {0: True})
    assert world.metrics.counts["IndexUnavailable"] == 2
    assert world.clock.now_ms() == start + 100 + 200  # backed off 100 ms, then 200 ms
    assert world.state() == idle_state(ready=[entry(job.member(), 1)], inflight={member(job): start + 300})


def test_given_redis_down_until_the_deadline_when_reaping_then_it_returns_at_the_deadline_incomplete(
    world: World,
) -> None:
    job = world.submit()
    crash_reading(world, "doomed")
    world.clock.advance(REDELIVER_AFTER_MS)
    redis = world.redis("reaper")
    redis.faults.fail("ensure_group", on_call=1, times=1_000)
    deadline = world.clock.now_ms() + 5_000

    report = world.reaper(redis).run(deadline)

    assert (report.redelivered, report.reconcile_complete) == (0, {0: False})
    assert world.clock.now_ms() == deadline  # the last back-off is cut short at the deadline
    # 100 + 200 + 400 + eight times 500 + the last 300 ms: twelve tries, then the deadline.
    assert world.metrics.counts["IndexUnavailable"] == 12
    assert world.state()["pending"] == [(member(job), "doomed", 1)]


def test_given_redis_flushed_while_watching_then_the_shard_is_rebuilt_at_the_next_check(world: World) -> None:
    later = world.submit(delay_s=60)
    redis = world.redis("reaper")
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        if not slept:
            world.memory.flushall()  # a fail-over to an empty replica, between two checks
            redis.faults.fail_next("marks")  # and the next check's first read meets the fail-over
        slept.append(seconds)
        world.sleep(seconds)

    report = world.reaper(redis, sleep=sleep).watch(T0 + 3_000)

    assert report.rebuilt == [0, 0]  # the first pass (a new Redis), then after the flush
    assert report.reindexed == 1
    assert world.state()["due"] == {member(later): T0 + 60_000}
    assert world.metrics.counts["IndexUnavailable"] == 1
    assert world.clock.now_ms() == T0 + 3_000
    assert slept[:2] == [1.0, 0.1]  # the first interval, then the back-off from the failed check
