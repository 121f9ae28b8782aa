"""What the API returns: the shared models (hookline_client.schemas) built from domain objects, with times as
RFC 3339 strings. The models are defined once, in the client's distribution, so the server documents and
the client parses the same shapes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hookline.domain.models import Execution, Job
from hookline_client.schemas import (
    BatchItemResult,
    BatchRequest,
    BatchResultView,
    DeadLetterReplayRequest,
    DeadLetterReplayView,
    ErrorDetail,
    ErrorEnvelope,
    ExecutionsView,
    ExecutionView,
    HealthView,
    JobPageView,
    JobView,
    ReplayFailureView,
)

__all__ = [
    "BatchItemResult",
    "BatchRequest",
    "BatchResultView",
    "DeadLetterReplayRequest",
    "DeadLetterReplayView",
    "ErrorDetail",
    "ErrorEnvelope",
    "ExecutionView",
    "ExecutionsView",
    "HealthView",
    "JobPageView",
    "JobView",
    "ReplayFailureView",
    "error_body",
    "execution_view",
    "job_view",
    "rfc3339",
]


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


def job_view(job: Job) -> JobView:
    """Returns the view of a job."""
    return JobView(
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
        queue=job.flow.queue,
    )


def execution_view(execution: Execution) -> ExecutionView:
    """Returns the view of an execution record."""
    return ExecutionView(
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


def error_body(code: str, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Returns the one error envelope every route answers with."""
    return {"error": {"code": code, "message": message, "details": details or []}}
