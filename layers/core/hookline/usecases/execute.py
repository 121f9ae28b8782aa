"""Executing deliveries: limiters, claim, signed callback, outcome recorded, then acknowledged."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from enum import StrEnum

from hookline.domain import constants
from hookline.domain.backoff import retry_delay_ms
from hookline.domain.callbacks import CallbackRequest, CallbackResult
from hookline.domain.delivery import Claim, Finish, Slot, StreamEntry
from hookline.domain.errors import DependencyDown, IndexUnavailable, NotYet, StaleState
from hookline.domain.idle import executor_may_exit
from hookline.domain.leases import LeaseTiming
from hookline.domain.models import Execution, ExecutionOutcome, Job, JobStatus
from hookline.domain.signing import callback_headers
from hookline.domain.stats import Outcome
from hookline.ports import (
    CallbackClient,
    Clock,
    DueIndex,
    ExecutorPresence,
    JobStore,
    Limiters,
    MetricsSink,
    NullStats,
    ReadyStream,
    SecretProvider,
    StatsRecorder,
    UnindexedLog,
)
from hookline.usecases.acker import Acker
from hookline.usecases.backstop import PromotionBackstop
from hookline.usecases.heartbeat import Heartbeat, Hold
from hookline.usecases.indexing import index_or_note
from hookline.usecases.queue_admission import Parked, QueueAdmission
from hookline.usecases.readers import Capacity, ShardReaders
from hookline.usecases.recover import Recoverer
from hookline.usecases.stats_buffer import StatsBuffer
from hookline.usecases.workers import Workers

logger = logging.getLogger(__name__)

TENANT_LIMIT_KEY = "__tenant__"
# How much longer than one blocking read the end of a run waits for its readers to leave.
READER_JOIN_SLACK_S = 2.0
# In a backlog a reader waits (briefly) for this fraction of the concurrency to be free before reading.
READ_GATHER_DIVISOR = 2


class Disposition(StrEnum):
    """What processing one stream entry did."""

    SUCCEEDED = "succeeded"
    RETRIED = "retried"
    DEAD = "dead"
    DEFERRED = "deferred"
    STALE = "stale"
    LOST_HOLD = "lost_hold"
    LEFT_PENDING = "left_pending"  # nothing recorded; a recoverer re-delivers the entry once it is idle


class _Busy:
    """A thread-safe count of deliveries in flight."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def add(self, delta: int) -> None:
        """Adds delta to the count."""
        with self._lock:
            self.count += delta


class _IdleClock:
    """When an executor run last had work: an entry read, or a delivery in flight."""

    def __init__(self, now_ms: int) -> None:
        self.last_busy_ms = now_ms
        self._read = 0

    def saw(self, now_ms: int, read: int, in_flight: int) -> None:
        """Notes the run's read count and deliveries in flight at now_ms."""
        if read != self._read or in_flight:
            self._read = read
            self.last_busy_ms = now_ms


class Executor:
    """Turns ready-stream entries into callbacks; at-least-once, each outcome in DynamoDB before the ack."""

    def __init__(
        self,
        store: JobStore,
        stream: ReadyStream,
        due: DueIndex,
        limiters: Limiters,
        clock: Clock,
        callbacks: CallbackClient,
        secrets: SecretProvider,
        metrics: MetricsSink,
        shards: Sequence[int],
        concurrency: int = 32,
        tenant_max_concurrency: int | None = None,
        tenant_rate_limit_per_s: int | None = None,
        rng: random.Random | None = None,
        stats: StatsRecorder | None = None,
        timing: LeaseTiming | None = None,
        max_deliveries: int = 5,
        unindexed: UnindexedLog | None = None,
        presence: ExecutorPresence | None = None,
        idle_ms: int = 0,
        sleep: Callable[[float], None] = time.sleep,
        queues: QueueAdmission | None = None,
    ) -> None:
        self._store = store
        self._queues = queues
        self._sleep = sleep  # waits for a gone executor's lease to end (_claim)
        # Idle mode: a run marks itself alive (the fan-out starts an executor only when none is) and ends
        # once it had nothing to do for idle_ms and the streams hold nothing (0: it runs to its deadline).
        self._presence = presence
        self._idle_ms = idle_ms
        self._stream = stream
        self._due = due
        self._unindexed = unindexed
        self._limiters = limiters
        self._clock = clock
        self._callbacks = callbacks
        self._secrets = secrets
        self._metrics = metrics
        self._shards = list(shards)
        self._concurrency = concurrency
        self._tenant_max_concurrency = tenant_max_concurrency
        self._tenant_rate_limit_per_s = tenant_rate_limit_per_s
        self._rng = rng or random.Random()
        # Outcomes are counted in memory and written every recover_every_ms and at the end of a run
        # (usecases/stats_buffer.py): one Redis round trip per flush instead of one per job.
        self._stats = StatsBuffer(stats or NullStats())
        self._timing = timing or LeaseTiming()
        self._heartbeat = Heartbeat(stream, store, clock, self._timing, metrics)
        self._recoverer = Recoverer(
            store,
            stream,
            clock,
            shards,
            metrics,
            self._timing.redeliver_after_ms,
            max_deliveries,
            self._stats,
            readd_grace_ms=constants.READD_GRACE_MS,
        )
        # Each recovery pass also promotes what no promoter moved in time (a promoter that died).
        self._backstop = PromotionBackstop(due, clock, shards, metrics)
        self._next_recovery_ms = 0
        # While run() runs, finished entries are acknowledged in batches (usecases/acker.py); drain() and
        # direct process() calls acknowledge each at once.
        self._acker = Acker(stream, metrics)

    def run(self, deadline_ms: int, block_ms: int = constants.EXECUTOR_BLOCK_MS) -> int:
        """Processes entries until deadline_ms with bounded concurrency; returns how many were processed.

        Every shard's stream is read by a thread of its own (usecases/readers.py), each read bounded by the
        delivery slots free at that moment, so no read spans shards and the entries taken never exceed
        the concurrency. Entries taken before the deadline are finished after it: the caller leaves room
        for the longest callback timeout. The heartbeat keeps the attempts' entries and leases alive until
        they end (the delivery workers finish them before the heartbeat stops). Every
        recover_every_ms this thread also re-delivers what gone executors left pending, so that waits for
        no reaper, and promotes what no promoter moved in time (usecases/backstop.py). A reader's failure
        other than a Redis blip ends the run and is raised.
        """
        capacity = Capacity(self._concurrency)
        # Deliveries started and not ended (a reader blocked for entries holds free slots, so the capacity
        # cannot tell an idle run from a busy one).
        busy = _Busy()

        def process_and_settle(entry: StreamEntry) -> None:
            busy.add(1)
            try:
                self.process_safely(entry)
            finally:
                busy.add(-1)
                # The slot goes back as the attempt ends, its acknowledgement perhaps still queued: pending
                # under this consumer are at most the concurrency plus the acker's unsent (usecases/acker.py).
                capacity.give(1)

        workers = Workers(process_and_settle, self._concurrency)
        # Exits in reverse: the workers finish every delivery, then the acker sends what they queued, then
        # the heartbeat stops.
        with self._heartbeat.running(), self._acker.running(), workers.running():
            readers = ShardReaders(
                self._stream,
                self._clock,
                self._metrics,
                self._shards,
                capacity,
                workers.submit,
                gather=max(1, self._concurrency // READ_GATHER_DIVISOR),
                claim_idle=self._recoverer.claim_idle,
            )
            self._mark_alive()
            self._recover_when_due()
            readers.start(deadline_ms, block_ms)
            idle = _IdleClock(self._clock.now_ms())
            try:
                while not readers.join(max(0.001, (self._next_recovery_ms - self._clock.now_ms()) / 1000)):
                    self._recover_when_due()
                    self._flush_stats()
                    self._mark_alive()
                    if self._ends_idle(idle, readers.read, busy.count):
                        logger.info(
                            "no work for a while; the executor ends", extra={"idle_ms": self._idle_ms}
                        )
                        self._metrics.count("ExecutorIdleExits")
                        break
            finally:
                readers.stop()
                # Readers leave after their current read (blocked at most block_ms); waiting for them keeps
                # the workers running for what they still take.
                readers.join(block_ms / 1000 + READER_JOIN_SLACK_S)
        # The workers have finished every delivery: all of this run's outcomes are counted.
        self._flush_stats()
        self._clear_alive()
        readers.raise_failure()
        return readers.read

    def _ends_idle(self, idle: _IdleClock, read: int, in_flight: int) -> bool:
        """Tells whether the run ends idle: nothing read or in flight for idle_ms, and the streams empty.

        The streams are read only once the run has been idle that long: entries another executor left
        pending are still work (this run's recovery pass re-delivers them), so it stays for them.
        """
        now_ms = self._clock.now_ms()
        idle.saw(now_ms, read, in_flight)
        if not executor_may_exit(self._idle_ms, now_ms, idle.last_busy_ms, in_flight):
            return False
        try:
            waiting = sum(self._due.depth(shard)[1] for shard in self._shards)
        except IndexUnavailable:
            return False
        if waiting:
            idle.last_busy_ms = now_ms
            return False
        return True

    def _mark_alive(self) -> None:
        """Refreshes the executor heartbeat, for three recovery passes (the loop wakes once a pass)."""
        if self._presence is None:
            return
        try:
            self._presence.mark_executor_alive(3 * self._timing.recover_every_ms)
        except IndexUnavailable:
            return

    def _clear_alive(self) -> None:
        """Clears the heartbeat as the run ends: its readers have stopped, so it reads nothing more."""
        if self._presence is None:
            return
        try:
            self._presence.clear_executor_alive()
        except IndexUnavailable:
            return

    def drain(self) -> list[Disposition | None]:
        """Processes, one by one in this thread, every entry ready now on any shard; for tests and tools."""
        results: list[Disposition | None] = []
        with self._heartbeat.running():
            while True:
                entries = [
                    entry
                    for shard in self._shards
                    for entry in self._stream.read_ready([shard], constants.READ_BATCH, 0)
                ]
                if not entries:
                    self._flush_stats()
                    return results
                results += [self.process_safely(entry) for entry in entries]

    def _flush_stats(self) -> None:
        try:
            self._stats.flush()
        except Exception:
            # The recorder logs Redis errors itself; anything else must not end a run either.
            logger.warning("statistics flush failed; those counts are lost", exc_info=True)

    def _ack(self, entry: StreamEntry) -> None:
        """Finishes entry's delivery: queued for the acker while run() runs, else at once."""
        if self._acker.active:
            self._acker.ack(entry)
        else:
            self._stream.ack(entry)

    def _recover_when_due(self) -> None:
        now_ms = self._clock.now_ms()
        if now_ms >= self._next_recovery_ms:
            self._recover_safely()
            self._next_recovery_ms = now_ms + self._timing.recover_every_ms

    def _recover_safely(self) -> None:
        for step in (self._recoverer.recover, self._backstop.promote_overdue):
            try:
                step()
            except Exception:
                logger.warning("recovery pass failed; the next one tries again", exc_info=True)
                self._metrics.count("RecoveryErrors")

    def process_safely(self, entry: StreamEntry) -> Disposition | None:
        """Processes one entry; an unexpected error leaves it pending, for a recoverer to re-deliver."""
        try:
            return self.process(entry)
        except Exception:
            logger.exception(
                "delivery failed; it will be re-delivered", extra={"job_id": entry.member.job_id}
            )
            self._metrics.count("ExecutorErrors")
            return None

    def process(self, entry: StreamEntry) -> Disposition:
        """Passes the limiters, claims the job, delivers the callback and records the outcome."""
        hold = self._heartbeat.track(entry)
        slots: list[Slot] = []
        try:
            now_ms = self._clock.now_ms()
            queued = None if self._queues is None else self._queues.admit(entry, now_ms, slots)
            if isinstance(queued, Parked):
                # The queue is paused: the delivery waits, parked, until resumed; no attempt is spent.
                return Disposition.DEFERRED
            retry_at_ms = queued if queued is not None else self._admit(entry, now_ms, slots)
            if retry_at_ms is not None:
                self._stream.defer(entry, retry_at_ms)
                self._metrics.count("Deferred")
                return Disposition.DEFERRED
            try:
                claim, now_ms = self._claim(entry, now_ms)
            except NotYet as early:
                # Due later (an entry indexed too early), or held by an attempt whose lease runs (its entry
                # was re-delivered, or indexed again): try when DynamoDB says it may start, never before.
                self._stream.defer(entry, early.retry_at_ms)
                self._metrics.count("ClaimDeferred")
                return Disposition.DEFERRED
            except StaleState:
                # An older generation, a cancelled or finished job: this delivery is void.
                self._ack(entry)
                self._metrics.count("StaleDropped")
                return Disposition.STALE
            self._heartbeat.claimed(hold, claim.job)
            return self._attempt(entry, claim, hold, now_ms)
        except DependencyDown:
            # DynamoDB kept refusing for a transient reason and recorded nothing. The attempt still holds
            # the job, so acknowledging would lose it: leave the entry pending, no longer beaten, and a
            # recoverer re-delivers it once idle (the take-over records this attempt as lease_expired).
            logger.warning("outcome not recorded; leaving the delivery pending", exc_info=True)
            self._metrics.count("LeftPending")
            return Disposition.LEFT_PENDING
        finally:
            self._heartbeat.release(hold)
            self._limiters.release_slots(slots)

    def _claim(self, entry: StreamEntry, now_ms: int) -> tuple[Claim, int]:
        """Claims the job in DynamoDB (the fence); returns the claim and the time it was made.

        A re-delivered entry (its executor is gone) whose job's lease runs out within TAKEOVER_WAIT_MS is
        held here (its entry beaten, so no one else takes it) until the lease ends, and claimed again once:
        deferring it would put it behind any backlog of the ready stream. A refusal after that, or a longer
        lease (an attempt that is alive), raises NotYet as the first claim would.
        """
        try:
            return self._store.claim(entry.member, now_ms), now_ms
        except NotYet as early:
            wait_ms = early.retry_at_ms - now_ms
            if entry.deliveries == 0 or wait_ms > constants.TAKEOVER_WAIT_MS:
                raise
        self._metrics.count("TakeOverWaited")
        self._sleep(max(0, wait_ms) / 1000)
        now_ms = self._clock.now_ms()
        return self._store.claim(entry.member, now_ms), now_ms

    def _admit(self, entry: StreamEntry, now_ms: int, slots: list[Slot]) -> int | None:
        """Runs the limiters; returns None when admitted, else when to try again; fills slots.

        Semaphores go first: a rate admission spent on a delivery that then waits for a slot would be lost.
        Only slots newly taken go into `slots` (released when processing ends).
        A refusal by a later limiter still spends the earlier ones' admissions; that errs on the safe side.
        """
        member, flow = entry.member, entry.member.flow
        token = f"{member.job_id}:{member.generation}"
        # The job's own timeout is not known before the claim: hold slots for the longest one (released
        # as soon as the attempt ends, so this only bounds how long a crashed holder blocks a slot).
        lease_ms = now_ms + constants.LONGEST_ATTEMPT_MS
        semaphores = []
        if self._tenant_max_concurrency is not None:
            semaphores.append((TENANT_LIMIT_KEY, self._tenant_max_concurrency))
        if flow.concurrency_key is not None:
            semaphores.append((flow.concurrency_key, flow.concurrency_limit))
        for name, limit in semaphores:
            slot = Slot(member.tenant, name, token)
            verdict = self._limiters.acquire_slot(slot, now_ms, limit, lease_ms)
            if not verdict.admitted:
                # The limiter queued this delivery and says when its turn is expected (not when the first
                # lease ends: that would be minutes away), so it is refused O(1) times, not polled.
                self._metrics.count("ConcurrencyLimited")
                return verdict.retry_at_ms
            if not verdict.already_held:
                # Only a slot this delivery took is released after it: a duplicate entry of a job whose
                # attempt still runs re-acquires the same token, fails its claim, and must leave it held.
                slots.append(slot)
        windows = []
        if flow.rate_key is not None:
            windows.append((flow.rate_key, flow.rate_limit, flow.rate_period_ms))
        if self._tenant_rate_limit_per_s is not None:
            windows.append((TENANT_LIMIT_KEY, self._tenant_rate_limit_per_s, 1000))
        for name, limit, period_ms in windows:
            verdict = self._limiters.admit_rate(
                member.tenant, name, now_ms, limit, period_ms, entry.entry_id, waiter=token
            )
            if not verdict.admitted:
                self._metrics.count("RateLimited")
                return verdict.retry_at_ms
        return None

    def _attempt(self, entry: StreamEntry, claim: Claim, hold: Hold, now_ms: int) -> Disposition:
        job = claim.job
        executions = []
        if claim.abandoned_attempt is not None:
            executions.append(
                Execution(
                    job.tenant,
                    job.job_id,
                    claim.abandoned_attempt,
                    job.generation,
                    started_ms=claim.abandoned_since_ms or now_ms,
                    finished_ms=now_ms,
                    outcome=ExecutionOutcome.LEASE_EXPIRED,
                    error_class="lease_expired",
                    error_message="the executor holding this attempt stopped before recording its outcome",
                )
            )
        if job.run_attempt > job.max_attempts:
            # Earlier attempts were lost to crashes and used up the budget: no delivery is left to make.
            return self._finish(entry, job, Finish(JobStatus.DEAD, None, "attempts_exhausted"), executions)
        body = job.body.encode()
        headers = self._signed_headers(job, now_ms, body)  # may look secrets up: before the timeout is taken
        timeout_ms = self._callback_timeout_ms(job, hold)
        if timeout_ms is None:
            return self._abandon(entry, hold)
        self._metrics.count("Dispatched")
        lag_ms = job.fire_lag_ms(now_ms)
        self._metrics.timing_ms("ScheduleLagMs", lag_ms)
        request = CallbackRequest(job.url, job.method, headers, body, timeout_ms / 1000, tenant=job.tenant)
        result = self._callbacks.deliver(request)
        self._metrics.timing_ms("CallbackLatencyMs", result.latency_ms)
        executions.append(_execution(job, now_ms, self._clock.now_ms(), result))
        return self._finish(entry, job, self._decide(job, result), executions, lag_ms)

    def _callback_timeout_ms(self, job: Job, hold: Hold) -> int | None:
        """Returns the callback's timeout, computed right before the call; None when it must not start.

        The callback must not start unless the attempt still holds a lease with more than the margin left:
        the claim, the secret lookups or a stalled thread may have used it up (a DynamoDB brownout), and
        another executor may then take the job over. Without a heartbeat renewing the lease the callback
        must also end within it: min(job timeout, lease left - margin). With the heartbeat running, the
        lease is renewed while the callback runs (renewals stop only when DynamoDB refuses them), so a
        callback may take its whole timeout, longer than one lease.
        """
        left_ms = hold.lease_expires_at_ms - self._clock.now_ms() - self._timing.margin_ms
        if hold.lost or left_ms <= 0:
            return None
        if self._heartbeat.renewing:
            return job.timeout_ms
        return min(job.timeout_ms, left_ms)

    def _abandon(self, entry: StreamEntry, hold: Hold) -> Disposition:
        """Gives up an attempt before its callback, because its lease is (nearly) gone."""
        if hold.lost:
            # Another attempt took the job over: it owns the outcome.
            self._ack(entry)
            self._metrics.count("LostHold")
            return Disposition.LOST_HOLD
        # The lease is nearly out and could not be renewed: no callback is made, nothing is recorded, and
        # the entry is left for a recoverer (the take-over records this attempt as lease_expired).
        logger.warning("lease too short to start the callback", extra={"job_id": entry.member.job_id})
        self._metrics.count("LeaseTooShort")
        return Disposition.LEFT_PENDING

    def _decide(self, job: Job, result: CallbackResult) -> Finish:
        error = result.error_class or (None if result.succeeded else f"status {result.status_code}")
        if result.succeeded:
            return Finish(JobStatus.SUCCEEDED, result.status_code, None)
        if result.retryable and job.run_attempt < job.max_attempts:
            delay_ms = retry_delay_ms(
                job.run_attempt, job.min_backoff_ms, job.max_backoff_ms, result.retry_after_s, self._rng
            )
            return Finish(JobStatus.SCHEDULED, result.status_code, error, self._clock.now_ms() + delay_ms)
        return Finish(JobStatus.DEAD, result.status_code, error)

    def _finish(
        self,
        entry: StreamEntry,
        job: Job,
        finish: Finish,
        executions: list[Execution],
        lag_ms: int | None = None,
    ) -> Disposition:
        now_ms = self._clock.now_ms()
        try:
            self._store.finish(job, finish, executions, now_ms)
        except StaleState:
            # Our lease expired and another attempt took the job over: it owns the outcome now.
            self._ack(entry)
            self._metrics.count("LostHold")
            return Disposition.LOST_HOLD
        # From here on DynamoDB holds the outcome: a Redis failure below must neither leave the retry to the
        # reaper's due scan nor be reported as a delivery whose outcome was not recorded.
        if finish.status is JobStatus.SCHEDULED:
            assert finish.next_due_ms is not None
            # Index the retry only after the fenced write succeeded: the retry's member is the same string
            # for any attempt of this generation, so an executor that lost its lease would otherwise write
            # its own due time over the new owner's, and the job would fire early. If Redis fails, the retry
            # is noted for the reaper, which indexes it about a second after Redis answers (index_or_note);
            # a crash between the write and this line leaves a scheduled job no Redis index holds: the
            # reaper's reconcile finds it in DynamoDB and indexes it (late, never lost).
            retry = job.with_changes(generation=job.generation + 1, due_ms=finish.next_due_ms)
            index_or_note(self._due, self._unindexed, self._metrics, retry, self._clock.now_ms())
        if finish.status is JobStatus.DEAD:
            self._dead_letter(entry, job, finish.error or "dead", now_ms)
            self._metrics.count("DeadLettered")
            self._metrics.count("Failed")
            self._stats.record(job.tenant, Outcome.DEAD, now_ms, job.job_id, lag_ms)
            return Disposition.DEAD
        self._ack(entry)
        if finish.status is JobStatus.SCHEDULED:
            self._metrics.count("Retried")
            self._metrics.count("Failed")
            self._stats.record(job.tenant, Outcome.RETRIED, now_ms, lag_ms=lag_ms)
            return Disposition.RETRIED
        self._metrics.count("Succeeded")
        self._stats.record(job.tenant, Outcome.SUCCEEDED, now_ms, lag_ms=lag_ms)
        return Disposition.SUCCEEDED

    def _dead_letter(self, entry: StreamEntry, job: Job, reason: str, now_ms: int) -> None:
        """Writes the dead job's feed entry, which also finishes its delivery; if Redis fails, acknowledges.

        DynamoDB already holds the job dead (the record; the dead stream is a feed). Left pending, the entry
        would only be re-delivered and dropped as stale at its claim, its feed entry missing all the same.
        """
        try:
            self._stream.dead_letter(entry, reason, now_ms)
        except Exception:
            logger.warning(
                "job is dead in DynamoDB; writing its dead-stream entry failed, so the dead stream misses it",
                extra={"job_id": job.job_id},
                exc_info=True,
            )
            self._metrics.count("DeadFeedFailed")
            self._ack(entry)

    def _signed_headers(self, job: Job, now_ms: int, body: bytes) -> dict[str, str]:
        """Returns the job's headers with the signature headers of this attempt merged over them."""
        signed = callback_headers(
            self._secrets.secrets_for(job.tenant),
            job.job_id,
            now_ms // 1000,
            body,
            job.run_attempt,
            schedule_id=job.schedule_id,
            fire_time_ms=job.fire_time_ms,
        )
        return {**job.headers, **signed}


def _execution(job: Job, started_ms: int, finished_ms: int, result: CallbackResult) -> Execution:
    if result.succeeded:
        outcome = ExecutionOutcome.SUCCEEDED
    else:
        outcome = ExecutionOutcome.RETRYABLE if result.retryable else ExecutionOutcome.PERMANENT
    return Execution(
        tenant=job.tenant,
        job_id=job.job_id,
        attempt=job.attempt,
        generation=job.generation,
        started_ms=started_ms,
        finished_ms=finished_ms,
        outcome=outcome,
        latency_ms=result.latency_ms,
        status_code=result.status_code,
        error_class=result.error_class,
        error_message=result.error_message,
        response_preview=result.response_preview,
    )
