"""Dead-letter routes: list the dead jobs (DynamoDB, the record) and replay them in bounded batches."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from hookline.api.context import container
from hookline.api.errors import error_responses
from hookline.api.gate import principal
from hookline.api.jobs import Cursor, Limit, ok_response
from hookline.api.pagination import decode_cursor, encode_cursor
from hookline.api.scopes import requires
from hookline.api.views import (
    DeadLetterReplayRequest,
    DeadLetterReplayView,
    ErrorDetail,
    JobPageView,
    ReplayFailureView,
    job_view,
)
from hookline.domain.models import JobStatus

router = Router()


@router.get(
    "/v1/dead-letters",
    summary="List dead jobs, newest first",
    tags=["dead letters"],
    operation_id="listDeadLetters",
    responses={**ok_response(JobPageView, "A page of dead jobs"), **error_responses(401, 403, 422, 429, 503)},
)
@requires("jobs:read")
def list_dead_letters(limit: Limit = 50, cursor: Cursor = None) -> JobPageView:
    """Returns a page of the caller's dead jobs.

    They are read from the jobs table, not from the Redis dead stream: the stream is a trimmed feed that
    Redis may lose, while the table is the record.
    """
    who = principal()
    page = container().manager.list_jobs(who.tenant, JobStatus.DEAD, decode_cursor(cursor), limit)
    return JobPageView(jobs=[job_view(job) for job in page.jobs], next=encode_cursor(page.after_job_id))


@router.post(
    "/v1/dead-letters/replay",
    summary="Replay dead jobs by id, or up to 100 of them",
    tags=["dead letters"],
    operation_id="replayDeadLetters",
    responses={
        **ok_response(DeadLetterReplayView, "What was replayed"),
        **error_responses(400, 401, 403, 413, 415, 422, 429, 503),
    },
)
@requires("jobs:write")
def replay_dead_letters(selection: DeadLetterReplayRequest) -> DeadLetterReplayView:
    """Replays the given dead jobs, or (all) up to 100; call again while `more` is true."""
    who = principal()
    outcome = container().manager.replay_dead(who.tenant, selection.ids)
    return DeadLetterReplayView(
        replayed=[job_view(job) for job in outcome.replayed],
        failed=[
            ReplayFailureView(id=f.job_id, error=ErrorDetail(code=f.error.code, message=str(f.error)))
            for f in outcome.failed
        ],
        more=outcome.more,
    )
