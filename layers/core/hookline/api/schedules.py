"""Schedule (cron) routes: create, list, get (with its next fire times), change, delete, its jobs."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from hookline.api.context import container
from hookline.api.errors import error_responses
from hookline.api.gate import principal
from hookline.api.pagination import decode_cursor, encode_cursor
from hookline.api.schedule_views import ScheduleJobsView, SchedulePageView, ScheduleView, schedule_view
from hookline.api.scopes import requires
from hookline.api.views import job_view
from hookline.domain.cron.schedule import ScheduleRequest, ScheduleUpdate

router = Router()

NEXT_FIRE_TIMES = 5
ScheduleId = Annotated[str, Path(min_length=1, max_length=64, description="The schedule id.")]
Limit = Annotated[int, Query(ge=1, le=100, description="Page size (at most 100).")]
Cursor = Annotated[str | None, Query(max_length=512, description="The `next` token of the previous page.")]
_READ_ERRORS = error_responses(401, 403, 404, 422, 429, 503)
_WRITE_ERRORS = error_responses(400, 401, 403, 404, 409, 413, 415, 422, 429, 503)


def _ok(model: type[Any], description: str, status: int = 200) -> dict[int, Any]:
    return {
        status: {"description": description, "content": {content_types.APPLICATION_JSON: {"model": model}}}
    }


@router.post(
    "/v1/schedules",
    summary="Create a cron schedule",
    tags=["schedules"],
    operation_id="createSchedule",
    responses={**_ok(ScheduleView, "Created", 201), **_WRITE_ERRORS},
)
@requires("schedules:write")
def create_schedule(request: ScheduleRequest) -> Response[ScheduleView]:
    """Stores a schedule; each occurrence will create one job from its template."""
    who = principal()
    schedule = container().schedules.create(who.tenant, request)
    return Response(
        status_code=201, content_type=content_types.APPLICATION_JSON, body=schedule_view(schedule)
    )


@router.get(
    "/v1/schedules",
    summary="List schedules, newest first",
    tags=["schedules"],
    operation_id="listSchedules",
    responses={**_ok(SchedulePageView, "A page of schedules"), **_READ_ERRORS},
)
@requires("schedules:read")
def list_schedules(limit: Limit = 50, cursor: Cursor = None) -> SchedulePageView:
    """Returns a page of the caller's schedules, each with its next occurrence (none while paused)."""
    who = principal()
    current = container()
    schedules, after = current.schedules.list_page(who.tenant, decode_cursor(cursor), limit)
    now_ms = current.clock.now_ms()
    views = [schedule_view(s, [] if s.paused else s.upcoming(now_ms, 1)) for s in schedules]
    return SchedulePageView(schedules=views, next=encode_cursor(after))


@router.get(
    "/v1/schedules/<schedule_id>",
    summary="Get a schedule and its next fire times",
    tags=["schedules"],
    operation_id="getSchedule",
    responses={**_ok(ScheduleView, "The schedule"), **_READ_ERRORS},
)
@requires("schedules:read")
def get_schedule(schedule_id: ScheduleId) -> ScheduleView:
    """Returns one of the caller's schedules with its next five occurrences (none while paused)."""
    who = principal()
    current = container()
    schedule = current.schedules.get(who.tenant, schedule_id)
    upcoming = [] if schedule.paused else schedule.upcoming(current.clock.now_ms(), NEXT_FIRE_TIMES)
    return schedule_view(schedule, upcoming)


@router.patch(
    "/v1/schedules/<schedule_id>",
    summary="Change, pause or resume a schedule",
    tags=["schedules"],
    operation_id="updateSchedule",
    responses={**_ok(ScheduleView, "The changed schedule"), **_WRITE_ERRORS},
)
@requires("schedules:write")
def update_schedule(schedule_id: ScheduleId, update: ScheduleUpdate) -> ScheduleView:
    """Applies a change as a new version; occurrences then follow the new settings from now on."""
    who = principal()
    return schedule_view(container().schedules.update(who.tenant, schedule_id, update))


@router.delete(
    "/v1/schedules/<schedule_id>",
    summary="Delete a schedule",
    tags=["schedules"],
    operation_id="deleteSchedule",
    responses={204: {"description": "Deleted"}, **_READ_ERRORS},
)
@requires("schedules:write")
def delete_schedule(schedule_id: ScheduleId) -> Response[str]:
    """Deletes a schedule; the jobs it already created stay."""
    who = principal()
    container().schedules.delete(who.tenant, schedule_id)
    # A 204 has no content (RFC 9110 15.3.5), so it names no content type either.
    return Response(status_code=204, body="")


@router.get(
    "/v1/schedules/<schedule_id>/jobs",
    summary="List the jobs a schedule created",
    tags=["schedules"],
    operation_id="listScheduleJobs",
    responses={**_ok(ScheduleJobsView, "A page of jobs"), **_READ_ERRORS},
)
@requires("schedules:read")
def schedule_jobs(schedule_id: ScheduleId, limit: Limit = 50, cursor: Cursor = None) -> ScheduleJobsView:
    """Returns a page of the jobs one of the caller's schedules created, newest occurrence first."""
    who = principal()
    jobs, after = container().schedules.instances(who.tenant, schedule_id, decode_cursor(cursor), limit)
    return ScheduleJobsView(jobs=[job_view(job) for job in jobs], next=encode_cursor(after))
