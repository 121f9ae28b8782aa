"""The small interfaces the use cases depend on; adapters (Redis, DynamoDB, httpx) implement them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from hookline.adapters.dynamo.job_store import Claim, Finish
from hookline.adapters.redis.index import LimiterVerdict, PromoteResult, RedeliverResult, StreamEntry
from hookline.domain.callbacks import CallbackRequest, CallbackResult
from hookline.domain.models import Execution, Job, JobStatus, Member


class CallbackClient(Protocol):
    """Delivers callbacks over HTTP."""

    def deliver(self, request: CallbackRequest) -> CallbackResult:
        """Makes one attempt and reports what happened; never raises for network or HTTP errors."""
        ...


class JobStore(Protocol):
    """The durable record of jobs and their attempts (DynamoDB)."""

    def create(self, job: Job, request_hash: str, now_ms: int) -> tuple[Job, bool]:
        """Stores a new job, or returns the earlier job of the same idempotent request."""
        ...

    def get(self, tenant: str, job_id: str) -> Job:
        """Returns the tenant's job or raises NotFound."""
        ...

    def claim(self, member: Member, now_ms: int) -> Claim:
        """Starts one attempt or raises StaleState."""
        ...

    def finish(self, job: Job, finish: Finish, executions: list[Execution], now_ms: int) -> None:
        """Ends an attempt or raises StaleState."""
        ...

    def mark_dead(self, member: Member, reason: str, now_ms: int) -> None:
        """Dead-letters a live job of the member's generation or raises StaleState."""
        ...

    def live_jobs(self, shard: int, start_key: dict[str, Any] | None, limit: int) -> tuple[list[Job], Any]:
        """Returns a page of live jobs."""
        ...


class JobAdminStore(Protocol):
    """The job reads and changes the API makes on a tenant's behalf (DynamoDB)."""

    def get(self, tenant: str, job_id: str) -> Job:
        """Returns the tenant's job or raises NotFound."""
        ...

    def list_jobs(
        self, tenant: str, status: JobStatus | None, after_job_id: str | None, limit: int
    ) -> tuple[list[Job], str | None]:
        """Returns a page of the tenant's jobs, newest first, and the id to go on after."""
        ...

    def cancel(self, tenant: str, job_id: str, now_ms: int) -> Job:
        """Cancels a scheduled job or raises NotFound or StaleState."""
        ...

    def replay(self, tenant: str, job_id: str, shard: int, now_ms: int) -> Job:
        """Reschedules a dead job or raises NotFound or StaleState."""
        ...


class LiveIndex(Protocol):
    """The live indexes and limiters (Redis)."""

    def index(self, member: Member, shard: int, due_ms: int, now_ms: int) -> bool:
        """Indexes a member for its due time."""
        ...

    def unindex(self, member: Member, shard: int) -> bool:
        """Removes a member from the due index."""
        ...

    def promote(self, shard: int, now_ms: int, batch: int = ...) -> PromoteResult:
        """Moves due members onto the ready stream."""
        ...

    def wait_for_wake(self, shards: Sequence[int], timeout_ms: int) -> bool:
        """Blocks until woken or timed out."""
        ...

    def poll_wake(self, shards: Sequence[int]) -> bool:
        """Takes a wake token without blocking."""
        ...

    def read_ready(self, shards: Sequence[int], count: int, block_ms: int) -> list[StreamEntry]:
        """Reads new deliveries."""
        ...

    def ack(self, entry: StreamEntry) -> bool:
        """Finishes a delivery."""
        ...

    def defer(self, entry: StreamEntry, due_ms: int) -> bool:
        """Puts a delivery back for later without spending an attempt."""
        ...

    def dead_letter(self, entry: StreamEntry, reason: str, now_ms: int) -> str | None:
        """Records a dead job and finishes its delivery."""
        ...

    def redeliver(
        self,
        shard: int,
        min_idle_ms: int,
        now_ms: int,
        max_deliveries: int,
        cursor: str = ...,
        batch: int = ...,
    ) -> RedeliverResult:
        """Re-adds deliveries whose lease expired."""
        ...

    def admit_rate(self, key: str, now_ms: int, limit: int, period_ms: int, token: str) -> LimiterVerdict:
        """Asks a rate limiter."""
        ...

    def acquire_slot(
        self, key: str, now_ms: int, limit: int, token: str, lease_expires_ms: int
    ) -> LimiterVerdict:
        """Asks a concurrency limiter."""
        ...

    def release_slots(self, slots: Sequence[tuple[str, str]]) -> None:
        """Frees concurrency slots."""
        ...

    def indexed_members(self, shard: int, members: Sequence[Member]) -> list[bool]:
        """Tells which members some index holds."""
        ...

    def ensure_group(self, shard: int) -> None:
        """Creates the consumer group if missing."""
        ...

    def prune_consumers(self, shard: int, idle_ms: int) -> int:
        """Deletes idle consumers that hold nothing."""
        ...

    def trim_dead(self, shard: int, max_len: int = ...) -> int:
        """Trims the dead stream."""
        ...

    def depth(self, shard: int) -> tuple[int, int]:
        """Returns (due, in-flight) counts."""
        ...


class SecretProvider(Protocol):
    """Gives the secrets to sign a tenant's callbacks with."""

    def secrets_for(self, tenant: str) -> list[str]:
        """Returns the active secrets."""
        ...


class MetricsSink(Protocol):
    """Records counters and timings (CloudWatch EMF in Lambda)."""

    def count(self, name: str, value: int = 1) -> None:
        """Adds value to the counter called name."""
        ...

    def timing_ms(self, name: str, value_ms: float) -> None:
        """Records one duration in milliseconds."""
        ...

    def gauge(self, name: str, value: float) -> None:
        """Records the current level of something (a queue depth)."""
        ...


class NullMetrics:
    """Drops every metric; for tests and tools."""

    def count(self, name: str, value: int = 1) -> None:
        """Ignores the counter."""

    def timing_ms(self, name: str, value_ms: float) -> None:
        """Ignores the timing."""

    def gauge(self, name: str, value: float) -> None:
        """Ignores the level."""
