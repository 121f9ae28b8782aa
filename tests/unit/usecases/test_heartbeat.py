"""The executor's heartbeat on fakes: entries kept fresh, leases renewed when due, and renewals that fail.

Heartbeat's steps (beat_entries, renew_leases) are driven by hand on the frozen clock; the last tests run its
threads for real, with a 5 ms beat, inside an executor, and wait (bounded) for what they must do.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from hookline.domain.callbacks import CallbackRequest, CallbackResult
from hookline.domain.leases import LeaseTiming
from hookline.domain.models import Job, JobStatus
from hookline.usecases.execute import Disposition
from hookline.usecases.heartbeat import Heartbeat, Hold
from tests.fakes.callbacks import ok
from tests.fakes.index import FakeIndex
from tests.fakes.keys import StaticSecrets
from tests.unit.usecases.world import LEASE_MS, REDELIVER_AFTER_MS, T0, TIMING, World, idle_state, member

RENEW_BELOW_MS = TIMING.renew_below_ms
DUE_FOR_RENEWAL_MS = LEASE_MS - RENEW_BELOW_MS + 1  # this long after a claim, less than renew_below is left


def heartbeat(world: World) -> Heartbeat:
    """Returns a heartbeat over the consumer "executor"'s stream and the world's store (threads not run)."""
    return Heartbeat(world.redis("executor"), world.store, world.clock, TIMING, world.metrics)


def read_and_claim(world: World, beat: Heartbeat, count: int = 1) -> list[tuple[Hold, Job]]:
    """Submits count jobs, reads them as "executor", tracks and claims each; returns (hold, claimed job)."""
    for _ in range(count):
        world.submit()
    redis = world.redis("executor")
    redis.ensure_group(0)
    held = []
    for one in redis.read_ready([0], 100, 0):
        hold = beat.track(one)
        job = world.store.claim(one.member, world.clock.now_ms()).job
        beat.claimed(hold, job)
        held.append((hold, job))
    return held


def take_over(world: World, job: Job) -> Job:
    """Lets another executor claim job once its lease has run out; returns its claim."""
    assert job.lease_expires_at_ms is not None
    world.clock.set(max(world.clock.now_ms(), job.lease_expires_at_ms + 1))
    return world.store.claim(job.member(), world.clock.now_ms()).job


# Entries.


def test_given_tracked_entry_when_beaten_then_not_redelivered_and_once_released_it_is(world: World) -> None:
    beat = heartbeat(world)
    ((hold, job),) = read_and_claim(world, beat)

    world.clock.advance(REDELIVER_AFTER_MS)
    beat.beat_entries()
    world.reap()
    assert world.state()["pending"] == [(member(job), "executor", 1)]

    beat.release(hold)
    world.clock.advance(REDELIVER_AFTER_MS)
    beat.beat_entries()
    world.reap()
    assert world.state()["pending"] == []
    assert world.metrics.counts["Redelivered"] == 1


def test_given_nothing_tracked_when_beaten_then_redis_is_not_called(world: World) -> None:
    redis = world.redis("executor")
    beat = Heartbeat(redis, world.store, world.clock, TIMING, world.metrics)

    beat.beat_entries()

    assert redis.faults.calls("heartbeat") == 0


# Leases.


def test_given_lease_with_more_than_renew_below_left_then_not_renewed_until_it_is_due(world: World) -> None:
    beat = heartbeat(world)
    ((hold, job),) = read_and_claim(world, beat)

    world.clock.advance(DUE_FOR_RENEWAL_MS - 1)
    beat.renew_leases()
    assert world.store.faults.calls("renew_lease") == 0

    world.clock.advance(1)
    beat.renew_leases()

    renewed_to = world.clock.now_ms() + LEASE_MS
    assert world.job(job).lease_expires_at_ms == renewed_to
    assert (hold.lease_expires_at_ms, hold.lost) == (renewed_to, False)
    assert world.metrics.counts["LeaseRenewed"] == 1


def test_given_renewal_refused_because_another_attempt_took_over_then_the_hold_is_lost_and_left_alone(
    world: World,
) -> None:
    beat = heartbeat(world)
    ((hold, job),) = read_and_claim(world, beat)
    thief = take_over(world, job)

    beat.renew_leases()
    beat.renew_leases()

    assert hold.lost
    assert world.metrics.counts["LeaseLost"] == 1
    assert world.store.faults.calls("renew_lease") == 1  # a lost hold is not renewed again
    assert world.job(job) == thief  # the new attempt's lease is untouched


def test_given_renewal_fails_for_dynamodb_then_the_hold_keeps_its_lease_and_the_next_beat_renews(
    world: World,
) -> None:
    beat = heartbeat(world)
    ((hold, job),) = read_and_claim(world, beat)
    world.clock.advance(DUE_FOR_RENEWAL_MS)
    world.store.faults.fail_next("renew_lease")

    beat.renew_leases()
    assert (hold.lease_expires_at_ms, hold.lost) == (job.lease_expires_at_ms, False)
    assert world.job(job).lease_expires_at_ms == job.lease_expires_at_ms
    assert world.metrics.counts["HeartbeatErrors"] == 1

    beat.renew_leases()
    assert hold.lease_expires_at_ms == world.clock.now_ms() + LEASE_MS
    assert world.job(job).lease_expires_at_ms == hold.lease_expires_at_ms


def test_given_one_renewal_fails_then_the_other_leases_due_are_still_renewed_in_the_same_beat(
    world: World,
) -> None:
    beat = heartbeat(world)
    (first, _), (second, other) = read_and_claim(world, beat, count=2)
    world.clock.advance(DUE_FOR_RENEWAL_MS)
    world.store.faults.fail_next("renew_lease")  # the first hold's renewal (a throttled partition)

    beat.renew_leases()

    assert world.job(other).lease_expires_at_ms == world.clock.now_ms() + LEASE_MS
    assert second.lease_expires_at_ms == world.clock.now_ms() + LEASE_MS
    assert not first.lost
    assert (world.metrics.counts["HeartbeatErrors"], world.metrics.counts["LeaseRenewed"]) == (1, 1)


class StallingRenewals:
    """The world's store, with the renewals of one job blocking until released (a stalled DynamoDB call)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.stalled_job_id = ""
        self.release = threading.Event()
        self.timeouts_ms: dict[str, int | None] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def renew_lease(self, job: Job, lease_expires_at_ms: int, timeout_ms: int | None = None) -> None:
        """Blocks the stalled job's renewal until released, then renews as the store does."""
        self.timeouts_ms[job.job_id] = timeout_ms
        if job.job_id == self.stalled_job_id:
            self.release.wait(timeout=30)
        self._store.renew_lease(job, lease_expires_at_ms, timeout_ms=timeout_ms)


def test_given_one_renewal_stalls_then_the_other_leases_due_are_renewed_before_they_run_out(
    world: World,
) -> None:
    store = StallingRenewals(world.store)
    beat = Heartbeat(world.redis("executor"), store, world.clock, FAST, world.metrics)
    (stalled, stalled_job), *others = read_and_claim(world, beat, count=3)
    store.stalled_job_id = stalled_job.job_id  # the first in line, so it would hold up the others
    world.clock.advance(DUE_FOR_RENEWAL_MS)
    renewed_to = world.clock.now_ms() + LEASE_MS
    beating = threading.Thread(target=beat.renew_leases, daemon=True)
    try:
        beating.start()

        # Before the fix the renewals ran one after another behind the stalled one: these never came.
        wait_until(lambda: all(world.job(job).lease_expires_at_ms == renewed_to for _, job in others))
        assert all(hold.lease_expires_at_ms == renewed_to for hold, _ in others)
        assert world.job(stalled_job).lease_expires_at_ms == stalled_job.lease_expires_at_ms
        # Each call may take no longer than its lease has left, less the margin.
        lease_left_ms = LEASE_MS - DUE_FOR_RENEWAL_MS
        assert set(store.timeouts_ms.values()) == {lease_left_ms - FAST.margin_ms}
    finally:
        store.release.set()
    beating.join(timeout=5)
    wait_until(lambda: world.job(stalled_job).lease_expires_at_ms == renewed_to)
    wait_until(lambda: not stalled.renewing)
    assert world.metrics.counts["LeaseRenewed"] == 3


def test_given_a_renewal_still_in_flight_when_the_next_beat_comes_then_it_is_not_sent_twice(
    world: World,
) -> None:
    store = StallingRenewals(world.store)
    beat = Heartbeat(world.redis("executor"), store, world.clock, FAST, world.metrics)
    ((hold, job),) = read_and_claim(world, beat)
    store.stalled_job_id = job.job_id
    world.clock.advance(DUE_FOR_RENEWAL_MS)
    try:
        beat.renew_leases()  # returns after one (5 ms) beat, the renewal still stalled
        beat.renew_leases()

        assert hold.renewing
        assert world.store.faults.calls("renew_lease") == 0
    finally:
        store.release.set()
    wait_until(lambda: not hold.renewing)
    assert world.store.faults.calls("renew_lease") == 1


# The heartbeat's threads inside an executor.

FAST = LeaseTiming(
    lease_ms=LEASE_MS,
    margin_ms=TIMING.margin_ms,
    renew_below_ms=RENEW_BELOW_MS,
    heartbeat_ms=5,
    redeliver_after_ms=REDELIVER_AFTER_MS,
    recover_every_ms=TIMING.recover_every_ms,
)


def wait_until(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    """Polls condition every millisecond until it holds; fails after timeout_s."""
    give_up = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < give_up, "the heartbeat did not act in time"
        time.sleep(0.001)


class ActingSecrets(StaticSecrets):
    """Runs an action at the secrets lookup, after the claim and before the callback starts."""

    def __init__(self, action: Callable[[], None]) -> None:
        super().__init__()
        self._action = action

    def secrets_for(self, tenant: str) -> list[str]:
        """Runs the action, then returns the fixed secrets."""
        self._action()
        return super().secrets_for(tenant)


def test_given_another_attempt_took_over_before_the_callback_when_the_heartbeat_finds_it_then_no_callback(
    world: World,
) -> None:
    job = world.submit()
    seen: dict[str, Job] = {}

    def stalled() -> None:  # this attempt stalls past its lease; another executor claims the job
        seen["thief"] = take_over(world, world.job(job))
        wait_until(lambda: world.metrics.counts["LeaseLost"] == 1)

    executor = world.executor(timing=FAST, secrets=ActingSecrets(stalled))

    assert executor.drain() == [Disposition.LOST_HOLD]

    assert world.callbacks.requests == []
    assert world.job(job) == seen["thief"]
    assert world.state() == idle_state()  # the entry is acknowledged: the new attempt owns the outcome


def test_given_a_renewal_failing_once_during_an_attempt_then_the_next_beat_renews_and_the_attempt_ends(
    world: World,
) -> None:
    job = world.submit()
    leases: list[int | None] = []

    def renewal_due() -> None:
        world.store.faults.fail_next("renew_lease")
        world.clock.advance(DUE_FOR_RENEWAL_MS)
        wait_until(lambda: world.metrics.counts["LeaseRenewed"] == 1)

    def callback(request: CallbackRequest) -> CallbackResult:
        leases.append(world.job(job).lease_expires_at_ms)
        return ok()

    world.callbacks.then(callback)
    executor = world.executor(timing=FAST, secrets=ActingSecrets(renewal_due))

    assert executor.drain() == [Disposition.SUCCEEDED]

    assert leases == [T0 + DUE_FOR_RENEWAL_MS + LEASE_MS]
    assert world.metrics.counts["HeartbeatErrors"] == 1
    assert world.job(job).status is JobStatus.SUCCEEDED
    assert world.state() == idle_state()


def test_given_redis_unavailable_for_a_beat_then_the_heartbeat_goes_on_beating(world: World) -> None:
    job = world.submit()
    roles: dict[str, FakeIndex] = {}

    def beats_fail_once() -> None:
        redis = roles["executor"]
        redis.faults.fail_next("heartbeat")
        before = redis.faults.calls("heartbeat")
        wait_until(lambda: redis.faults.calls("heartbeat") >= before + 2)

    executor = world.executor(timing=FAST, secrets=ActingSecrets(beats_fail_once))
    roles["executor"] = world.executor_redis()

    assert executor.drain() == [Disposition.SUCCEEDED]

    assert world.metrics.counts["HeartbeatErrors"] == 1
    assert world.job(job).status is JobStatus.SUCCEEDED
