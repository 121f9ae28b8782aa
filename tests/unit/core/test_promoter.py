"""The promoter's loop: promotes in batches, sleeps precisely until the next due time, wakes on a signal."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from hookline.domain.clock import SystemClock
from hookline.domain.delivery import PromoteResult
from hookline.domain.errors import IndexUnavailable
from hookline.ports import NullMetrics
from hookline.usecases.promote import COARSE_WAIT_SLACK_MS, Promoter
from tests.fakes.clock import FrozenClock


class FakeIndex:
    """Holds due times; BLPOP-like waits advance the frozen clock (late by Redis's ~100 ms cron)."""

    def __init__(self, clock: FrozenClock, due_ms: list[int], blpop_lateness_ms: int = 90) -> None:
        self.clock = clock
        self.due_ms = sorted(due_ms)
        self.promoted_at: list[tuple[int, int]] = []  # (due, promoted at)
        self.coarse_waits: list[int] = []
        self.wake_tokens = 0
        self.blpop_lateness_ms = blpop_lateness_ms

    def promote(self, shard: int, now_ms: int, batch: int = 500) -> PromoteResult:
        count = min(batch, sum(1 for d in self.due_ms if d <= now_ms))
        ready, self.due_ms = self.due_ms[:count], self.due_ms[count:]
        self.promoted_at += [(d, now_ms) for d in ready]
        return PromoteResult(len(ready), self.due_ms[0] if self.due_ms else None)

    def wait_for_wake(self, shards: Sequence[int], timeout_ms: int) -> bool:
        self.coarse_waits.append(timeout_ms)
        if self.wake_tokens:
            self.wake_tokens -= 1
            return True
        self.clock.advance(timeout_ms + self.blpop_lateness_ms)
        return False

    def poll_wake(self, shards: Sequence[int]) -> bool:
        if self.wake_tokens:
            self.wake_tokens -= 1
            return True
        return False


def promoter(index: FakeIndex, clock: FrozenClock, batch: int = 500) -> Promoter:
    def sleep(seconds: float) -> None:
        clock.advance(max(1, round(seconds * 1000)))

    return Promoter(index, clock, [0], NullMetrics(), max_sleep_ms=1_000, batch=batch, sleep=sleep)


def test_given_jobs_due_later_when_running_then_each_promoted_on_time_never_early() -> None:
    clock = FrozenClock(10_000)
    due = [10_000, 10_400, 10_401, 11_950, 13_333]
    index = FakeIndex(clock, due)

    promoter(index, clock).run(deadline_ms=15_000)

    assert sorted(d for d, _ in index.promoted_at) == due
    lateness = [at - d for d, at in index.promoted_at]
    assert all(0 <= late <= 2 for late in lateness), lateness


def test_given_far_due_time_when_waiting_then_blocks_coarsely_and_leaves_slack_for_redis_lateness() -> None:
    clock = FrozenClock(0)
    index = FakeIndex(clock, [700])

    promoter(index, clock).run(deadline_ms=800)

    assert index.coarse_waits[0] == 700 - COARSE_WAIT_SLACK_MS
    assert index.promoted_at == [(700, 700)]


def test_given_full_batches_when_running_then_loops_without_sleeping() -> None:
    clock = FrozenClock(0)
    index = FakeIndex(clock, [0] * 1_000)

    promoter(index, clock, batch=100).run(deadline_ms=1)

    assert len(index.promoted_at) == 1_000
    assert {at for _, at in index.promoted_at} == {0}  # ten batches back to back, no sleep between them
    assert len(index.coarse_waits) == 1  # only once nothing was left


def test_given_wake_token_when_sleeping_then_returns_early_to_promote_again() -> None:
    clock = FrozenClock(0)
    index = FakeIndex(clock, [])
    index.wake_tokens = 1

    result = promoter(index, clock).tick()
    promoter(index, clock)._wait(result.next_due_ms, deadline_ms=5_000)

    assert clock.now_ms() == 0  # woken at once instead of sleeping the full second


class FlakyIndex(FakeIndex):
    """A FakeIndex whose Redis is away for the first `failures` calls to promote."""

    def __init__(self, clock: FrozenClock, due_ms: list[int], failures: int) -> None:
        super().__init__(clock, due_ms)
        self.failures = failures

    def promote(self, shard: int, now_ms: int, batch: int = 500) -> PromoteResult:
        if self.failures:
            self.failures -= 1
            raise IndexUnavailable("redis is unavailable")
        return super().promote(shard, now_ms, batch)


def test_given_redis_away_for_six_tries_when_running_then_backs_off_to_500_ms_and_promotes_after() -> None:
    clock = FrozenClock(0)
    index = FlakyIndex(clock, [100], failures=6)
    sleeps: list[int] = []

    def sleep(seconds: float) -> None:
        sleeps.append(round(seconds * 1000))
        clock.advance(max(1, round(seconds * 1000)))

    moved = Promoter(index, clock, [0], NullMetrics(), max_sleep_ms=1_000, sleep=sleep).run(deadline_ms=5_000)

    assert moved == 1
    assert sleeps[:6] == [100, 200, 400, 500, 500, 500]
    assert index.promoted_at == [(100, 2_200)]  # the first try after Redis came back


class BlockingWakeIndex:
    """Due times and wake lists per shard; waits block for real (a condition), as BLPOP does."""

    def __init__(self, shards: int) -> None:
        self.cond = threading.Condition()
        self.tokens = dict.fromkeys(range(shards), 0)
        self.due_ms: dict[int, list[int]] = {shard: [] for shard in range(shards)}
        self.promoted_at: list[tuple[int, int]] = []
        self.waited_on: list[tuple[int, ...]] = []
        self.fail_shard: int | None = None

    def submit(self, shard: int, due_ms: int) -> None:
        """Indexes a due time and pushes a wake token, as index.lua does for an earlier due time."""
        with self.cond:
            self.due_ms[shard].append(due_ms)
            self.tokens[shard] += 1
            self.cond.notify_all()

    def promote(self, shard: int, now_ms: int, batch: int = 500) -> PromoteResult:
        with self.cond:
            ready = [d for d in self.due_ms[shard] if d <= now_ms]
            self.due_ms[shard] = [d for d in self.due_ms[shard] if d > now_ms]
            self.promoted_at += [(d, now_ms) for d in ready]
            left = self.due_ms[shard]
            return PromoteResult(len(ready), min(left) if left else None)

    def wait_for_wake(self, shards: Sequence[int], timeout_ms: int) -> bool:
        self.waited_on.append(tuple(shards))
        if self.fail_shard in shards:
            raise RuntimeError("a bug in the wait")
        with self.cond:
            if not self.cond.wait_for(lambda: any(self.tokens[s] for s in shards), timeout_ms / 1000):
                return False
            shard = next(s for s in shards if self.tokens[s])
            self.tokens[shard] -= 1
            return True

    def poll_wake(self, shards: Sequence[int]) -> bool:
        raise AssertionError("the promoter of several shards waits per shard, it does not poll")


def test_given_several_shards_when_a_sooner_job_arrives_on_one_then_woken_and_promoted_on_time() -> None:
    clock = SystemClock()
    index = BlockingWakeIndex(shards=3)
    start = clock.now_ms()
    index.submit(0, start + 10_000)  # far: the promoter would sleep its whole max_sleep_ms
    promoter = Promoter(index, clock, [0, 1, 2], NullMetrics(), max_sleep_ms=5_000)
    runner = threading.Thread(target=promoter.run, args=(start + 1_200,))
    runner.start()

    time.sleep(0.2)
    soon = clock.now_ms() + 300
    index.submit(2, soon)
    runner.join(timeout=10)

    (late_ms,) = [at - due for due, at in index.promoted_at if due == soon]
    assert 0 <= late_ms <= 50
    # Every wait named one shard: one command over several would span slots (refused by a cluster).
    assert {len(shards) for shards in index.waited_on} == {1}
    assert {shards[0] for shards in index.waited_on} == {0, 1, 2}
    assert not [t for t in threading.enumerate() if t.name.startswith("wake-")]


def test_given_several_shards_when_a_waiter_meets_a_bug_then_the_run_raises_it() -> None:
    clock = SystemClock()
    index = BlockingWakeIndex(shards=2)
    index.fail_shard = 1
    promoter = Promoter(index, clock, [0, 1], NullMetrics(), max_sleep_ms=200)

    with pytest.raises(RuntimeError, match="a bug in the wait"):
        promoter.run(clock.now_ms() + 2_000)
    assert not [t for t in threading.enumerate() if t.name.startswith("wake-")]
