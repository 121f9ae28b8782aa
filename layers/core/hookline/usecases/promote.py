"""Promoting due jobs onto the ready stream, sleeping precisely until the next due time in between.

The promoter works shard by shard: each shard's promotion is one script on that shard's keys, and while it
sleeps it waits on each shard's wake list separately (one command cannot span shards: on a Redis Cluster
they live on different nodes). With one shard its own thread blocks on the list; with several, a waiter
thread per shard does (usecases/wake.py) and the loop waits on their common signal.

A tick moves at most one batch per shard, so a burst on one shard delays the others' due jobs by one tick
at most. With several shards, a tick costs one round trip (two with cron) per shard it visits, so the loop
visits only the shards that may have something due (DueShards): those whose earliest due member or
schedule, as their last visit saw it, has come, those that had more than a batch due, and those whose wake
list had a token (every script that makes a member or schedule a shard's earliest pushes one), plus every
shard once per sweep interval, whatever it knew. A shard whose Redis failed is visited again at the next
tick; the others are still promoted in the tick that met the failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence

from hookline.domain import constants
from hookline.domain.delivery import TickResult
from hookline.domain.errors import IndexUnavailable
from hookline.ports import Clock, CronPass, DueIndex, MetricsSink
from hookline.usecases.idle import IdleWatch
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
        idle: IdleWatch | None = None,
    ) -> None:
        self._index = index
        self._clock = clock
        self._shards = list(shards)
        self._metrics = metrics
        self._max_sleep_ms = max_sleep_ms
        self._batch = batch
        self._sleep = sleep
        self._cron = cron
        self._idle = idle
        # Each visit of a shard sets its promoter heartbeat for this long (0: none, without idle mode).
        self._alive_ms = idle.policy.alive_ms if idle is not None and idle.policy.enabled else 0
        self._due_shards = DueShards(self._shards, max_sleep_ms)

    @property
    def next_due_ms(self) -> int | None:
        """Returns the earliest due time known over every shard (None: nothing known to be due)."""
        return self._due_shards.earliest()

    def tick(self, shards: Sequence[int] | None = None, alive: bool = True) -> TickResult:
        """Promotes at most one batch on each shard given (all by default), running the cron pass on each.

        next_due_ms is the earliest due time known over every shard, visited now or before. A shard whose
        Redis fails does not stop the others: the tick goes on, then raises the first such failure. alive:
        each visit sets the shard's promoter heartbeat (in idle mode; the last look before ending does not).
        """
        now_ms = self._clock.now_ms()
        alive_ms = self._alive_ms if alive else 0
        moved, more = 0, False
        failure: IndexUnavailable | None = None
        for shard in self._shards if shards is None else shards:
            try:
                shard_moved, shard_next, shard_more = self._tick_shard(shard, now_ms, alive_ms)
            except IndexUnavailable as error:
                # Members moved before the failure stay moved (each script is atomic); the shard counts as
                # unknown, so the next tick visits it again.
                self._due_shards.forget(shard)
                failure = failure or error
                continue
            moved += shard_moved
            more = more or shard_more
            self._due_shards.saw(shard, shard_next, shard_more, now_ms)
        if moved:
            self._metrics.count("Promoted", moved)
        if failure is not None:
            raise failure
        return TickResult(moved, self._due_shards.earliest(), more)

    def _tick_shard(self, shard: int, now_ms: int, alive_ms: int = 0) -> tuple[int, int | None, bool]:
        """Promotes one batch of the shard and runs its cron pass; returns (moved, next due, more due)."""
        if alive_ms > 0:
            result = self._index.promote(shard, now_ms, self._batch, alive_ms)
        else:
            result = self._index.promote(shard, now_ms, self._batch)
        next_due, more = result.next_due_ms, result.moved == self._batch
        if self._cron is not None:
            # Instances are indexed as they are created (due now: onto the ready stream), so they are not
            # counted as promoted; the next fire time bounds the sleep like a due job does.
            fired = self._cron.tick_shard(shard, now_ms)
            more = more or fired.more_due
            if fired.next_due_ms is not None and (next_due is None or fired.next_due_ms < next_due):
                next_due = fired.next_due_ms
        return result.moved, next_due, more

    def run(self, deadline_ms: int, between: Callable[[], object] | None = None) -> int:
        """Promotes until deadline_ms, sleeping until the next due time or a wake-up; returns jobs moved.

        `between` (the fan-out check) is called after every tick. A Redis blip does not end the run: the
        loop backs off (100 ms doubling to 500 ms) and goes on, so promotion resumes within half a second
        of Redis answering again rather than at the next invocation. Due members wait in the ZSET meanwhile;
        what Redis lost, the reaper rebuilds. In idle mode the run ends early once nothing falls due within
        the horizon and the streams stayed empty for the grace (usecases/idle.py: stand down, look again).
        """
        total = 0
        if self._idle is not None:
            self._idle.reset()
        outage = Outage(self._clock, self._metrics, "promote")
        waiters = None
        if len(self._shards) > 1:
            waiters = ShardWaiters(self._index, self._clock, self._metrics, self._shards, self._max_sleep_ms)
            waiters.start(deadline_ms)
        try:
            while self._clock.now_ms() < deadline_ms:
                try:
                    moved = self._step(waiters, deadline_ms, between)
                except IndexUnavailable as error:
                    self._sleep(outage.failed(error, deadline_ms))
                    continue
                outage.succeeded()
                if moved is None:
                    break
                total += moved
        finally:
            if waiters is not None:
                waiters.stop()
        return total

    def _step(
        self, waiters: ShardWaiters | None, deadline_ms: int, between: Callable[[], object] | None
    ) -> int | None:
        """One tick, the fan-out check, then the wait for the next; returns jobs moved (None: ends idle)."""
        visit = None
        if waiters is not None:
            visit = self._due_shards.to_visit(self._clock.now_ms(), waiters.take_woken())
        result = self.tick(visit)
        if between is not None:
            between()
        if result.more_due:
            return result.moved
        if self._idle is not None and self._ends_idle(result):
            return None
        if waiters is None:
            self._wait(result.next_due_ms, deadline_ms)
        else:
            self._wait_on_waiters(waiters, result.next_due_ms, deadline_ms)
        return result.moved

    def _ends_idle(self, result: TickResult) -> bool:
        """Tells whether the run ends now, idle: it may, and after standing down a last look agrees.

        The last look is a tick over every shard without the heartbeat and a fresh read of the streams:
        whatever was indexed before the heartbeats went is seen by it, whatever after woke a promoter.
        """
        assert self._idle is not None
        if not self._idle.should_exit(result.next_due_ms):
            return False
        self._idle.stand_down()
        last = self.tick(alive=False)
        if last.moved or last.more_due or not self._idle.should_exit(last.next_due_ms, force_read=True):
            return False  # the next tick sets the heartbeats again
        self._idle.ended()
        return True

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


class DueShards:
    """What the promoter knows of each shard's next due time, and so which shards a tick must visit.

    A shard's knowledge comes from its last visit (the earliest due member or schedule left, or "more than
    a batch was due"). It can only become wrong one way that matters, a new earliest member or schedule,
    and every script that makes one pushes a wake token, which the shard's waiter takes: a woken shard is
    visited. A sweep of every shard each sweep_ms (the promoter's longest sleep) bounds what a lost token
    (a fail-over, a BLPOP reply lost with its connection) or another promoter's claims could delay.
    """

    def __init__(self, shards: Sequence[int], sweep_ms: int) -> None:
        self._shards = list(shards)
        self._sweep_ms = max(1, sweep_ms)
        self._next_sweep_ms: int | None = None
        self._next_due: dict[int, int | None] = {}  # shard -> earliest due (None: nothing); absent: unknown

    def to_visit(self, now_ms: int, woken: Collection[int]) -> list[int] | None:
        """Returns the shards a tick at now_ms must visit (woken: those whose wake list had a token since
        the last tick); None for all of them (a sweep)."""
        if self._next_sweep_ms is None or now_ms >= self._next_sweep_ms:
            self._next_sweep_ms = now_ms + self._sweep_ms
            return None
        return [shard for shard in self._shards if shard in woken or self._may_be_due(shard, now_ms)]

    def saw(self, shard: int, next_due_ms: int | None, more: bool, now_ms: int) -> None:
        """Records a visit: the earliest due time left (None: nothing), or that more was due already."""
        self._next_due[shard] = now_ms if more else next_due_ms

    def forget(self, shard: int) -> None:
        """Makes the shard unknown (its visit failed): the next tick visits it."""
        self._next_due.pop(shard, None)

    def earliest(self) -> int | None:
        """Returns the earliest due time known over every shard."""
        known = [due for due in self._next_due.values() if due is not None]
        return min(known) if known else None

    def _may_be_due(self, shard: int, now_ms: int) -> bool:
        if shard not in self._next_due:
            return True
        due = self._next_due[shard]
        return due is not None and due <= now_ms
