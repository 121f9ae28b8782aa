"""Every interface the use cases depend on, in one place; adapters (Redis, DynamoDB, HTTP) implement them.

The values that cross these interfaces live in hookline.domain (delivery, keys, models, callbacks), so a use
case never imports an adapter and a fake (tests/fakes) can stand in for any port. `make lint` checks it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from hookline.domain.callbacks import CallbackRequest, CallbackResult
from hookline.domain.cron.schedule import Schedule, ScheduleMember
from hookline.domain.delivery import (
    Claim,
    ClaimResult,
    CronClaim,
    CronClaimResult,
    FanOutGrant,
    Finish,
    LimiterVerdict,
    PromoteResult,
    RedeliverResult,
    Slot,
    StreamEntry,
    TickResult,
)
from hookline.domain.keys import KeyRecord, SigningSecrets
from hookline.domain.models import Execution, Job, JobStatus, Member
from hookline.domain.queues import Queue, QueueFigures, QueueVerdict
from hookline.domain.reconcile import LiveJob, RebuildMarks, UnindexedJobs
from hookline.domain.stats import Outcome, Tally

# Checks that a callback URL may be called (raises UnsafeUrl or UnresolvedHost); returns nothing useful.
UrlChecker = Callable[[str], object]


class Clock(Protocol):
    """Tells the current time (hookline.domain.clock has the system and frozen clocks)."""

    def now_ms(self) -> int:
        """Returns milliseconds since the Unix epoch."""
        ...


class InvocationContext(Protocol):
    """The part of a Lambda context the loops need."""

    def get_remaining_time_in_millis(self) -> int:
        """Returns how long the invocation may still run."""
        ...


class CallbackClient(Protocol):
    """Delivers callbacks over HTTP."""

    def deliver(self, request: CallbackRequest) -> CallbackResult:
        """Makes one attempt and reports what happened; never raises for anything the receiver does."""
        ...


class JobStore(Protocol):
    """The durable record of jobs and their attempts (DynamoDB)."""

    def create(self, job: Job, request_hash: str, now_ms: int) -> tuple[Job, bool]:
        """Stores a new job, or returns the earlier job of the same idempotent request.

        request_hash identifies an idempotent request's content; it is "" for a job without idempotency_key.
        """
        ...

    def get(self, tenant: str, job_id: str) -> Job:
        """Returns the tenant's job or raises NotFound."""
        ...

    def claim(self, member: Member, now_ms: int) -> Claim:
        """Starts one attempt under a lease; raises NotYet (try later) or StaleState (drop the delivery)."""
        ...

    def renew_lease(self, job: Job, lease_expires_at_ms: int, timeout_ms: int | None = None) -> None:
        """Extends the lease of the attempt holding job, or raises StaleState when it lost the job.

        timeout_ms: the call gives up (raises) once this long has passed, retries included; None: the store's
        own bounds only.
        """
        ...

    def finish(self, job: Job, finish: Finish, executions: list[Execution], now_ms: int) -> None:
        """Ends an attempt; raises StaleState (lost the job) or DependencyDown (nothing written)."""
        ...

    def mark_dead(self, member: Member, reason: str, now_ms: int) -> None:
        """Dead-letters a live job of the member's generation (done already when it is dead in that generation
        for that reason) or raises StaleState."""
        ...

    def live_jobs(
        self, shard: int, cursor: str | None, limit: int, due_before_ms: int | None = ...
    ) -> tuple[list[LiveJob], str | None]:
        """Returns a page of live jobs (due or with a lease ending by due_before_ms) and the cursor on."""
        ...


class JobAdminStore(Protocol):
    """The job reads and changes the API makes on a tenant's behalf (DynamoDB)."""

    def get(self, tenant: str, job_id: str) -> Job:
        """Returns the tenant's job or raises NotFound."""
        ...

    def executions(self, tenant: str, job_id: str) -> list[Execution]:
        """Returns every recorded attempt of a job, oldest first."""
        ...

    def list_jobs(
        self, tenant: str, status: JobStatus | None, after_job_id: str | None, limit: int
    ) -> tuple[list[Job], str | None]:
        """Returns a page of the tenant's jobs, newest first, and the id to go on after."""
        ...

    def cancel(self, tenant: str, job_id: str, now_ms: int) -> Job:
        """Cancels a scheduled job and returns it cancelled, or raises NotFound or StaleState."""
        ...

    def replay(self, tenant: str, job_id: str, shard: int, now_ms: int) -> Job:
        """Reschedules a dead job or raises NotFound or StaleState."""
        ...

    def run_now(self, tenant: str, job_id: str, generation: int, shard: int, now_ms: int) -> Job:
        """Makes a job scheduled in generation due now in the next one (attempts unchanged), or raises
        NotFound or StaleState."""
        ...


class ScheduleStore(Protocol):
    """Schedules and their instances, as the promoter and the reaper use them (DynamoDB)."""

    def get(self, tenant: str, schedule_id: str) -> Schedule:
        """Returns the schedule or raises NotFound."""
        ...

    def create_instance(self, job: Job) -> bool:
        """Stores an occurrence's job unless it exists; True when created."""
        ...

    def active(self, shard: int, start_key: dict[str, Any] | None, limit: int) -> tuple[list[Schedule], Any]:
        """Returns a page of a shard's active schedules."""
        ...

    def last_fire_ms(self, tenant: str, schedule_id: str) -> int | None:
        """Returns the fire time of the schedule's newest instance."""
        ...

    def retire(self, schedule: Schedule) -> None:
        """Takes a schedule with no occurrence left out of the active listing."""
        ...


class ScheduleAdminStore(Protocol):
    """The schedule reads and writes the API makes (DynamoDB)."""

    def create(self, schedule: Schedule, next_fire_ms: int | None) -> None:
        """Stores a new schedule."""
        ...

    def get(self, tenant: str, schedule_id: str) -> Schedule:
        """Returns the schedule or raises NotFound."""
        ...

    def replace(self, schedule: Schedule, expected_version: int, next_fire_ms: int | None) -> None:
        """Writes a changed schedule if still at expected_version."""
        ...

    def delete(self, tenant: str, schedule_id: str) -> Schedule:
        """Deletes a schedule and returns it as it was."""
        ...

    def list_page(self, tenant: str, after_id: str | None, limit: int) -> tuple[list[Schedule], str | None]:
        """Returns a page of the tenant's schedules."""
        ...

    def instances(
        self, tenant: str, schedule_id: str, after_job_id: str | None, limit: int
    ) -> tuple[list[Job], str | None]:
        """Returns a page of the jobs a schedule created."""
        ...


class KeyReader(Protocol):
    """API key records and tenant signing secrets (DynamoDB)."""

    def get_key(self, key_id: str) -> KeyRecord | None:
        """Returns the key's record, None when unknown."""
        ...

    def get_signing_secrets(self, tenant: str) -> SigningSecrets | None:
        """Returns the tenant's signing secrets, None before the first."""
        ...

    def put_signing_secrets(
        self, tenant: str, secrets: SigningSecrets, now_ms: int, *, only_if_missing: bool = ...
    ) -> bool:
        """Stores the tenant's signing secrets; with only_if_missing, False when some already exist."""
        ...

    def replace_signing_secrets(
        self, tenant: str, secrets: SigningSecrets, now_ms: int, seen_current: str | None
    ) -> bool:
        """Stores the tenant's signing secrets only while its current secret is still seen_current (None:
        while it has none); False, with nothing written, when another write changed it meanwhile."""
        ...


class ShardCountRecord(Protocol):
    """The most shards any engine of the deployment has run with (DynamoDB: it must outlive Redis)."""

    def record_shards(self, shards: int, now_ms: int) -> int:
        """Records shards unless as many or more are recorded; returns the count recorded now (the larger)."""
        ...


class JobBucketRecord(Protocol):
    """The job bucket count the jobs table's items are written with (DynamoDB, the API keys table)."""

    def record_buckets(self, buckets: int, now_ms: int) -> int:
        """Records buckets unless a count is recorded; returns the count recorded now."""
        ...


class DueIndex(Protocol):
    """The due-time index: members waiting for their time, promoted onto the ready stream when due (Redis)."""

    def index(self, member: Member, shard: int, due_ms: int, now_ms: int, new_member: bool = ...) -> bool:
        """Indexes a member for its due time; True when it went straight onto the ready stream.

        new_member: never indexed before (just created), so it cannot wait in the due index already.
        """
        ...

    def index_many(
        self, entries: Sequence[tuple[Member, int, int]], now_ms: int, new_member: bool = ...
    ) -> None:
        """Indexes (member, shard, due_ms) entries as index() does each, together (one round trip where the
        adapter can). Raises if any failed; the others may have been applied (re-indexing is harmless)."""
        ...

    def unindex(self, member: Member, shard: int) -> bool:
        """Removes a member from the due index."""
        ...

    def promote(self, shard: int, now_ms: int, batch: int = ..., alive_ms: int = ...) -> PromoteResult:
        """Moves due members onto the ready stream; alive_ms > 0 also sets the shard's promoter heartbeat."""
        ...

    def wait_for_wake(self, shards: Sequence[int], timeout_ms: int) -> bool:
        """Blocks until woken or timed out."""
        ...

    def poll_wake(self, shards: Sequence[int]) -> bool:
        """Takes a wake token without blocking."""
        ...

    def indexed_members(
        self, shard: int, members: Sequence[Member], stale_before_ms: int | None = ...
    ) -> list[bool]:
        """Tells which members the due or in-flight index holds (in flight since stale_before_ms at least)."""
        ...

    def depth(self, shard: int) -> tuple[int, int]:
        """Returns (due, in-flight) counts."""
        ...


class ReadyStream(Protocol):
    """The ready stream and its consumer group: deliveries, their leases and their ends (Redis)."""

    def ensure_group(self, shard: int) -> None:
        """Creates the consumer group if missing."""
        ...

    def read_ready(self, shards: Sequence[int], count: int, block_ms: int) -> list[StreamEntry]:
        """Reads new deliveries."""
        ...

    def ack(self, entry: StreamEntry) -> bool:
        """Finishes a delivery."""
        ...

    def ack_many(self, entries: Sequence[StreamEntry]) -> int:
        """Finishes several deliveries, each as ack() would; returns how many were finished by this call."""
        ...

    def heartbeat(self, entries: Sequence[StreamEntry]) -> set[str]:
        """Marks this consumer's pending entries as alive (not idle); returns the ids it still holds."""
        ...

    def undelivered(self, shard: int) -> int:
        """Returns how many entries no consumer has read yet (the backlog more executors would help)."""
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

    def claim_idle(
        self, shard: int, min_idle_ms: int, now_ms: int, max_deliveries: int, count: int
    ) -> ClaimResult:
        """Takes over, in place and ahead of new entries, up to count deliveries whose lease expired."""
        ...

    def prune_consumers(self, shard: int, idle_ms: int) -> int:
        """Deletes idle consumers that hold nothing."""
        ...

    def trim_dead(self, shard: int, max_len: int = ...) -> int:
        """Trims the dead stream."""
        ...


class RebuildMarkStore(Protocol):
    """Each shard's reconciliation marks: its Redis epoch, the last complete rebuild, the scan cursor."""

    def marks(self, shard: int) -> RebuildMarks:
        """Returns the shard's marks."""
        ...

    def start_epoch(self, shard: int) -> str:
        """Returns the shard's epoch, writing a new one if it has none."""
        ...

    def save_cursor(self, shard: int, mode: str, cursor: str | None) -> None:
        """Remembers where the shard's `mode` scan stopped (None: it finished)."""
        ...

    def finish_rebuild(self, shard: int, epoch: str) -> None:
        """Records a complete rebuild of the shard in epoch."""
        ...


class UnindexedLog(Protocol):
    """Jobs written to DynamoDB whose Redis index write failed (DynamoDB: it must outlive the Redis outage).

    Without it such a job waits for the reaper's next due scan (up to a minute, or until it falls due); with
    it the reaper, which checks the log every second, indexes it about a second after Redis answers again.
    """

    def note_unindexed(self, member: Member, shard: int, due_ms: int, now_ms: int) -> None:
        """Notes a job whose index write failed (once the note is full: that the shard overflowed)."""
        ...

    def unindexed(self, shards: Sequence[int]) -> list[UnindexedJobs]:
        """Returns the notes of the given shards that hold anything."""
        ...

    def clear_unindexed(self, shard: int, version: int) -> bool:
        """Deletes the shard's note if it is still at version; False when a newer note arrived meanwhile."""
        ...


class Limiters(Protocol):
    """Per-tenant rate windows and concurrency semaphores, and the API's per-key rate (Redis)."""

    def admit_rate(
        self, tenant: str, name: str, now_ms: int, limit: int, period_ms: int, token: str, waiter: str = ...
    ) -> LimiterVerdict:
        """Asks the tenant's named rate window to admit one more event; a refused waiter is queued."""
        ...

    def acquire_slot(self, slot: Slot, now_ms: int, limit: int, lease_expires_ms: int) -> LimiterVerdict:
        """Asks the slot's semaphore for a place held until lease_expires_ms or release; a refusal queues."""
        ...

    def release_slots(self, slots: Sequence[Slot]) -> None:
        """Frees concurrency slots."""
        ...

    def admit_api_call(
        self, key_id: str, now_ms: int, limit: int, period_ms: int, token: str
    ) -> LimiterVerdict:
        """Asks an API key's rate window to admit one more request."""
        ...


class QueueStore(Protocol):
    """Named queue records, the truth about each queue (DynamoDB)."""

    def put(self, queue: Queue, expected_version: int | None) -> None:
        """Writes a queue: any (create or replace) when expected_version is None, else only over that version
        (raises NotFound, or Conflict on another version)."""
        ...

    def get(self, tenant: str, name: str) -> Queue:
        """Returns the queue or raises QueueNotFound."""
        ...

    def list_all(self, tenant: str) -> list[Queue]:
        """Returns the tenant's queues by name."""
        ...

    def delete(self, tenant: str, name: str) -> Queue:
        """Deletes a queue and returns it as it was; raises QueueNotFound."""
        ...


class QueueGate(Protocol):
    """The queues' live settings, admissions and parked deliveries (Redis)."""

    def admit(
        self, tenant: str, queue: str, entry: StreamEntry, now_ms: int, lease_expires_ms: int
    ) -> QueueVerdict:
        """Asks the queue to admit a delivery: settings, pause, concurrency and rate in one call."""
        ...

    def write_settings(self, queue: Queue) -> None:
        """Writes the queue's live settings (with an expiry: the record is re-read when they are gone)."""
        ...

    def forget_settings(self, tenant: str, name: str) -> None:
        """Removes a deleted queue's live settings."""
        ...

    def park(self, entry: StreamEntry, queue: str, now_ms: int) -> bool:
        """Sets a delivery of a paused queue aside, no attempt spent; False when already finished."""
        ...

    def unpark(self, shard: int, tenant: str, queue: str, now_ms: int, batch: int) -> tuple[int, int]:
        """Releases parked deliveries onto the ready stream; returns (moved, left)."""
        ...

    def parked_queues(self, shard: int) -> list[tuple[str, str]]:
        """Returns the (tenant, queue) pairs that may have parked deliveries in the shard."""
        ...

    def figures(self, queue: Queue, shards: int, now_ms: int) -> QueueFigures:
        """Returns the queue's live figures over every shard."""
        ...


class CronIndex(Protocol):
    """The cron ZSET and its claims (Redis)."""

    def claim_cron(self, shard: int, now_ms: int, claim_until_ms: int, batch: int) -> CronClaimResult:
        """Claims due schedules."""
        ...

    def advance_cron(self, shard: int, claim: CronClaim, next_fire_ms: int | None) -> bool:
        """Ends a claim by moving the schedule to its next fire time (None removes it)."""
        ...

    def set_cron(
        self,
        shard: int,
        old: ScheduleMember | None,
        new: ScheduleMember | None,
        next_fire_ms: int | None,
        only_if_absent: bool = ...,
    ) -> bool:
        """Replaces a schedule version in the ZSET."""
        ...

    def cron_scores(self, shard: int, members: Sequence[ScheduleMember]) -> list[int | None]:
        """Returns each member's score, None when absent."""
        ...


class CronPass(Protocol):
    """Fires due cron schedules; runs inside every promoter tick (usecases/cron.py CronRunner)."""

    def tick_shard(self, shard: int, now_ms: int) -> TickResult:
        """Handles one batch of a shard's due schedules: moved = instances made, next_due_ms = next fire."""
        ...


class ExecutorLedger(Protocol):
    """The executors the fan-out started and that still run, shared by every promoter (Redis)."""

    def reserve_executors(
        self, now_ms: int, wanted: int, most: int, ceiling: int, run_ms: int, start_ms: int
    ) -> FanOutGrant:
        """Grants up to wanted launches less those still starting, at most `most`, within the ceiling."""
        ...

    def release_executors(self, tokens: Sequence[str]) -> None:
        """Takes back granted launches that did not start."""
        ...


class PromoterPresence(Protocol):
    """What a promoter reads and writes to end idle (Redis): the streams' contents, its heartbeats."""

    def in_flight(self, shards: Sequence[int]) -> int:
        """Returns the members in the shards' ready streams, read or not."""
        ...

    def stand_down(self, shards: Sequence[int]) -> None:
        """Deletes the shards' promoter heartbeats: index calls wake a promoter from then on."""
        ...

    def earliest_due(self, shards: Sequence[int]) -> int | None:
        """Returns the earliest due member's or schedule's time over the shards (None: nothing)."""
        ...


class ExecutorPresence(Protocol):
    """Whether some executor is reading (Redis), so the fan-out starts one only when none is."""

    def mark_executor_alive(self, ttl_ms: int) -> None:
        """Notes that an executor reads, for ttl_ms."""
        ...

    def clear_executor_alive(self) -> None:
        """Notes that an executor ended (another running marks itself again within its pass interval)."""
        ...

    def executor_alive(self) -> bool:
        """Tells whether some executor marked itself alive and has not expired or ended."""
        ...


class PromoterWaker(Protocol):
    """Starts one promoter invocation at once (an asynchronous Lambda invoke)."""

    def wake(self) -> bool:
        """Starts a promoter; False when the start was refused (never raises)."""
        ...


class ExecutorLauncher(Protocol):
    """Starts executor invocations that run beside the scheduled ones."""

    def launch(self, count: int) -> int:
        """Starts up to count executors; returns how many it started."""
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


class StatsRecorder(Protocol):
    """Where the use cases report outcomes (Redis in production; nothing in unit tests)."""

    def record(
        self, tenant: str, outcome: Outcome, now_ms: int, job_id: str | None = None, lag_ms: int | None = None
    ) -> None:
        """Counts one outcome in the current minute, with the attempt's fire lag when it made one.

        With job_id, DEAD adds the job to the dead-letter count and REPLAYED takes it out.
        """
        ...

    def record_tallies(self, tallies: Sequence[Tally]) -> None:
        """Adds outcomes counted together (usecases/stats_buffer.py), all in one round trip."""
        ...


class NullStats:
    """Records nothing."""

    def record(
        self, tenant: str, outcome: Outcome, now_ms: int, job_id: str | None = None, lag_ms: int | None = None
    ) -> None:
        """Ignores the outcome."""

    def record_tallies(self, tallies: Sequence[Tally]) -> None:
        """Ignores the tallies."""
