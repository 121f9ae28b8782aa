"""What the API returns: views of domain objects, with times as RFC 3339 strings."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from hookline.domain.models import Execution, Job


def rfc3339(time_ms: int | None) -> str | None:
    """Formats ms since the epoch as RFC 3339 UTC with milliseconds; None when it has no such form.

    Requests are bounded to a window that always has one, but items stored before the bound (years 0 or
    10000 in UTC) must not turn every listing of their tenant into a 500.
    """
    if time_ms is None:
        return None
    try:
        moment = datetime.fromtimestamp(time_ms / 1000, tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class JobView(BaseModel):
    """A job as the API shows it."""

    id: str
    status: str
    url: str
    method: str
    headers: dict[str, str]
    body: str
    run_at: str | None
    attempt: int
    max_attempts: int
    timeout_s: float
    created_at: str | None
    updated_at: str | None
    idempotency_key: str | None = None
    last_status_code: int | None = None
    last_error: str | None = None
    schedule_id: str | None = None

    @classmethod
    def of(cls, job: Job) -> JobView:
        """Returns the view of a job."""
        return cls(
            id=job.job_id,
            status=job.status.value,
            url=job.url,
            method=job.method,
            headers=job.headers,
            body=job.body,
            run_at=rfc3339(job.due_ms),
            attempt=job.run_attempt,
            max_attempts=job.max_attempts,
            timeout_s=job.timeout_ms / 1000,
            created_at=rfc3339(job.created_ms),
            updated_at=rfc3339(job.updated_ms),
            idempotency_key=job.idempotency_key,
            last_status_code=job.last_status_code,
            last_error=job.last_error,
            schedule_id=job.schedule_id,
        )


class ExecutionView(BaseModel):
    """One attempt as the API shows it."""

    attempt: int
    outcome: str
    started_at: str | None
    finished_at: str | None
    latency_ms: int
    status_code: int | None = None
    error_class: str | None = None
    error_message: str | None = None
    response_preview: str | None = None

    @classmethod
    def of(cls, execution: Execution) -> ExecutionView:
        """Returns the view of an execution record."""
        return cls(
            attempt=execution.attempt,
            outcome=execution.outcome.value,
            started_at=rfc3339(execution.started_ms),
            finished_at=rfc3339(execution.finished_ms),
            latency_ms=execution.latency_ms,
            status_code=execution.status_code,
            error_class=execution.error_class,
            error_message=execution.error_message,
            response_preview=execution.response_preview,
        )


class JobPageView(BaseModel):
    """One page of jobs, newest first; pass `next` back as `cursor` for the following page."""

    jobs: list[JobView]
    next: str | None = Field(description="Opaque token for the next page; null on the last page.")


class ExecutionsView(BaseModel):
    """Every attempt of a job, oldest first."""

    executions: list[ExecutionView]


class ErrorDetail(BaseModel):
    """What went wrong: a machine-readable code, a message and per-field details."""

    code: str
    message: str
    details: list[dict[str, Any]] = Field(default_factory=list)


class ErrorEnvelope(BaseModel):
    """The one shape of every error answer."""

    error: ErrorDetail


class BatchRequest(BaseModel):
    """Up to 100 jobs to submit in one request; each is checked and stored on its own."""

    jobs: list[dict[str, Any]] = Field(
        min_length=1, max_length=100, description="Each item has the fields of POST /v1/jobs."
    )


class BatchItemResult(BaseModel):
    """The outcome of one batch item: the status it would have had alone, and the job or the error."""

    index: int
    status: int
    job: JobView | None = None
    error: ErrorDetail | None = None


class BatchResultView(BaseModel):
    """One result per submitted item, in request order."""

    results: list[BatchItemResult]


class DeadLetterReplayRequest(BaseModel):
    """Which dead jobs to replay: the given ids, or (all) up to 100 of the newest."""

    model_config = ConfigDict(extra="forbid")
    ids: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(
        default=None, min_length=1, max_length=100
    )
    all: StrictBool = False  # a JSON boolean only: 1 or "true" is refused, never taken as true

    @model_validator(mode="after")
    def _one_selection(self) -> DeadLetterReplayRequest:
        if (self.ids is None) == (not self.all):
            raise ValueError("give exactly one of ids or all: true")
        return self


class ReplayFailureView(BaseModel):
    """A job a bulk replay left alone, and why."""

    id: str
    error: ErrorDetail


class DeadLetterReplayView(BaseModel):
    """What a bulk replay did; while `more` is true, more dead jobs may remain: call again."""

    replayed: list[JobView]
    failed: list[ReplayFailureView]
    more: bool


class HealthView(BaseModel):
    """Each dependency's state."""

    status: str
    checks: dict[str, str]


def error_body(code: str, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Returns the one error envelope every route answers with."""
    return {"error": {"code": code, "message": message, "details": details or []}}
