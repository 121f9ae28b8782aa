"""Which shards a promoter tick visits: those that may have something due, the woken ones, all at a sweep;
and a shard whose Redis fails does not keep a tick from the others."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from hookline.domain.clock import SystemClock
from hookline.domain.delivery import PromoteResult
from hookline.domain.errors import IndexUnavailable
from hookline.ports import NullMetrics
from hookline.usecases.promote import DueShards
from hookline.usecases.wake import ShardWaiters
from tests.fakes.index import FakeIndex
from tests.unit.usecases.world import T0, World, member

SWEEP_MS = 1_000


def test_given_first_tick_then_every_shard_is_visited_and_again_each_sweep_interval() -> None:
    shards = DueShards([0, 1, 2], SWEEP_MS)

    assert shards.to_visit(T0, set()) is None
    for shard in (0, 1, 2):
        shards.saw(shard, None, False, T0)
    assert shards.to_visit(T0 + SWEEP_MS - 1, set()) == []
    assert shards.to_visit(T0 + SWEEP_MS, set()) is None


def test_given_known_due_times_then_only_shards_due_more_than_a_batch_woken_or_unknown_are_visited() -> None:
    shards = DueShards([0, 1, 2, 3, 4], SWEEP_MS)
    assert shards.to_visit(T0, set()) is None
    shards.saw(0, T0 + 300, False, T0)  # due at +300
    shards.saw(1, None, False, T0)  # nothing due
    shards.saw(2, T0 + 900, False, T0)
    shards.saw(3, T0 + 900, True, T0)  # had more than a batch due
    # Shard 4 is unknown (its visit failed).

    assert shards.to_visit(T0 + 299, set()) == [3, 4]
    assert shards.to_visit(T0 + 300, {1}) == [0, 1, 3, 4]
    assert shards.earliest() == T0
    shards.saw(3, T0 + 900, False, T0 + 300)
    assert shards.earliest() == T0 + 300


def test_given_a_shard_failing_when_ticked_then_the_others_are_promoted_and_the_failure_raised() -> None:
    world = World(shards=3)
    # A job's shard follows from its random id: submit until every shard holds one (12 jobs leave one
    # shard empty about once in 40 runs).
    jobs = [world.submit(delay_s=1) for _ in range(12)]
    while {job.shard for job in jobs} != {0, 1, 2} and len(jobs) < 200:
        jobs.append(world.submit(delay_s=1))
    assert {job.shard for job in jobs} == {0, 1, 2}
    world.clock.advance(1_000)
    redis = FailingShard(world.memory, "promoter", metrics=world.metrics)
    promoter = world.promoter(redis=redis)

    with pytest.raises(IndexUnavailable):
        promoter.tick()

    promoted = {m for shard in (0, 2) for m in world.state(shard)["inflight"]}
    assert promoted == {member(job) for job in jobs if job.shard != 1}
    assert world.metrics.counts["Promoted"] == len(promoted)
    redis.down = False
    assert promoter.tick().moved == sum(1 for job in jobs if job.shard == 1)


class FailingShard(FakeIndex):
    """The promoter's Redis, with the node serving shard 1 refusing while down."""

    down = True

    def promote(self, shard: int, now_ms: int, batch: int = 500) -> PromoteResult:
        """Refuses shard 1 while down."""
        if shard == 1 and self.down:
            raise IndexUnavailable("shard 1's node is down")
        return super().promote(shard, now_ms, batch)


class TokenOn:
    """Wake lists where only `shard` has a token (once); the others' waits time out at once."""

    def __init__(self, shard: int) -> None:
        self.shard = shard
        self.taken = threading.Event()

    def wait_for_wake(self, shards: Sequence[int], timeout_ms: int) -> bool:
        """Takes the one token, else waits a little (a BLPOP that timed out)."""
        if list(shards) == [self.shard] and not self.taken.is_set():
            self.taken.set()
            return True
        time.sleep(0.001)
        return False


def test_given_a_token_on_one_shard_when_waiting_then_the_waiters_hand_over_that_shard_once() -> None:
    clock = SystemClock()
    waiters = ShardWaiters(TokenOn(2), clock, NullMetrics(), [0, 1, 2, 3], max_block_ms=10)  # type: ignore[arg-type]
    waiters.start(clock.now_ms() + 60_000)
    try:
        assert waiters.wait(30_000)
        assert waiters.take_woken() == {2}
        assert waiters.take_woken() == set()
    finally:
        waiters.stop()
