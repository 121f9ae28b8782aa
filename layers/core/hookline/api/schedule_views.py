"""What the schedule routes return (kept apart from the routes so clients import them without the server)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from hookline.api.views import JobView, rfc3339
from hookline.domain.cron.schedule import Schedule


class ScheduleView(BaseModel):
    """A schedule as the API shows it."""

    id: str
    expression: str
    timezone: str
    job: dict[str, Any]
    catch_up: str
    paused: bool
    version: int
    start_at: str | None = None
    end_at: str | None = None
    created_at: str | None
    updated_at: str | None
    next_fire_times: list[str] | None = Field(
        default=None,
        description="Next occurrences (RFC 3339 UTC): five for one schedule, one in a list, none if paused.",
    )

    @classmethod
    def of(cls, schedule: Schedule, next_fire_ms: list[int] | None = None) -> ScheduleView:
        """Returns the view of a schedule, with its next fire times when given."""
        return cls(
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


class SchedulePageView(BaseModel):
    """One page of schedules, newest first; pass `next` back as `cursor` for the following page."""

    schedules: list[ScheduleView]
    next: str | None


class ScheduleJobsView(BaseModel):
    """One page of the jobs a schedule created, newest occurrence first."""

    jobs: list[JobView]
    next: str | None
