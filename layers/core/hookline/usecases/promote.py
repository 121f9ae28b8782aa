"""Promoting due jobs onto the ready stream, sleeping precisely until the next due time in between.

The promoter works shard by shard: each shard's promotion is one script on that shard's keys, and while it
sleeps it waits on each shard's wake list separately (one command cannot span shards: on a Redis Cluster
they live on different nodes). With one shard its own thread blocks on the list; with several, a waiter
thread per shard does (usecases/wake.py) and the loop waits on their common signal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from hookline.domain import constants
from hookline.domain.delivery import TickResult
from hookline.domain.errors import IndexUnavailable
from hookline.ports import Clock, CronPass, DueIndex, MetricsSink
from hookline.usecases.outage import Outage
from hookline.usecases.wake import ShardWaiters

# Redis checks blocking timeouts on its ~100 ms cron, so BLPOP may wake up to that late: wait coarsely in
# BLPOP until this close to the due time, then finely in short sleeps that still take wake tokens.
COARSE_WAIT_SLACK_MS = 150
FINE_SLEEP_MS = 2


class Promoter:
    """Moves due members of every shard onto the ready streams; leader-less (promote.lua is atomic)."""

    def __init__(
        self,
        index: DueIndex,
        clock: Clock,
        shards: Sequence[int],
        metrics: MetricsSink,
        max_sleep_ms: int = constants.PROMOTER_MAX_SLEEP_MS,
        batch: int = constants.PROMOTE_BATCH,
        sleep: Callable[[float], None] = time.sleep,
        cron: CronPass | None = None,
    ) -> None:
        self._index = index
        self._clock = clock
        self._shards = list(shards)
        self._metrics = metrics
        self._max_sleep_ms = max_sleep_ms
        self._batch = batch
        self._sleep = sleep
        self._cron = cron

    def tick(self) -> TickResult:
        """Promotes at most one batch per shard."""
        now_ms = self._clock.now_ms()
        moved, next_due, more = 0, None, False
        for shard in self._shards:
            result = self._index.promote(shard, now_ms, self._batch)
            moved += result.moved
            more = more or result.moved == self._batch
            if result.next_due_ms is not None and (next_due is None or result.next_due_ms < next_due):
                next_due = result.next_due_ms
        if moved:
            self._metrics.count("Promoted", moved)
        if self._cron is not None:
            # Instances are indexed as they are created (due now: onto the ready stream), so they are not
            # counted as promoted; the next fire time bounds the sleep like a due job does.
            fired = self._cron.tick(now_ms)
            more = more or fired.more_due
            if fired.next_due_ms is not None and (next_due is None or fired.next_due_ms < next_due):
                next_due = fired.next_due_ms
        return TickResult(moved, next_due, more)

    def run(self, deadline_ms: int, between: Callable[[], object] | None = None) -> int:
        """Promotes until deadline_ms, sleeping until the next due time or a wake-up; returns jobs moved.

        `between` (the fan-out check) is called after every tick. A Redis blip does not end the run: the
        loop backs off (100 ms doubling to 500 ms) and goes on, so promotion resumes within half a second
        of Redis answering again rather than at the next invocation. Due members wait in the ZSET meanwhile;
        what Redis lost, the reaper rebuilds.
        """
        total = 0
        outage = Outage(self._clock, self._metrics, "promote")
        waiters = None
        if len(self._shards) > 1:
            waiters = ShardWaiters(self._index, self._clock, self._metrics, self._shards, self._max_sleep_ms)
            waiters.start(deadline_ms)
        try:
            while self._clock.now_ms() < deadline_ms:
                try:
                    result = self.tick()
                    total += result.moved
                    if between is not None:
                        between()
                    if not result.more_due and waiters is None:
                        self._wait(result.next_due_ms, deadline_ms)
                    elif not result.more_due and waiters is not None:
                        self._wait_on_waiters(waiters, result.next_due_ms, deadline_ms)
                except IndexUnavailable as error:
                    self._sleep(outage.failed(error, deadline_ms))
                    continue
                outage.succeeded()
        finally:
            if waiters is not None:
                waiters.stop()
        return total

    def _wait_on_waiters(self, waiters: ShardWaiters, next_due_ms: int | None, deadline_ms: int) -> None:
        """Waits until the next due time (bounded) or until a waiter takes a token on any shard.

        The waiters block in Redis; this thread waits on their signal with a precise timeout, so no coarse
        and fine phases are needed here.
        """
        target_ms = min(self._clock.now_ms() + self._max_sleep_ms, deadline_ms)
        if next_due_ms is not None:
            target_ms = min(target_ms, next_due_ms)
        while (left_ms := target_ms - self._clock.now_ms()) > 0:
            if waiters.wait(left_ms):
                return

    def _wait(self, next_due_ms: int | None, deadline_ms: int) -> None:
        """Waits until the next due time (bounded), returning early when a submit signals an earlier one."""
        now_ms = self._clock.now_ms()
        bound_ms = min(now_ms + self._max_sleep_ms, deadline_ms)
        if next_due_ms is None or next_due_ms >= bound_ms + COARSE_WAIT_SLACK_MS:
            # Nothing falls due before the bound, even if BLPOP wakes late: no precision is needed.
            if bound_ms > now_ms:
                self._index.wait_for_wake(self._shards, bound_ms - now_ms)
            return
        target_ms = next_due_ms
        coarse_ms = target_ms - now_ms - COARSE_WAIT_SLACK_MS
        if coarse_ms > 0 and self._index.wait_for_wake(self._shards, coarse_ms):
            return
        while self._clock.now_ms() < target_ms:
            if self._index.poll_wake(self._shards):
                return
            self._sleep(max(0, min(FINE_SLEEP_MS, target_ms - self._clock.now_ms())) / 1000)
