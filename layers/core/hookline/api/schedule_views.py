"""What the schedule routes return: the shared models (hookline_client.schemas) built from schedules."""

from __future__ import annotations

from hookline.api.views import rfc3339
from hookline.domain.cron.schedule import Schedule
from hookline_client.schemas import ScheduleJobsView, SchedulePageView, ScheduleView

__all__ = ["ScheduleJobsView", "SchedulePageView", "ScheduleView", "schedule_view"]


def schedule_view(schedule: Schedule, next_fire_ms: list[int] | None = None) -> ScheduleView:
    """Returns the view of a schedule, with its next fire times when given."""
    return ScheduleView(
        id=schedule.schedule_id,
        expression=schedule.expression,
        timezone=schedule.timezone,
        job=schedule.job,
        catch_up=schedule.catch_up.value,
        paused=schedule.paused,
        version=schedule.version,
        start_at=rfc3339(schedule.start_ms),
        end_at=rfc3339(schedule.end_ms),
        created_at=rfc3339(schedule.created_ms),
        updated_at=rfc3339(schedule.updated_ms),
        next_fire_times=None if next_fire_ms is None else [str(rfc3339(ms)) for ms in next_fire_ms],
    )
