"""Job routes: submit (one or a batch), list, get, cancel, the executions of a job, replay, run now."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from pydantic import ValidationError

from hookline.api.context import container
from hookline.api.errors import error_responses
from hookline.api.gate import principal
from hookline.api.pagination import decode_cursor, encode_cursor
from hookline.api.scopes import requires
from hookline.api.views import (
    BatchItemResult,
    BatchRequest,
    BatchResultView,
    ErrorDetail,
    ExecutionsView,
    JobPageView,
    JobView,
    execution_view,
    job_view,
)
from hookline.domain.errors import HooklineError
from hookline.domain.models import JobRequest, JobStatus
from hookline.usecases.submit import SubmitBatch

router = Router()

JobId = Annotated[str, Path(min_length=1, max_length=64, description="The job id.")]
Limit = Annotated[int, Query(ge=1, le=100, description="Page size (at most 100).")]
Cursor = Annotated[str | None, Query(max_length=512, description="The `next` token of the previous page.")]
# Read routes fail open when Redis is down (they read DynamoDB only): docs/api.md, "When a dependency is down"
_READ_ERRORS = error_responses(401, 403, 422, 429, 503)


def ok_response(model: type[Any], description: str, status: int = 200) -> dict[int, Any]:
    """Returns the OpenAPI response entry of a successful answer with model as its body."""
    return {
        status: {"description": description, "content": {content_types.APPLICATION_JSON: {"model": model}}}
    }


@router.post(
    "/v1/jobs",
    summary="Submit a job",
    tags=["jobs"],
    operation_id="submitJob",
    responses={
        **ok_response(JobView, "Created", 201),
        **ok_response(JobView, "An idempotent repeat: the job the first request created"),
        **error_responses(400, 401, 403, 404, 409, 413, 415, 422, 429, 503),
    },
)
@requires("jobs:write")
def submit_job(request: JobRequest) -> Response[JobView]:
    """Stores a job and schedules its callback; an idempotent repeat returns the first job with 200."""
    who = principal()
    result = container().submitter.submit(who.tenant, request)
    return Response(
        status_code=201 if result.created else 200,
        content_type=content_types.APPLICATION_JSON,
        body=job_view(result.job),
    )


@router.post(
    "/v1/jobs/batch",
    summary="Submit up to 100 jobs",
    tags=["jobs"],
    operation_id="submitJobBatch",
    responses={
        **ok_response(BatchResultView, "One result per item"),
        **error_responses(400, 401, 403, 413, 415, 422, 429, 503),
    },
)
@requires("jobs:write")
def submit_batch(batch: BatchRequest) -> BatchResultView:
    """Submits each item on its own: one invalid or conflicting item does not stop the others."""
    who = principal()
    # One batch: the items' statistics are written together when the last is stored.
    with container().submitter.batch() as submitter:
        results = [_submit_item(submitter, who.tenant, i, item) for i, item in enumerate(batch.jobs)]
    return BatchResultView(results=results)


def _submit_item(submitter: SubmitBatch, tenant: str, index: int, item: dict[str, Any]) -> BatchItemResult:
    """Submits one item of a batch and says what happened to it."""
    try:
        result = submitter.submit(tenant, JobRequest.model_validate(item))
    except ValidationError as error:
        details = [
            {"field": ".".join(str(part) for part in e["loc"]), "message": e["msg"], "type": e["type"]}
            for e in error.errors(include_url=False, include_context=False, include_input=False)
        ]
        error_detail = ErrorDetail(code="validation_error", message="the job is not valid", details=details)
        return BatchItemResult(index=index, status=422, error=error_detail)
    except HooklineError as error:
        detail = ErrorDetail(code=error.code, message=str(error))
        return BatchItemResult(index=index, status=error.http_status, error=detail)
    status = 201 if result.created else 200
    return BatchItemResult(index=index, status=status, job=job_view(result.job))


@router.get(
    "/v1/jobs",
    summary="List jobs, newest first",
    tags=["jobs"],
    operation_id="listJobs",
    responses={**ok_response(JobPageView, "A page of jobs"), **_READ_ERRORS},
)
@requires("jobs:read")
def list_jobs(
    status: Annotated[JobStatus | None, Query()] = None, limit: Limit = 50, cursor: Cursor = None
) -> JobPageView:
    """Returns a page of the caller's jobs, optionally only those in one status."""
    who = principal()
    page = container().manager.list_jobs(who.tenant, status, decode_cursor(cursor), limit)
    return JobPageView(jobs=[job_view(job) for job in page.jobs], next=encode_cursor(page.after_job_id))


@router.get(
    "/v1/jobs/<job_id>",
    summary="Get a job",
    tags=["jobs"],
    operation_id="getJob",
    responses={**ok_response(JobView, "The job"), **error_responses(401, 403, 404, 422, 429, 503)},
)
@requires("jobs:read")
def get_job(job_id: JobId) -> JobView:
    """Returns one of the caller's jobs (another tenant's id is not found)."""
    who = principal()
    return job_view(container().manager.get(who.tenant, job_id))


@router.delete(
    "/v1/jobs/<job_id>",
    summary="Cancel a job that has not started",
    tags=["jobs"],
    operation_id="cancelJob",
    responses={
        **ok_response(JobView, "The cancelled job"),
        **error_responses(401, 403, 404, 409, 422, 429, 503),
    },
)
@requires("jobs:write")
def cancel_job(job_id: JobId) -> JobView:
    """Cancels a scheduled job; a running or finished job answers 409."""
    who = principal()
    return job_view(container().manager.cancel(who.tenant, job_id))


@router.get(
    "/v1/jobs/<job_id>/executions",
    summary="List a job's attempts",
    tags=["jobs"],
    operation_id="listJobExecutions",
    responses={
        **ok_response(ExecutionsView, "Every attempt, oldest first"),
        **error_responses(401, 403, 404, 422, 429, 503),
    },
)
@requires("jobs:read")
def job_executions(job_id: JobId) -> ExecutionsView:
    """Returns every attempt of one of the caller's jobs, oldest first."""
    who = principal()
    executions = container().manager.executions(who.tenant, job_id)  # 404 for an unknown or foreign id
    return ExecutionsView(executions=[execution_view(e) for e in executions])


@router.post(
    "/v1/jobs/<job_id>/replay",
    summary="Replay a dead job",
    tags=["jobs"],
    operation_id="replayJob",
    responses={
        **ok_response(JobView, "The job, scheduled again"),
        **error_responses(401, 403, 404, 409, 422, 429, 503),
    },
)
@requires("jobs:write")
def replay_job(job_id: JobId) -> JobView:
    """Schedules a dead job again, due now, with a new generation and a fresh attempt budget."""
    who = principal()
    return job_view(container().manager.replay(who.tenant, job_id))


@router.post(
    "/v1/jobs/<job_id>/run-now",
    summary="Run a waiting job now",
    description=(
        "A scheduled job (first run or a retry's back-off) becomes due now, its attempt counter and budget "
        "unchanged; delivered once. 409 `job_not_waiting` when it runs or has ended, `stale_state` when it "
        "changed during the call."
    ),
    tags=["jobs"],
    operation_id="runJobNow",
    responses={
        **ok_response(JobView, "The job, due now"),
        **error_responses(401, 403, 404, 409, 422, 429, 503),
    },
)
@requires("jobs:write")
def run_job_now(job_id: JobId) -> JobView:
    """Makes a waiting job due now in a new generation, its attempts unchanged."""
    who = principal()
    return job_view(container().manager.run_now(who.tenant, job_id))
