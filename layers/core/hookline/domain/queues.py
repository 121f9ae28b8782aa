"""Named queues: live flow control (pause, rate, concurrency) shared by the jobs that name the queue.

The record in DynamoDB is the truth; Redis holds a copy of the live settings that expires, so a lost write
heals from the record. Rate, concurrency and pause are read at each delivery (a change applies to jobs
already waiting); retry and timeout defaults are copied into each job at submit (a job carries its policy).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hookline.domain import constants
from hookline.domain.errors import InvalidRequest
from hookline.domain.models import QUEUE_NAME_PATTERN, JobRequest

__all__ = [
    "QUEUE_NAME_PATTERN",
    "Admission",
    "Queue",
    "QueueFigures",
    "QueueRateLimit",
    "QueueRequest",
    "QueueVerdict",
    "limiter_name",
]


def limiter_name(queue: str) -> str:
    """Returns the concurrency-limit key name a queue's semaphore uses (a job's own key holds no "/")."""
    return f"q/{queue}"


class QueueRateLimit(BaseModel):
    """At most `limit` deliveries of the queue in any window of `period_s` seconds."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    limit: int = Field(ge=1, le=100_000)
    period_s: float = Field(gt=0, le=86_400)


class QueueRequest(BaseModel):
    """What a client sends to create or replace a queue (PUT /v1/queues/{name})."""

    model_config = ConfigDict(extra="forbid")
    rate_limit: QueueRateLimit | None = None
    max_concurrency: int | None = Field(default=None, ge=1, le=10_000)
    max_attempts: int | None = Field(default=None, ge=1, le=constants.MAX_ATTEMPTS_LIMIT)
    min_backoff_s: float | None = Field(default=None, gt=0, le=86_400)
    max_backoff_s: float | None = Field(default=None, gt=0, le=86_400)
    timeout_s: float | None = Field(default=None, ge=1, le=constants.MAX_TIMEOUT_S)
    version: int | None = Field(
        default=None, ge=1, description="Replace only if the queue is still at this version (else 409)."
    )

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        low, high = self.min_backoff_s, self.max_backoff_s
        if low is not None and high is not None and low > high:
            raise ValueError("min_backoff_s must not exceed max_backoff_s")
        return self


@dataclass(frozen=True)
class Queue:
    """A tenant's named queue as stored (DynamoDB item `queue#<name>`)."""

    tenant: str
    name: str
    rate_limit: int = 0  # 0: no rate limit
    rate_period_ms: int = 0
    max_concurrency: int = 0  # 0: no concurrency limit
    max_attempts: int | None = None
    min_backoff_ms: int | None = None
    max_backoff_ms: int | None = None
    timeout_ms: int | None = None
    paused_since_ms: int = 0  # 0: running
    version: int = 1
    created_ms: int = 0
    updated_ms: int = 0

    @property
    def paused(self) -> bool:
        """Tells whether deliveries of the queue are held (parked, no attempt spent)."""
        return self.paused_since_ms > 0

    @classmethod
    def from_request(cls, tenant: str, name: str, request: QueueRequest, now_ms: int) -> Queue:
        """Returns a new queue (version 1, running) from a request."""
        rate = request.rate_limit

        def ms(seconds: float | None) -> int | None:
            return None if seconds is None else int(seconds * 1000)

        return cls(
            tenant=tenant,
            name=name,
            rate_limit=rate.limit if rate else 0,
            rate_period_ms=int(rate.period_s * 1000) if rate else 0,
            max_concurrency=request.max_concurrency or 0,
            max_attempts=request.max_attempts,
            min_backoff_ms=ms(request.min_backoff_s),
            max_backoff_ms=ms(request.max_backoff_s),
            timeout_ms=ms(request.timeout_s),
            created_ms=now_ms,
            updated_ms=now_ms,
        )

    def apply_defaults(self, request: JobRequest) -> JobRequest:
        """Returns the request with the queue's retry and timeout defaults in every field the client left out.

        Copied at submit: a job carries its own policy, so a later change of the queue's defaults does not
        touch jobs already accepted.
        """
        given = request.model_fields_set
        changes: dict[str, float | int] = {}
        if self.max_attempts is not None and "max_attempts" not in given:
            changes["max_attempts"] = self.max_attempts
        for field, value in (
            ("min_backoff_s", self.min_backoff_ms),
            ("max_backoff_s", self.max_backoff_ms),
            ("timeout_s", self.timeout_ms),
        ):
            if value is not None and field not in given:
                changes[field] = value / 1000
        if not changes:
            return request
        merged = request.model_copy(update=changes)
        if merged.min_backoff_s > merged.max_backoff_s:
            raise InvalidRequest(
                "min_backoff_s exceeds max_backoff_s once the queue's defaults are applied", "min_backoff_s"
            )
        return merged


class Admission(IntEnum):
    """queue_admit.lua's answer."""

    REFUSED = 0
    ADMITTED = 1
    PAUSED = 2
    UNKNOWN = 3  # no live settings in Redis: read the record and write them


@dataclass(frozen=True)
class QueueVerdict:
    """What queue_admit.lua decided for one delivery."""

    admission: Admission
    retry_at_ms: int = 0
    took_slot: bool = False  # a concurrency slot the caller must release when the delivery ends


@dataclass(frozen=True)
class QueueFigures:
    """A queue's live figures, as Redis holds them."""

    parked: int  # deliveries set aside while paused, over every shard
    waiting_for_turn: int  # deliveries a limiter refused and told a turn
    in_flight: int  # slots held (deliveries running)
    in_window: int  # deliveries admitted in the current rate window
