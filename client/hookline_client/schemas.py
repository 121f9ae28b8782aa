"""The API's answers and bodies as pydantic models, shared by the server (which builds them and documents
them in its OpenAPI document) and the client (which parses them): one definition of every shape.

Times are RFC 3339 UTC strings with milliseconds. This module imports nothing of the server.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator


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
    queue: str | None = None


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


class QueueFiguresView(BaseModel):
    """A queue's live figures, read from Redis when asked."""

    waiting: int = Field(
        description="Deliveries held back now: parked while paused, or refused by the queue's limits and "
        "told a turn (jobs not yet due are not counted)."
    )
    in_flight: int = Field(description="Deliveries running now (slots held).")
    in_rate_window: int = Field(description="Deliveries started in the current rate window.")


class QueueView(BaseModel):
    """A named queue as the API shows it."""

    name: str
    rate_limit: dict[str, float] | None = Field(default=None, description="{limit, period_s}, or none.")
    max_concurrency: int | None = None
    max_attempts: int | None = None
    min_backoff_s: float | None = None
    max_backoff_s: float | None = None
    timeout_s: float | None = None
    paused: bool
    paused_since: str | None = None
    version: int
    created_at: str | None
    updated_at: str | None
    figures: QueueFiguresView | None = Field(default=None, description="Live figures (one queue's GET only).")


class QueueListView(BaseModel):
    """Every queue of the caller, by name."""

    queues: list[QueueView]


class SchedulePageView(BaseModel):
    """One page of schedules, newest first; pass `next` back as `cursor` for the following page."""

    schedules: list[ScheduleView]
    next: str | None


class ScheduleJobsView(BaseModel):
    """One page of the jobs a schedule created, newest occurrence first."""

    jobs: list[JobView]
    next: str | None


class OutcomeCounts(BaseModel):
    """How many of each outcome were recorded."""

    submitted: int = Field(description="Jobs accepted: by POST /v1/jobs, a batch, or a schedule firing.")
    succeeded: int = Field(description="Attempts answered 2xx.")
    retried: int = Field(description="Attempts that failed with another attempt scheduled.")
    dead: int = Field(description="Jobs dead-lettered (by an attempt, or out of deliveries).")
    cancelled: int
    replayed: int


class MinuteView(BaseModel):
    """One minute of the window."""

    start: str
    counts: OutcomeCounts
    success_rate: float | None = Field(description="succeeded / (succeeded + retried + dead); null if none.")
    fire_lag_ms_avg: float | None = Field(description="Mean delay from due time to dispatch; null if none.")


class BacklogView(BaseModel):
    """Jobs waiting in the live indexes, which all tenants share: these counts are the deployment's."""

    ready: int = Field(description="Due now, not yet finished: waiting for the promoter or an executor.")
    due: int = Field(description="Waiting for a later time: first run, retry back-off or limiter delay.")


class StatsView(BaseModel):
    """The caller's statistics over the last hour, read from counters (never from the jobs table)."""

    window_minutes: int
    generated_at: str
    dead_letters: int = Field(description="The tenant's dead jobs now (replayed and expired ones excluded).")
    backlog: BacklogView
    last_hour: OutcomeCounts
    success_rate: float | None = Field(description="Over the last hour; null when no attempt finished.")
    fire_lag_ms_avg: float | None = Field(description="Over the last hour; null when nothing was dispatched.")
    minutes: list[MinuteView] = Field(description="One entry per minute, oldest first, the current last.")


# A rotation's overlap: how long the replaced signing secret signs too. A day by default, at most a week.
DEFAULT_ROTATION_OVERLAP_S = 24 * 3600
MAX_ROTATION_OVERLAP_S = 7 * 24 * 3600


class SigningSecretRotationRequest(BaseModel):
    """How long the secret being replaced keeps signing too (0: it stops at once, as for a leaked secret)."""

    model_config = ConfigDict(extra="forbid")
    overlap_s: int = Field(
        default=DEFAULT_ROTATION_OVERLAP_S,
        ge=0,
        le=MAX_ROTATION_OVERLAP_S,
        strict=True,
        description="Seconds the replaced secret signs too, 0 to 604800 (a week); a day when left out.",
    )


class SigningSecretRotationView(BaseModel):
    """The tenant's new signing secret, shown this once, and until when the replaced one signs too."""

    secret: str = Field(description="The new `whsec_` secret: store it now, it is never shown again.")
    previous_signs_until: str | None = Field(
        description="Until then callbacks carry a signature with the replaced secret too; null: they do not."
    )
