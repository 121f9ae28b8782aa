"""Every API route as a Call (method, path, query, body, answer model), shared by Client and AsyncClient.

The answer models are the API's own pydantic views, so a client and the server agree by construction.
"""

from __future__ import annotations

import email.utils
import json
import ssl
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from hookline_client.errors import HooklineApiError, error_for
from hookline_client.schemas import (
    BatchResultView,
    DeadLetterReplayView,
    ExecutionsView,
    HealthView,
    JobPageView,
    JobView,
    QueueListView,
    QueueView,
    ScheduleJobsView,
    SchedulePageView,
    ScheduleView,
    SigningSecretRotationView,
    StatsView,
)

T = TypeVar("T")
REQUEST_ID_HEADER = "x-request-id"
USER_AGENT = "hookline-python-client/1"

# What a call takes: the fields of the API's request body, as a mapping or any pydantic model (the server's
# JobRequest, ScheduleRequest and ScheduleUpdate among them: only the fields set are sent).
JobInput = BaseModel | Mapping[str, Any]
ScheduleInput = BaseModel | Mapping[str, Any]
ScheduleChange = BaseModel | Mapping[str, Any]
QueueInput = BaseModel | Mapping[str, Any]


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request to make and the model its successful answer decodes into (type(None): no body)."""

    method: str
    path: str
    model: type[T]
    params: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    # Whether repeating the request after a 503 is safe: it cannot create a second item.
    retry_unavailable: bool = True


@dataclass(frozen=True)
class RetryPolicy:
    """When to retry a 429 or 503: at most max_retries times, each wait at most max_wait_s.

    The wait is the answer's Retry-After when it has one (a Retry-After longer than max_wait_s is not
    waited for: the error is raised), else base_s doubled per retry.
    """

    max_retries: int = 3
    max_wait_s: float = 30.0
    base_s: float = 0.5

    def wait_s(self, call: Call[Any], response: httpx.Response, retries_done: int) -> float | None:
        """Returns how long to wait before retrying, or None when the answer is final."""
        status = response.status_code
        if retries_done >= self.max_retries:
            return None
        if status != 429 and not (status == 503 and call.retry_unavailable):
            return None
        after = retry_after_s(response)
        if after is None:
            return float(min(self.base_s * 2**retries_done, self.max_wait_s))
        return after if after <= self.max_wait_s else None


def retry_after_s(response: httpx.Response) -> float | None:
    """Returns the Retry-After of an answer in seconds (delta or HTTP date), or None."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def decode(call: Call[T], response: httpx.Response) -> T:
    """Returns the answer as call's model, or raises the HooklineApiError subclass for its status."""
    if response.status_code >= 400:
        raise api_error(response)
    if call.model is type(None):
        return None  # type: ignore[return-value,unused-ignore]  # T is None (mypy versions differ here)
    if issubclass(call.model, BaseModel):
        return call.model.model_validate_json(response.content)
    return response.json()  # type: ignore[no-any-return]  # T is dict[str, Any] (the OpenAPI document)


def api_error(response: httpx.Response) -> HooklineApiError:
    """Returns the exception for an error answer, from its envelope when it has one."""
    try:
        body: Any = response.json()
    except (ValueError, UnicodeDecodeError):
        body = response.text
    envelope = body.get("error") if isinstance(body, dict) else None
    if isinstance(envelope, dict):
        code, message = str(envelope.get("code", "error")), str(envelope.get("message", ""))
        details = envelope.get("details") if isinstance(envelope.get("details"), list) else []
    else:
        # Not Hookline's envelope: API Gateway's own answer (an undeclared route) or a proxy's.
        code = "http_error"
        message = str(body.get("message", body)) if isinstance(body, dict) else str(body)[:200]
        details = []
    return error_for(response.status_code)(
        response.status_code,
        code,
        message,
        details,
        response.headers.get(REQUEST_ID_HEADER),
        retry_after_s(response),
        body,
    )


def _dump(value: BaseModel | Mapping[str, Any]) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_unset=True)
    return dict(value)


def _id(value: str) -> str:
    return quote(value, safe="")


def _page(limit: int | None, cursor: str | None, **extra: Any) -> dict[str, Any]:
    params = {name: value for name, value in extra.items() if value is not None}
    if limit is not None:
        params["limit"] = limit
    if cursor is not None:
        params["cursor"] = cursor
    return params


def submit_job(job: JobInput) -> Call[JobView]:
    """POST /v1/jobs; retried after a 503 only with an idempotency key (else it could store two jobs)."""
    body = _dump(job)
    return Call("POST", "/v1/jobs", JobView, body=body, retry_unavailable=bool(body.get("idempotency_key")))


def submit_batch(jobs: Sequence[JobInput]) -> Call[BatchResultView]:
    """POST /v1/jobs/batch; retried after a 503 only when every item has an idempotency key."""
    items = [_dump(job) for job in jobs]
    keyed = all(item.get("idempotency_key") for item in items)
    return Call("POST", "/v1/jobs/batch", BatchResultView, body={"jobs": items}, retry_unavailable=keyed)


def list_jobs(
    status: str | None = None, limit: int | None = None, cursor: str | None = None
) -> Call[JobPageView]:
    """GET /v1/jobs."""
    return Call("GET", "/v1/jobs", JobPageView, params=_page(limit, cursor, status=status))


def get_job(job_id: str) -> Call[JobView]:
    """GET /v1/jobs/{id}."""
    return Call("GET", f"/v1/jobs/{_id(job_id)}", JobView)


def cancel_job(job_id: str) -> Call[JobView]:
    """DELETE /v1/jobs/{id}."""
    return Call("DELETE", f"/v1/jobs/{_id(job_id)}", JobView)


def list_executions(job_id: str) -> Call[ExecutionsView]:
    """GET /v1/jobs/{id}/executions."""
    return Call("GET", f"/v1/jobs/{_id(job_id)}/executions", ExecutionsView)


def replay_job(job_id: str) -> Call[JobView]:
    """POST /v1/jobs/{id}/replay (a repeat answers 409: it cannot replay twice)."""
    return Call("POST", f"/v1/jobs/{_id(job_id)}/replay", JobView)


def run_job_now(job_id: str) -> Call[JobView]:
    """POST /v1/jobs/{id}/run-now (a repeat after a lost reply moves it again, still delivered once)."""
    return Call("POST", f"/v1/jobs/{_id(job_id)}/run-now", JobView)


def list_dead_letters(limit: int | None = None, cursor: str | None = None) -> Call[JobPageView]:
    """GET /v1/dead-letters."""
    return Call("GET", "/v1/dead-letters", JobPageView, params=_page(limit, cursor))


def replay_dead_letters(ids: Sequence[str] | None = None) -> Call[DeadLetterReplayView]:
    """POST /v1/dead-letters/replay with the ids, or (None) with all: true."""
    body: dict[str, Any] = {"all": True} if ids is None else {"ids": list(ids)}
    return Call("POST", "/v1/dead-letters/replay", DeadLetterReplayView, body=body)


def create_schedule(schedule: ScheduleInput) -> Call[ScheduleView]:
    """POST /v1/schedules (never retried after a 503: it could create two schedules)."""
    return Call("POST", "/v1/schedules", ScheduleView, body=_dump(schedule), retry_unavailable=False)


def list_schedules(limit: int | None = None, cursor: str | None = None) -> Call[SchedulePageView]:
    """GET /v1/schedules."""
    return Call("GET", "/v1/schedules", SchedulePageView, params=_page(limit, cursor))


def get_schedule(schedule_id: str) -> Call[ScheduleView]:
    """GET /v1/schedules/{id} (with its next fire times)."""
    return Call("GET", f"/v1/schedules/{_id(schedule_id)}", ScheduleView)


def update_schedule(schedule_id: str, change: ScheduleChange) -> Call[ScheduleView]:
    """PATCH /v1/schedules/{id} (a merge patch: the same patch twice leaves the same schedule)."""
    return Call("PATCH", f"/v1/schedules/{_id(schedule_id)}", ScheduleView, body=_dump(change))


def delete_schedule(schedule_id: str) -> Call[None]:
    """DELETE /v1/schedules/{id}."""
    return Call("DELETE", f"/v1/schedules/{_id(schedule_id)}", type(None))


def list_schedule_jobs(
    schedule_id: str, limit: int | None = None, cursor: str | None = None
) -> Call[ScheduleJobsView]:
    """GET /v1/schedules/{id}/jobs."""
    return Call(
        "GET", f"/v1/schedules/{_id(schedule_id)}/jobs", ScheduleJobsView, params=_page(limit, cursor)
    )


def put_queue(name: str, queue: QueueInput) -> Call[QueueView]:
    """PUT /v1/queues/{name} (create or replace; a `version` in the body makes it conditional)."""
    return Call("PUT", f"/v1/queues/{_id(name)}", QueueView, body=_dump(queue))


def list_queues() -> Call[QueueListView]:
    """GET /v1/queues."""
    return Call("GET", "/v1/queues", QueueListView)


def get_queue(name: str) -> Call[QueueView]:
    """GET /v1/queues/{name} (with its live figures)."""
    return Call("GET", f"/v1/queues/{_id(name)}", QueueView)


def delete_queue(name: str) -> Call[QueueView]:
    """DELETE /v1/queues/{name}."""
    return Call("DELETE", f"/v1/queues/{_id(name)}", QueueView)


def pause_queue(name: str) -> Call[QueueView]:
    """POST /v1/queues/{name}/pause (pausing a paused queue changes nothing)."""
    return Call("POST", f"/v1/queues/{_id(name)}/pause", QueueView)


def resume_queue(name: str) -> Call[QueueView]:
    """POST /v1/queues/{name}/resume (resuming a running queue changes nothing)."""
    return Call("POST", f"/v1/queues/{_id(name)}/resume", QueueView)


def get_stats() -> Call[StatsView]:
    """GET /v1/stats."""
    return Call("GET", "/v1/stats", StatsView)


def rotate_signing_secret(overlap_s: int | None = None) -> Call[SigningSecretRotationView]:
    """POST /v1/signing-secret/rotate (never retried after a 503: a second rotation would end the first's
    overlap, and the secret it returned would be lost)."""
    body = {} if overlap_s is None else {"overlap_s": overlap_s}
    return Call(
        "POST", "/v1/signing-secret/rotate", SigningSecretRotationView, body=body, retry_unavailable=False
    )


def health() -> Call[HealthView]:
    """GET /healthz."""
    return Call("GET", "/healthz", HealthView)


def openapi() -> Call[dict[str, Any]]:
    """GET /openapi.json."""
    return Call("GET", "/openapi.json", dict)


def request_kwargs(call: Call[Any]) -> dict[str, Any]:
    """Returns the httpx request arguments of a call."""
    kwargs: dict[str, Any] = {"params": call.params or None}
    if call.body is not None:
        kwargs["content"] = json.dumps(call.body, ensure_ascii=False).encode()
        kwargs["headers"] = {"Content-Type": "application/json"}
    return kwargs


@cache
def tls_context() -> ssl.SSLContext:
    """Returns one verifying TLS context per process: building one reads the CA bundle (about 0.5 s)."""
    return httpx.create_ssl_context()


def headers(api_key: str | None) -> dict[str, str]:
    """Returns the headers every request carries."""
    base = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    return base | ({"Authorization": f"Bearer {api_key}"} if api_key else {})
