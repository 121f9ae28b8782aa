"""Does the schedule model: what a client sends, what is stored, and how a due occurrence is handled."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from hookline.domain import constants
from hookline.domain.cron.expression import spec_for, zone_of
from hookline.domain.errors import InvalidRequest
from hookline.domain.models import JobRequest
from hookline.domain.request_rules import EARLIEST_TIME, LATEST_TIME, ClientTime

# A schedule decides when its jobs run and creates each at most once: these request fields have no place.
_TIMING_FIELDS = ("delay_s", "run_at", "idempotency_key")
_WINDOW = f"from {EARLIEST_TIME} to before {LATEST_TIME}"


def template_text(job: Mapping[str, Any]) -> str:
    """Returns a job template as the schedule item stores it: compact JSON, non-ASCII kept as UTF-8."""
    return json.dumps(job, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


class ScheduleTooFrequent(InvalidRequest):
    """The expression fires more often than the tenant's frequency floor allows."""

    code = "schedule_too_frequent"


class CatchUp(StrEnum):
    """What a schedule does about occurrences missed while nothing could fire it (never a burst)."""

    SKIP = "skip"  # fire nothing missed; go on with the next future occurrence
    FIRE_ONCE = "fire_once"  # fire the most recent missed occurrence once, then go on


class JobTemplate(JobRequest):
    """The job every occurrence creates: a job request without timing or idempotency fields."""

    delay_s: SkipJsonSchema[None] = None
    run_at: SkipJsonSchema[None] = None
    idempotency_key: SkipJsonSchema[None] = None

    @model_validator(mode="before")
    @classmethod
    def _no_timing(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name in _TIMING_FIELDS:
                if data.get(name) is not None:
                    raise ValueError(f"{name} is not allowed in a schedule's job: the schedule decides when")
        return data

    @model_validator(mode="after")
    def _storable(self) -> Self:
        # The schedule item holds the template as JSON text, where escaping can double a body that fits a
        # job (every quote, backslash or control character); past the limit the item outgrows DynamoDB's.
        size = len(template_text(self.model_dump(mode="json", exclude_none=True)).encode())
        if size > constants.MAX_TEMPLATE_BYTES:
            raise PydanticCustomError(
                "template_too_large",
                "the job template is {size} bytes as stored JSON; at most {limit}",
                {"size": size, "limit": constants.MAX_TEMPLATE_BYTES},
            )
        return self


def _check_expression(value: str | None) -> str | None:
    if value is not None:
        spec_for(value, "UTC")  # raises CronError (a ValueError): pydantic reports the reason
        return " ".join(value.split())
    return value


def _check_timezone(value: str | None) -> str | None:
    if value is not None:
        zone_of(value)
    return value


class ScheduleRequest(BaseModel):
    """What a client sends to create a schedule (POST /v1/schedules)."""

    model_config = ConfigDict(extra="forbid")
    expression: str = Field(
        min_length=1,
        max_length=256,
        description="5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first.",
        examples=["0 9 * * MON-FRI", "*/10 * * * * *"],
    )
    timezone: str = Field(
        default="UTC", max_length=64, description="IANA timezone, for example Europe/London."
    )
    job: JobTemplate = Field(description="The job each occurrence creates (a job request without timing).")
    start_at: ClientTime | None = Field(
        default=None, description=f"No occurrence before this time ({_WINDOW})."
    )
    end_at: ClientTime | None = Field(default=None, description=f"No occurrence after this time ({_WINDOW}).")
    catch_up: CatchUp = CatchUp.SKIP
    paused: StrictBool = False

    _expression = field_validator("expression")(_check_expression)
    _timezone = field_validator("timezone")(_check_timezone)

    @model_validator(mode="after")
    def _window(self) -> Self:
        if self.start_at is not None and self.end_at is not None and self.end_at <= self.start_at:
            raise ValueError("end_at must be after start_at")
        return self


class ScheduleUpdate(BaseModel):
    """What a client may change (PATCH /v1/schedules/{id}); fields left out keep their value, and
    `start_at` or `end_at` sent as null removes that bound (JSON merge patch)."""

    model_config = ConfigDict(extra="forbid")
    expression: str | None = Field(default=None, min_length=1, max_length=256)
    timezone: str | None = Field(default=None, max_length=64)
    job: JobTemplate | None = None
    catch_up: CatchUp | None = None
    paused: StrictBool | None = Field(default=None, description="true pauses, false resumes.")
    start_at: ClientTime | None = Field(
        default=None, description=f"No occurrence before this time ({_WINDOW}); null removes it."
    )
    end_at: ClientTime | None = Field(
        default=None, description=f"No occurrence after this time ({_WINDOW}); null removes it."
    )

    _expression = field_validator("expression")(_check_expression)
    _timezone = field_validator("timezone")(_check_timezone)


@dataclass(frozen=True)
class Schedule:
    """A schedule as stored in the jobs table; every change bumps its version."""

    tenant: str
    schedule_id: str
    expression: str
    timezone: str
    job: dict[str, Any]  # the JobTemplate, as JSON-compatible data
    catch_up: CatchUp
    paused: bool
    version: int
    shard: int
    created_ms: int
    updated_ms: int
    start_ms: int | None = None
    end_ms: int | None = None

    def template(self) -> JobTemplate:
        """Returns the job template each occurrence is made from."""
        return JobTemplate.model_validate(self.job)

    def member(self) -> ScheduleMember:
        """Returns this version's entry in the cron ZSET."""
        return ScheduleMember(self.tenant, self.schedule_id, self.version)

    def next_fire_after(self, after_ms: int) -> int | None:
        """Returns the first occurrence after after_ms inside [start, end], or None when none is left."""
        spec = spec_for(self.expression, self.timezone)
        if self.start_ms is not None:
            after_ms = max(after_ms, self.start_ms - 1)
        fire_ms = spec.next_after(after_ms)
        if fire_ms is None or (self.end_ms is not None and fire_ms > self.end_ms):
            return None
        return fire_ms

    def upcoming(self, after_ms: int, count: int) -> list[int]:
        """Returns the next count occurrences after after_ms inside [start, end]."""
        first = self.next_fire_after(after_ms)
        if first is None:
            return []
        rest = spec_for(self.expression, self.timezone).upcoming(first, count - 1, self.end_ms)
        return [first, *rest]

    def with_changes(self, **changes: Any) -> Schedule:
        """Returns a copy with the given fields replaced."""
        return replace(self, **changes)


@dataclass(frozen=True)
class ScheduleMember:
    """A schedule's cron ZSET member, `tenant/schedule_id/version`: a change makes the old one stale."""

    tenant: str
    schedule_id: str
    version: int

    def encode(self) -> str:
        """Returns the member string."""
        return f"{self.tenant}/{self.schedule_id}/{self.version}"

    @classmethod
    def decode(cls, text: str) -> ScheduleMember:
        """Parses the string made by encode()."""
        tenant, schedule_id, version = text.rsplit("/", 2)
        return cls(tenant, schedule_id, int(version))


@dataclass(frozen=True)
class Step:
    """What to do with one claimed occurrence: the instance to create (if any) and the next fire time."""

    create_fire_ms: int | None
    next_fire_ms: int | None  # None: no occurrence is left (end_at passed)


def plan(schedule: Schedule, fire_ms: int, now_ms: int, grace_ms: int) -> Step:
    """Decides what one due occurrence leads to; never more than one instance per call.

    An occurrence at most grace_ms late is on time: it is created, and the next one follows it (so a short
    stall is caught up occurrence by occurrence, each due one after the other). A later one was missed
    (downtime): `skip` creates nothing, `fire_once` creates the most recent missed occurrence; both then
    continue with the first occurrence after now, so a long gap never turns into a burst.
    """
    if now_ms - fire_ms <= grace_ms:
        return Step(fire_ms, schedule.next_fire_after(fire_ms))
    next_fire_ms = schedule.next_fire_after(now_ms)
    if schedule.catch_up is CatchUp.SKIP:
        return Step(None, next_fire_ms)
    spec = spec_for(schedule.expression, schedule.timezone)
    latest = spec.latest_at_or_before(now_ms, fire_ms)
    if latest is not None and schedule.end_ms is not None and latest > schedule.end_ms:
        latest = spec.latest_at_or_before(schedule.end_ms, fire_ms)
    return Step(latest, next_fire_ms)
