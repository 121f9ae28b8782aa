"""Idle mode: a promoter ends early when nothing needs it, and an index call that needs one wakes it.

The promoter reads the streams' contents at most once a check interval and applies
hookline.domain.idle.promoter_may_exit. Ending goes in two steps, so that no member indexed meanwhile is
stranded until the next tick:

1. stand down: delete the promoter heartbeat and the wake claims of every shard. From here on index.lua sees
   no promoter, and an index call of a member due within the horizon takes the wake claim and starts one
   (a claim left from the wake that started this promoter would otherwise stop that for its claim time).
2. look again: one more tick over every shard (promote what is due, read the earliest due time) and one
   more read of the streams, the heartbeat left unset. A member indexed before step 1 is seen here; if
   anything now falls within the horizon or the streams hold something, the promoter carries on (its next
   tick sets the heartbeat again).

A heartbeat deleted while another promoter runs costs at most one needless wake: that promoter sets it
again at its next visit (within a sweep).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from hookline.domain.idle import IdlePolicy, promoter_may_exit
from hookline.domain.models import Member
from hookline.domain.reconcile import UnindexedJobs
from hookline.ports import Clock, MetricsSink, PromoterPresence, PromoterWaker, UnindexedLog

logger = logging.getLogger(__name__)

# How often the promoter reads the streams' contents for its idle decision.
IDLE_CHECK_INTERVAL_MS = 1_000


class IdleWatch:
    """One promoter run's view of whether it may end: the streams' emptiness over time, and the decision."""

    def __init__(
        self,
        presence: PromoterPresence,
        clock: Clock,
        shards: Sequence[int],
        metrics: MetricsSink,
        policy: IdlePolicy,
        check_interval_ms: int = IDLE_CHECK_INTERVAL_MS,
    ) -> None:
        self._presence = presence
        self._clock = clock
        self._shards = list(shards)
        self._metrics = metrics
        self._policy = policy
        self._check_interval_ms = check_interval_ms
        self._next_check_ms = 0
        self._empty_since_ms: int | None = None

    @property
    def policy(self) -> IdlePolicy:
        """Returns the idle policy."""
        return self._policy

    def reset(self) -> None:
        """Forgets what earlier runs saw: a new run reads the streams at its first check."""
        self._next_check_ms = 0
        self._empty_since_ms = None

    def should_exit(self, next_due_ms: int | None, force_read: bool = False) -> bool:
        """Tells whether the promoter may end now, given the earliest due time over every shard.

        Reads the streams' contents when a check interval has passed (or force_read); raises what the
        index raises (IndexUnavailable): the promoter's loop waits the outage out and stays meanwhile.
        """
        if not self._policy.enabled:
            return False
        now_ms = self._clock.now_ms()
        if force_read or now_ms >= self._next_check_ms:
            self._next_check_ms = now_ms + self._check_interval_ms
            if self._presence.in_flight(self._shards) > 0:
                self._empty_since_ms = None
            elif self._empty_since_ms is None:
                self._empty_since_ms = now_ms
        return promoter_may_exit(self._policy, now_ms, next_due_ms, self._empty_since_ms)

    def busy(self) -> None:
        """Notes work the streams do not show (a reaper's rebuild or notes): the grace starts over."""
        self._empty_since_ms = None
        self._next_check_ms = 0

    def stand_down(self) -> None:
        """Deletes every shard's promoter heartbeat (step 1 of ending)."""
        self._presence.stand_down(self._shards)

    def ended(self) -> None:
        """Counts an idle exit."""
        self._metrics.count("PromoterIdleExits", 1)


class Wake:
    """What index.lua's wake claim calls: starts a promoter, counting the outcome; never raises.

    A failed start fails nothing else (the submit that took the claim still succeeds): the schedule's next
    tick starts a promoter within its period, and the claim expires so a later index call may try again.
    """

    def __init__(self, waker: PromoterWaker, metrics: MetricsSink) -> None:
        self._waker = waker
        self._metrics = metrics

    def __call__(self, shard: int) -> None:
        """Starts a promoter for a member indexed on shard."""
        try:
            started = self._waker.wake()
        except Exception:
            logger.exception("waking a promoter failed", extra={"shard": shard})
            started = False
        self._metrics.count("PromoterWakes" if started else "PromoterWakeFailures", 1)


class NoWaker:
    """Starts nothing: where no promote function is configured (a promoter always runs there)."""

    def wake(self) -> bool:
        """Starts nothing."""
        return False


# A process wakes the reaper for its notes at most this often (a Redis outage notes every job submitted).
REAPER_WAKE_EVERY_MS = 5_000


class WakingUnindexedLog:
    """An UnindexedLog that also starts a reaper after noting a job (idle mode).

    An idle reaper ends its watch early, and only its watch indexes noted jobs about a second after Redis
    answers; so the first note in a while starts one (an asynchronous invoke of the reap function), which
    watches while notes remain or Redis is away. At most one start per REAPER_WAKE_EVERY_MS per process;
    a failed start is counted and the next tick (within a minute) is the backstop.
    """

    def __init__(self, log: UnindexedLog, waker: PromoterWaker, clock: Clock, metrics: MetricsSink) -> None:
        self._log = log
        self._waker = waker
        self._clock = clock
        self._metrics = metrics
        self._next_wake_ms = 0

    def note_unindexed(self, member: Member, shard: int, due_ms: int, now_ms: int) -> None:
        """Notes the job, then starts a reaper unless this process did within REAPER_WAKE_EVERY_MS."""
        self._log.note_unindexed(member, shard, due_ms, now_ms)
        now = self._clock.now_ms()
        if now < self._next_wake_ms:
            return
        self._next_wake_ms = now + REAPER_WAKE_EVERY_MS
        try:
            started = self._waker.wake()
        except Exception:
            logger.exception("waking a reaper failed")
            started = False
        self._metrics.count("ReaperWakes" if started else "ReaperWakeFailures", 1)

    def unindexed(self, shards: Sequence[int]) -> list[UnindexedJobs]:
        """Returns the notes of the given shards that hold anything."""
        return self._log.unindexed(shards)

    def clear_unindexed(self, shard: int, version: int) -> bool:
        """Deletes the shard's note if it is still at version."""
        return self._log.clear_unindexed(shard, version)
