"""What GET /v1/stats returns: the shared models (hookline_client.schemas) built from a tenant's counters."""

from __future__ import annotations

from hookline.api.views import rfc3339
from hookline.domain.stats import WINDOW_MINUTES, MinuteStats, Outcome, TenantStats, success_rate
from hookline_client.schemas import BacklogView, MinuteView, OutcomeCounts, StatsView

__all__ = ["StatsView", "stats_view"]


def outcome_counts(counts: dict[Outcome, int]) -> OutcomeCounts:
    """Returns the counts keyed by outcome name."""
    return OutcomeCounts(**{outcome.value: counts.get(outcome, 0) for outcome in Outcome})


def minute_view(minute: MinuteStats) -> MinuteView:
    """Returns the view of one minute's counters."""
    lag = None if minute.lag_count == 0 else round(minute.lag_ms_sum / minute.lag_count, 1)
    return MinuteView(
        start=str(rfc3339(minute.start_ms)),
        counts=outcome_counts(minute.counts),
        success_rate=success_rate(minute.counts[Outcome.SUCCEEDED], minute.finished_attempts),
        fire_lag_ms_avg=lag,
    )


def stats_view(stats: TenantStats, now_ms: int) -> StatsView:
    """Returns the view of a tenant's statistics."""
    finished = sum(m.finished_attempts for m in stats.minutes)
    lag_count = sum(m.lag_count for m in stats.minutes)
    lag_sum = sum(m.lag_ms_sum for m in stats.minutes)
    return StatsView(
        window_minutes=WINDOW_MINUTES,
        generated_at=str(rfc3339(now_ms)),
        dead_letters=stats.dead_letters,
        backlog=BacklogView(ready=stats.ready_backlog, due=stats.due_backlog),
        last_hour=outcome_counts(stats.totals),
        success_rate=success_rate(stats.totals.get(Outcome.SUCCEEDED, 0), finished),
        fire_lag_ms_avg=None if lag_count == 0 else round(lag_sum / lag_count, 1),
        minutes=[minute_view(m) for m in stats.minutes],
    )
