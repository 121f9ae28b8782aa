"""What GET /v1/stats returns (kept apart from the route so clients import it without the server)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from hookline.api.views import rfc3339
from hookline.domain.stats import WINDOW_MINUTES, MinuteStats, Outcome, TenantStats, success_rate


class OutcomeCounts(BaseModel):
    """How many of each outcome were recorded."""

    submitted: int = Field(description="Jobs accepted: by POST /v1/jobs, a batch, or a schedule firing.")
    succeeded: int = Field(description="Attempts answered 2xx.")
    retried: int = Field(description="Attempts that failed with another attempt scheduled.")
    dead: int = Field(description="Jobs dead-lettered (by an attempt, or out of deliveries).")
    cancelled: int
    replayed: int

    @classmethod
    def of(cls, counts: dict[Outcome, int]) -> OutcomeCounts:
        """Returns the counts keyed by outcome name."""
        return cls(**{outcome.value: counts.get(outcome, 0) for outcome in Outcome})


class MinuteView(BaseModel):
    """One minute of the window."""

    start: str
    counts: OutcomeCounts
    success_rate: float | None = Field(description="succeeded / (succeeded + retried + dead); null if none.")
    fire_lag_ms_avg: float | None = Field(description="Mean delay from due time to dispatch; null if none.")

    @classmethod
    def of(cls, minute: MinuteStats) -> MinuteView:
        """Returns the view of one minute's counters."""
        lag = None if minute.lag_count == 0 else round(minute.lag_ms_sum / minute.lag_count, 1)
        return cls(
            start=str(rfc3339(minute.start_ms)),
            counts=OutcomeCounts.of(minute.counts),
            success_rate=success_rate(minute.counts[Outcome.SUCCEEDED], minute.finished_attempts),
            fire_lag_ms_avg=lag,
        )


class BacklogView(BaseModel):
    """Jobs waiting in the live indexes, which all tenants share: these counts are the deployment's."""

    ready: int = Field(description="Due now, not yet finished: waiting for the promoter or an executor.")
    due: int = Field(description="Waiting for a later time: first run, retry back-off or limiter delay.")


class StatsView(BaseModel):
    """The caller's statistics over the last hour, read from counters (never from the jobs table)."""

    window_minutes: int
    generated_at: str
    dead_letters: int = Field(description="The tenant's dead jobs now (replayed and expired ones excluded).")
    backlog: BacklogView
    last_hour: OutcomeCounts
    success_rate: float | None = Field(description="Over the last hour; null when no attempt finished.")
    fire_lag_ms_avg: float | None = Field(description="Over the last hour; null when nothing was dispatched.")
    minutes: list[MinuteView] = Field(description="One entry per minute, oldest first, the current last.")

    @classmethod
    def of(cls, stats: TenantStats, now_ms: int) -> StatsView:
        """Returns the view of a tenant's statistics."""
        finished = sum(m.finished_attempts for m in stats.minutes)
        lag_count = sum(m.lag_count for m in stats.minutes)
        lag_sum = sum(m.lag_ms_sum for m in stats.minutes)
        return cls(
            window_minutes=WINDOW_MINUTES,
            generated_at=str(rfc3339(now_ms)),
            dead_letters=stats.dead_letters,
            backlog=BacklogView(ready=stats.ready_backlog, due=stats.due_backlog),
            last_hour=OutcomeCounts.of(stats.totals),
            success_rate=success_rate(stats.totals.get(Outcome.SUCCEEDED, 0), finished),
            fire_lag_ms_avg=None if lag_count == 0 else round(lag_sum / lag_count, 1),
            minutes=[MinuteView.of(m) for m in stats.minutes],
        )
