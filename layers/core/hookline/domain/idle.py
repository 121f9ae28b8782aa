"""Idle mode: when a promoter or an executor may end its invocation early, and when a submit wakes one.

An idle deployment runs no function but the schedule's ticks: a promoter started by the tick ends as soon as
nothing falls due within the horizon and the ready streams have held nothing for the grace; an executor
ends once it has had nothing to deliver for its idle time. Nothing is lost by ending: a member due after
the horizon is seen by a later tick (the horizon exceeds the schedule's period, so some tick's promoter is
running when it falls due), and a member indexed due sooner while no promoter runs takes the wake claim in
index.lua, whose caller starts one at once (PromoterPresence, usecases/idle.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from hookline.domain import constants

# The EventBridge schedule's period: a promoter invocation starts at least this often.
SCHEDULE_PERIOD_MS = 60_000


@dataclass(frozen=True)
class IdlePolicy:
    """When a promoter invocation may end before its deadline.

    Attributes:
        horizon_ms: The promoter stays while anything (a job member or a cron schedule) falls due within
            this long. Above the schedule's period, so a member due later is due within the horizon of the
            next tick's promoter; 0 turns the idle exit off (the promoter runs to its deadline).
        grace_ms: How long the ready streams must have held nothing (no entry read or unread) before the
            promoter ends: a burst's executors are started, and their retries indexed, before it goes.
        claim_ms: How long one wake claim stops other index calls from waking a promoter (index.lua): the
            woken promoter's start until its first visit sets the heartbeat.
        alive_ms: How long a promoter's heartbeat lasts after a visit of the shard; the promoter visits
            every shard at least each sweep (PROMOTER_MAX_SLEEP_MS), so a running one keeps it.
    """

    horizon_ms: int = 75_000
    grace_ms: int = 2_000
    claim_ms: int = 10_000
    alive_ms: int = 3 * constants.PROMOTER_MAX_SLEEP_MS + 2_000

    def __post_init__(self) -> None:
        if self.horizon_ms < 0 or self.grace_ms < 0 or self.claim_ms <= 0 or self.alive_ms <= 0:
            raise ValueError("idle timings must be positive (horizon 0: the idle exit is off)")
        if 0 < self.horizon_ms <= SCHEDULE_PERIOD_MS:
            raise ValueError(
                f"the idle horizon ({self.horizon_ms} ms) must exceed the schedule's period"
                f" ({SCHEDULE_PERIOD_MS} ms), or a member due between two ticks would wait for the next"
            )

    @property
    def enabled(self) -> bool:
        """Tells whether a promoter may end idle at all."""
        return self.horizon_ms > 0

    def wake(self) -> WakePolicy | None:
        """Returns what index.lua needs to wake a promoter (None with the idle exit off: one always runs)."""
        return WakePolicy(self.horizon_ms, self.claim_ms) if self.enabled else None


@dataclass(frozen=True)
class WakePolicy:
    """What index.lua reads to wake a promoter: a member due within horizon_ms, the claim held claim_ms."""

    horizon_ms: int
    claim_ms: int


def promoter_may_exit(
    policy: IdlePolicy, now_ms: int, next_due_ms: int | None, streams_empty_since_ms: int | None
) -> bool:
    """Tells whether a promoter may end now.

    next_due_ms: the earliest due member or cron fire time over every shard (None: nothing at all).
    streams_empty_since_ms: since when every ready stream has held nothing, read or unread (None: they
    hold something now). The promoter stays while anything falls due within the horizon, and until the
    streams have been empty for the grace.
    """
    if not policy.enabled or streams_empty_since_ms is None:
        return False
    if now_ms - streams_empty_since_ms < policy.grace_ms:
        return False
    return next_due_ms is None or next_due_ms - now_ms > policy.horizon_ms


def executor_may_exit(idle_ms: int, now_ms: int, last_busy_ms: int, in_flight: int) -> bool:
    """Tells whether an executor may end now: nothing in flight, and nothing read for idle_ms (0: never).

    last_busy_ms: the last time it read an entry or had a delivery in flight.
    """
    return idle_ms > 0 and in_flight == 0 and now_ms - last_busy_ms >= idle_ms
