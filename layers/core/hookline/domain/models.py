"""The job, its request, its flow-control settings and its execution records."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hookline.domain import constants
from hookline.domain.request_rules import EARLIEST_TIME, LATEST_TIME, ClientTime, check_headers

# A queue name: also part of Redis key names, so no "/", ":", brace or space.
QUEUE_NAME_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"

HttpMethod = Literal["POST", "PUT", "PATCH", "GET", "DELETE"]


class JobStatus(StrEnum):
    """Where a job is in its life (docs/concepts.md, "States")."""

    SCHEDULED = "scheduled"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    DEAD = "dead"
    CANCELLED = "cancelled"

    @property
    def is_live(self) -> bool:
        """Tells whether the job can still fire (and so must be indexed in Redis)."""
        return self in (JobStatus.SCHEDULED, JobStatus.RUNNING)


class RateLimit(BaseModel):
    """At most `limit` deliveries for `key` in any window of `period_s` seconds."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    key: str = Field(min_length=1, max_length=128, pattern=r"^[^\s/]+$")
    limit: int = Field(ge=1, le=100_000)
    period_s: float = Field(gt=0, le=86_400)


class ConcurrencyLimit(BaseModel):
    """At most `limit` deliveries for `key` in flight at once."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    key: str = Field(min_length=1, max_length=128, pattern=r"^[^\s/]+$")
    limit: int = Field(ge=1, le=10_000)


def _encoded(body: Any) -> str:
    """Returns the text a job's body is sent as: a string as-is, any other JSON value as compact JSON."""
    if body is None:
        return ""
    if isinstance(body, str):
        return body
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


class JobRequest(BaseModel):
    """What a client sends to create a job (POST /v1/jobs)."""

    model_config = ConfigDict(extra="forbid")
    url: str = Field(
        min_length=1,
        max_length=2048,
        description="http(s) URL to call.",
        # In the schema for clients and fuzzers; the validator below gives the clearer message.
        json_schema_extra={"pattern": "^[Hh][Tt][Tt][Pp][Ss]?://"},
    )
    method: HttpMethod = "POST"
    headers: dict[str, str] = Field(
        default_factory=dict,
        description=(
            f"Extra request headers: at most {constants.MAX_HEADERS}; names are HTTP tokens; values hold no "
            f"control character, each at most {constants.MAX_HEADER_VALUE_BYTES} bytes, and all names and "
            f"values together at most {constants.MAX_HEADERS_BYTES} bytes (UTF-8)."
        ),
    )
    body: Any = Field(
        default=None,
        description="A string is sent as-is; any other JSON value is sent as JSON.",
    )
    delay_s: float | None = Field(default=None, ge=0, le=constants.MAX_DELAY_S)
    run_at: ClientTime | None = Field(
        default=None,
        description=f"RFC 3339 time with an offset, from {EARLIEST_TIME} to before {LATEST_TIME}.",
    )
    max_attempts: int = Field(default=constants.DEFAULT_MAX_ATTEMPTS, ge=1, le=constants.MAX_ATTEMPTS_LIMIT)
    min_backoff_s: float = Field(default=constants.DEFAULT_MIN_BACKOFF_S, gt=0, le=86_400)
    max_backoff_s: float = Field(
        default=constants.DEFAULT_MAX_BACKOFF_S,
        gt=0,
        le=86_400,
        description="The longest wait between two attempts. A receiver's Retry-After is honoured up to it, "
        "never past it.",
    )
    timeout_s: float = Field(default=constants.DEFAULT_TIMEOUT_S, ge=1, le=constants.MAX_TIMEOUT_S)
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=128)
    rate_limit: RateLimit | None = None
    max_concurrency: ConcurrencyLimit | None = None
    queue: str | None = Field(
        default=None,
        pattern=QUEUE_NAME_PATTERN,
        description="A named queue (PUT /v1/queues/{name}): its pause, rate and concurrency apply at each "
        "delivery; its retry and timeout defaults are copied into the job at submit.",
    )

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        lowered = value.lower()
        if not (lowered.startswith("http://") or lowered.startswith("https://")):
            raise ValueError("url must start with http:// or https://")
        return value

    _headers = field_validator("headers")(check_headers)

    @field_validator("body")
    @classmethod
    def _body_size(cls, value: Any) -> Any:
        # Checked on the field, so that the error names `body`.
        if len(_encoded(value).encode()) > constants.MAX_BODY_BYTES:
            raise ValueError(f"body exceeds {constants.MAX_BODY_BYTES} bytes")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.delay_s is not None and self.run_at is not None:
            raise ValueError("give delay_s or run_at, not both")
        if self.min_backoff_s > self.max_backoff_s:
            raise ValueError("min_backoff_s must not exceed max_backoff_s")
        return self

    def encoded_body(self) -> str:
        """Returns the exact text that will be sent as the callback's body."""
        return _encoded(self.body)

    def due_ms(self, now_ms: int) -> int:
        """Returns when the first attempt is due, in ms since the epoch."""
        if self.run_at is not None:
            return int(self.run_at.timestamp() * 1000)
        if self.delay_s is not None:
            return now_ms + int(self.delay_s * 1000)
        return now_ms


@dataclass(frozen=True)
class FlowControl:
    """The limiter settings a delivery must pass; carried in the Redis member so no read is needed."""

    rate_key: str | None = None
    rate_limit: int = 0
    rate_period_ms: int = 0
    concurrency_key: str | None = None
    concurrency_limit: int = 0
    # The named queue whose live settings (pause, rate, concurrency) are read at each delivery; only the
    # name is carried, never the settings, so a change applies to jobs already waiting.
    queue: str | None = None

    @property
    def is_empty(self) -> bool:
        """Tells whether no limiter applies."""
        return self.rate_key is None and self.concurrency_key is None and self.queue is None

    def encode(self) -> str:
        """Returns a compact, deterministic text form (the queue last, and only when set: members written
        before queues existed read back unchanged)."""
        fields: list[str | int | None] = [
            self.rate_key,
            self.rate_limit,
            self.rate_period_ms,
            self.concurrency_key,
            self.concurrency_limit,
        ]
        if self.queue is not None:
            fields.append(self.queue)
        return json.dumps(fields, separators=(",", ":"))

    @classmethod
    def decode(cls, text: str) -> FlowControl:
        """Parses the form made by encode()."""
        rate_key, rate_limit, rate_period_ms, concurrency_key, concurrency_limit, *queue = json.loads(text)
        return cls(
            rate_key,
            int(rate_limit),
            int(rate_period_ms),
            concurrency_key,
            int(concurrency_limit),
            queue[0] if queue else None,
        )


@dataclass(frozen=True)
class Member:
    """A job's entry in the Redis indexes: `tenant/job_id/generation[/flow]`.

    The generation makes every (re)schedule a distinct member, so a stale entry can be recognised and dropped.
    """

    tenant: str
    job_id: str
    generation: int
    flow: FlowControl = field(default_factory=FlowControl)

    def encode(self) -> str:
        """Returns the member string stored in ZSETs and stream entries."""
        base = f"{self.tenant}/{self.job_id}/{self.generation}"
        return base if self.flow.is_empty else f"{base}/{self.flow.encode()}"

    @classmethod
    def decode(cls, text: str) -> Member:
        """Parses the string made by encode()."""
        parts = text.split("/", 3)
        flow = FlowControl.decode(parts[3]) if len(parts) == 4 else FlowControl()
        return cls(parts[0], parts[1], int(parts[2]), flow)


@dataclass(frozen=True)
class Job:
    """A job as stored in DynamoDB (the source of truth)."""

    tenant: str
    job_id: str
    status: JobStatus
    generation: int
    attempt: int
    max_attempts: int
    url: str
    method: str
    headers: dict[str, str]
    body: str
    due_ms: int
    created_ms: int
    updated_ms: int
    min_backoff_ms: int
    max_backoff_ms: int
    timeout_ms: int
    shard: int
    idempotency_key: str | None = None
    flow: FlowControl = field(default_factory=FlowControl)
    lease_expires_at_ms: int | None = None
    last_status_code: int | None = None
    last_error: str | None = None
    schedule_id: str | None = None
    fire_time_ms: int | None = None
    # Attempts made before the current run (a replay starts a new run with a fresh budget). `attempt`
    # itself never resets, so every attempt keeps its own execution record.
    attempt_base: int = 0

    @property
    def run_attempt(self) -> int:
        """Returns the number of the latest attempt within the current run (1-based; 0 before any)."""
        return self.attempt - self.attempt_base

    def fire_lag_ms(self, now_ms: int) -> int:
        """Returns how late a delivery starting at now_ms fires (negative when early).

        Lateness runs from when the job could first fire: its due time, or its acceptance when it was
        accepted already due. A run_at in the past asks to fire at once; the time before the acceptance is
        not lateness (counted, one job with a run_at a year back reads as a year of lag). A schedule's
        occurrence was accepted with its schedule, before its fire time: its lag runs from the fire time,
        so an occurrence a stalled promoter created late still counts as late.
        """
        if self.schedule_id is not None:
            return now_ms - self.due_ms
        return now_ms - max(self.due_ms, self.created_ms)

    def member(self) -> Member:
        """Returns this job's Redis index member for its current generation."""
        return Member(self.tenant, self.job_id, self.generation, self.flow)

    def with_changes(self, **changes: Any) -> Job:
        """Returns a copy with the given fields replaced.

        As dataclasses.replace, without its cost (it rebuilds the arguments of __init__ field by field,
        and the executor copies a job four times per attempt): Job has no
        __post_init__ and no field with init=False, so copying the instance's dict and overwriting the
        changed fields gives what replace gives. A name that is not a field is refused, as replace refuses it.
        """
        unknown = changes.keys() - _JOB_FIELDS
        if unknown:
            raise TypeError(f"Job has no field {sorted(unknown)[0]!r}")
        copied = object.__new__(Job)
        copied.__dict__.update(self.__dict__, **changes)
        return copied


_JOB_FIELDS = frozenset(f.name for f in fields(Job))


class ExecutionOutcome(StrEnum):
    """How one attempt ended."""

    SUCCEEDED = "succeeded"
    RETRYABLE = "retryable"
    PERMANENT = "permanent"
    LEASE_EXPIRED = "lease_expired"


@dataclass(frozen=True)
class Execution:
    """One delivery attempt of a job, as recorded in the executions table."""

    tenant: str
    job_id: str
    attempt: int
    generation: int
    started_ms: int  # when the attempt was admitted (limiters passed)
    finished_ms: int
    outcome: ExecutionOutcome
    latency_ms: int = 0  # the HTTP exchange alone
    status_code: int | None = None
    error_class: str | None = None
    error_message: str | None = None
    response_preview: str | None = None
