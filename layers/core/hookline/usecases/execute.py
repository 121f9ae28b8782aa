"""Executing deliveries: limiters, claim, signed callback, outcome recorded, then acknowledged."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from enum import StrEnum

from hookline.domain import constants
from hookline.domain.backoff import retry_delay_ms
from hookline.domain.callbacks import CallbackRequest, CallbackResult
from hookline.domain.delivery import Claim, Finish, Slot, StreamEntry
from hookline.domain.errors import IndexUnavailable, StaleState
from hookline.domain.models import Execution, ExecutionOutcome, Job, JobStatus
from hookline.domain.signing import callback_headers
from hookline.ports import (
    CallbackClient,
    Clock,
    DueIndex,
    JobStore,
    Limiters,
    MetricsSink,
    ReadyStream,
    SecretProvider,
)
from hookline.usecases.outage import Outage

logger = logging.getLogger(__name__)

TENANT_LIMIT_KEY = "__tenant__"


class Disposition(StrEnum):
    """What processing one stream entry did."""

    SUCCEEDED = "succeeded"
    RETRIED = "retried"
    DEAD = "dead"
    DEFERRED = "deferred"
    STALE = "stale"
    LOST_HOLD = "lost_hold"


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
    ) -> None:
        self._store = store
        self._stream = stream
        self._due = due
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

    def run(self, deadline_ms: int, block_ms: int = constants.EXECUTOR_BLOCK_MS) -> int:
        """Processes entries until deadline_ms with bounded concurrency; returns how many were processed.

        Entries taken before the deadline are finished after it: the caller leaves room for the longest
        callback timeout, and the reaper re-delivers whatever a killed invocation left pending.
        """
        processed = 0
        running: set[Future[Disposition | None]] = set()
        outage = Outage(self._clock, self._metrics, "execute")
        with ThreadPoolExecutor(max_workers=self._concurrency, thread_name_prefix="deliver") as pool:
            while (now_ms := self._clock.now_ms()) < deadline_ms:
                free = self._concurrency - len(running)
                if free <= 0:
                    _, pending = wait(running, timeout=block_ms / 1000, return_when=FIRST_COMPLETED)
                    running = set(pending)
                    continue
                wait_ms = max(1, min(block_ms, deadline_ms - now_ms))
                try:
                    entries = self._stream.read_ready(self._shards, min(free, constants.READ_BATCH), wait_ms)
                except IndexUnavailable as error:
                    # A Redis blip: back off and read again until the deadline (entries already taken
                    # carry on in the pool; their own Redis steps fail into process_safely).
                    time.sleep(outage.failed(error, deadline_ms))
                    continue
                outage.succeeded()
                for entry in entries:
                    running.add(pool.submit(self.process_safely, entry))
                    processed += 1
                running = {future for future in running if not future.done()}
        return processed

    def drain(self, block_ms: int = 0) -> list[Disposition | None]:
        """Processes, one by one in this thread, every entry ready now (block_ms 0: no waiting); for tests."""
        results: list[Disposition | None] = []
        while entries := self._stream.read_ready(self._shards, constants.READ_BATCH, block_ms):
            results += [self.process_safely(entry) for entry in entries]
            block_ms = 0
        return results

    def process_safely(self, entry: StreamEntry) -> Disposition | None:
        """Processes one entry; an unexpected error leaves it pending, for the reaper to re-deliver."""
        try:
            return self.process(entry)
        except Exception:
            logger.exception(
                "delivery failed; the reaper will re-deliver it", extra={"job_id": entry.member.job_id}
            )
            self._metrics.count("ExecutorErrors")
            return None

    def process(self, entry: StreamEntry) -> Disposition:
        """Passes the limiters, claims the job, delivers the callback and records the outcome."""
        now_ms = self._clock.now_ms()
        slots: list[Slot] = []
        try:
            retry_at_ms = self._admit(entry, now_ms, slots)
            if retry_at_ms is not None:
                self._stream.defer(entry, retry_at_ms)
                self._metrics.count("Deferred")
                return Disposition.DEFERRED
            try:
                claim = self._store.claim(entry.member, now_ms)
            except StaleState:
                # An older generation, a cancelled or finished job, or an attempt still holding its lease.
                self._stream.ack(entry)
                self._metrics.count("StaleDropped")
                return Disposition.STALE
            return self._attempt(entry, claim, now_ms)
        finally:
            self._limiters.release_slots(slots)

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
        lease_ms = now_ms + int((constants.MAX_TIMEOUT_S + constants.LEASE_MARGIN_S) * 1000)
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

    def _attempt(self, entry: StreamEntry, claim: Claim, now_ms: int) -> Disposition:
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
        self._metrics.count("Dispatched")
        self._metrics.timing_ms("ScheduleLagMs", now_ms - job.due_ms)
        result = self._callbacks.deliver(self._request(job, now_ms))
        self._metrics.timing_ms("CallbackLatencyMs", result.latency_ms)
        executions.append(_execution(job, now_ms, self._clock.now_ms(), result))
        return self._finish(entry, job, self._decide(job, result), executions)

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
        self, entry: StreamEntry, job: Job, finish: Finish, executions: list[Execution]
    ) -> Disposition:
        now_ms = self._clock.now_ms()
        if finish.status is JobStatus.SCHEDULED:
            assert finish.next_due_ms is not None
            # Index the next generation before DynamoDB says so: a crash in between leaves an entry that
            # is dropped as stale, whereas the other order could leave a scheduled job nobody indexed.
            retry = job.with_changes(generation=job.generation + 1)
            self._due.index(retry.member(), job.shard, finish.next_due_ms, now_ms)
        try:
            self._store.finish(job, finish, executions, now_ms)
        except StaleState:
            # Our lease expired and another attempt took the job over: it owns the outcome now.
            self._stream.ack(entry)
            self._metrics.count("LostHold")
            return Disposition.LOST_HOLD
        if finish.status is JobStatus.DEAD:
            self._stream.dead_letter(entry, finish.error or "dead", now_ms)
            self._metrics.count("DeadLettered")
            self._metrics.count("Failed")
            return Disposition.DEAD
        self._stream.ack(entry)
        if finish.status is JobStatus.SCHEDULED:
            self._metrics.count("Retried")
            self._metrics.count("Failed")
            return Disposition.RETRIED
        self._metrics.count("Succeeded")
        return Disposition.SUCCEEDED

    def _request(self, job: Job, now_ms: int) -> CallbackRequest:
        body = job.body.encode()
        signed = callback_headers(
            self._secrets.secrets_for(job.tenant),
            job.job_id,
            now_ms // 1000,
            body,
            job.run_attempt,
            schedule_id=job.schedule_id,
            fire_time_ms=job.fire_time_ms,
        )
        return CallbackRequest(job.url, job.method, {**job.headers, **signed}, body, job.timeout_ms / 1000)


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
