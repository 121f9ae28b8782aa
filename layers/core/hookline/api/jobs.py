"""Job routes: submit, get, and the executions of a job."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path

from hookline.api.context import container
from hookline.api.views import ExecutionView, JobView
from hookline.auth import Principal
from hookline.errors import Forbidden
from hookline.models import JobRequest

router = Router()

JobId = Annotated[str, Path(min_length=1, max_length=64)]


def principal(scope: str) -> Principal:
    """Authenticates the current request and checks it holds scope."""
    header = router.current_event.get_header_value("Authorization", case_sensitive=False) or ""
    token = header[7:].strip() if header.lower().startswith("bearer ") else None
    found = container().authenticator.authenticate(token)
    if scope not in found.scopes:
        raise Forbidden(f"this key lacks the {scope} scope")
    return found


@router.post("/v1/jobs", summary="Submit a job", tags=["jobs"])
def submit_job(request: JobRequest) -> Response[JobView]:
    """Stores a job and schedules its callback; an idempotent repeat returns the first job with 200."""
    who = principal("jobs:write")
    result = container().submitter.submit(who.tenant, request)
    return Response(
        status_code=201 if result.created else 200,
        content_type=content_types.APPLICATION_JSON,
        body=JobView.of(result.job),
    )


@router.get("/v1/jobs/<job_id>", summary="Get a job", tags=["jobs"])
def get_job(job_id: JobId) -> JobView:
    """Returns one of the caller's jobs (another tenant's id is not found)."""
    who = principal("jobs:read")
    return JobView.of(container().jobs.get(who.tenant, job_id))


@router.get("/v1/jobs/<job_id>/executions", summary="List a job's attempts", tags=["jobs"])
def job_executions(job_id: JobId) -> dict[str, list[ExecutionView]]:
    """Returns every attempt of one of the caller's jobs, oldest first."""
    who = principal("jobs:read")
    jobs = container().jobs
    jobs.get(who.tenant, job_id)  # 404 for an unknown or foreign id, even if it had executions
    return {"executions": [ExecutionView.of(e) for e in jobs.executions(who.tenant, job_id)]}
