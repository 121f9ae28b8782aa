"""The values the engine exchanges with its stores and indexes: deliveries, claims, limiter verdicts."""

from __future__ import annotations

from dataclasses import dataclass

from hookline.domain.cron.schedule import ScheduleMember
from hookline.domain.models import Job, JobStatus, Member


@dataclass(frozen=True)
class StreamEntry:
    """One delivery read from a ready stream."""

    shard: int
    entry_id: str
    member: Member
    deliveries: int


@dataclass(frozen=True)
class PromoteResult:
    """What one promotion call did."""

    moved: int
    next_due_ms: int | None


@dataclass(frozen=True)
class RedeliverResult:
    """What one re-delivery call did."""

    redelivered: int
    exhausted: list[StreamEntry]
    next_cursor: str  # "0-0" when the whole pending list was scanned
    malformed: int = 0  # entries holding no readable delivery, dead-lettered by the stream itself

    @property
    def scan_finished(self) -> bool:
        """Tells whether no pending entry is left to look at."""
        return self.next_cursor == "0-0"


@dataclass
class ClaimResult:
    """What one in-place claim of idle entries did (claim_idle.lua)."""

    claimed: list[StreamEntry]  # now pending under the claiming consumer: deliver them
    exhausted: list[StreamEntry]  # pending under it too, out of deliveries: dead-letter them
    malformed: int = 0  # entries holding no readable delivery, dead-lettered by the stream itself


@dataclass(frozen=True)
class LimiterVerdict:
    """A limiter's answer: admitted, or refused until retry_at_ms."""

    admitted: bool
    retry_at_ms: int
    # A semaphore that admitted a token already holding a slot (a duplicate delivery of the same job and
    # generation) only extended its lease: the slot belongs to the first holder, who releases it.
    already_held: bool = False


@dataclass(frozen=True)
class Slot:
    """One concurrency slot: a holder (token) of a tenant's named semaphore."""

    tenant: str
    name: str
    token: str


@dataclass(frozen=True)
class CronClaim:
    """One schedule claimed by a promoter: the occurrence to handle, until claim_until_ms."""

    member: ScheduleMember
    fire_ms: int
    claim_until_ms: int


@dataclass(frozen=True)
class CronClaimResult:
    """What one cron claim call claimed, and the lowest score left (a fire time or a claim expiry)."""

    claims: list[CronClaim]
    next_ms: int | None


@dataclass(frozen=True)
class Claim:
    """A job claimed for one attempt, and what the claim replaced."""

    job: Job
    abandoned_attempt: int | None = None  # the attempt whose lease expired, when the claim took over from it
    abandoned_since_ms: int | None = None  # when that attempt was claimed


@dataclass(frozen=True)
class Finish:
    """How an attempt ends in the jobs table."""

    status: JobStatus  # succeeded, dead, or scheduled (a retry)
    status_code: int | None
    error: str | None
    next_due_ms: int | None = None  # for a retry


@dataclass(frozen=True)
class TickResult:
    """What one promotion pass over every shard did."""

    moved: int
    next_due_ms: int | None
    more_due: bool  # some shard filled its batch: call again at once


@dataclass(frozen=True)
class FanOutGrant:
    """Executor launches the fan-out ledger granted: one token each, and the executors running with them."""

    tokens: tuple[str, ...]
    running: int
