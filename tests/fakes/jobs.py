"""The job store (hookline.ports.JobStore and JobAdminStore) in memory, with the real adapter's conditions.

Each write checks the named condition of adapters/dynamo/job_store.py and applies the same update, so a
state the fake reaches is a state DynamoDB would hold:

- create: ITEM_IS_NEW on the job; with an idempotency key, also MARKER_IS_FREE on the marker, both or
  neither (a transaction); a refused transaction returns the earlier job of the same request, or raises
  IdempotencyConflict (another request) or StaleState (the marker vanished meanwhile).
- claim: CLAIMABLE (this generation, and scheduled and due, or running with an expired lease); the lease
  lasts lease_ms from now. A refusal is NotYet (due later, or a lease still held: retry_at_ms says when)
  or StaleState (another generation, finished, cancelled, unknown).
- renew_lease and finish: HELD_BY_ATTEMPT (running, this generation, this attempt); finish writes the
  execution records with the job: refused, nothing is written. As in the adapter, a finish with no record
  but attempt 1's (which the job item holds) is one UpdateItem ("update_item" for lost replies, never
  cancelled like a transaction), and one with another record a transaction of the job and those records.
- The live index keeps a job's due time as its sort key while it runs (claim and renewal leave it), and the
  due scan (live_jobs with due_before_ms) drops a running job whose lease ends after the horizon, after the
  page's Limit was read, as DynamoDB's FilterExpression does.
- mark_dead: DEAD_LETTERABLE (this generation, scheduled, or running with an expired lease); cancel:
  CANCELLABLE; replay: REPLAYABLE (NotFound when missing).

Every write the adapter stamps with a token (create, claim, finish, cancel and replay as "change") records
it in JobsTables.stamps, one per kind of write (an idempotency marker carries its create's), and a refusal
that finds its own token is that write's first try: created, claimed (a take-over as the first try's was),
finished, cancelled or replayed, as the adapter reports. mark_dead accepts a job already dead in the
member's generation for the same reason. `replies.lose(operation, count, between)` loses replies the client
sends again (faults.LostReplies): the request is applied and repeated (between() runs in between), as
tests/support/dynamo_faults' proxy does on the wire for the real clients.

Transactions (create with a key, finish) go through adapters/dynamo/transactions.py's rules: only a
ConditionalCheckFailed reason is a refused condition (finish: StaleState only at the job item, DependencyDown
at another); transient reasons are retried up to ATTEMPTS times, then DependencyDown; any other reason is
TransactionRejected. `transactions.plan(reason, count, at)` injects cancellations, as
tests/support/dynamo_faults' proxy does on the wire for the real clients.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, TypeVar

from hookline.adapters.dynamo import codec, paging, tables
from hookline.adapters.dynamo.job_store import new_write_token, split_executions
from hookline.adapters.dynamo.transactions import ATTEMPTS, CONDITION_FAILED, TRANSIENT_REASONS
from hookline.domain import constants
from hookline.domain.delivery import Claim, Finish
from hookline.domain.errors import DependencyDown, IdempotencyConflict, NotFound, NotYet, StaleState
from hookline.domain.models import Execution, Job, JobStatus, Member
from hookline.domain.reconcile import LiveJob
from tests.fakes.faults import (
    ConditionFailed,
    Faults,
    LostReplies,
    TransactionCancellations,
    TransactionRejected,
    dynamo_down,
    port_call,
)
from tests.fakes.tables import JobsTables, Marker, Stamp

LIST_FILTERED_BATCH = 200
LIST_MAX_READ_ITEMS = 1000
PASSED = "None"  # the reason code DynamoDB gives an item whose condition held in a cancelled transaction
R = TypeVar("R")


class FakeJobStore:
    """Jobs, idempotency markers and execution records in JobsTables."""

    def __init__(
        self,
        tables: JobsTables | None = None,
        lease_ms: int = constants.LEASE_MS,
        transaction_attempts: int = ATTEMPTS,
    ) -> None:
        self.tables = tables or JobsTables()
        self._lease_ms = lease_ms
        self._attempts = transaction_attempts
        self._faults = Faults(dynamo_down)
        self.transactions = TransactionCancellations()
        self.replies = LostReplies()
        # The Query requests the adapter would have sent for the same reads (one per bucket or partition
        # page), for the bench's meter.
        self.queries = 0

    @property
    def faults(self) -> Faults:
        """Returns the fault plan of this fake's calls (default error: DynamoUnavailable)."""
        return self._faults

    def _put(
        self, job: Job, live_sk: int | None = None, live_shard: int | None = None, keep_sk: bool = False
    ) -> None:
        """Writes the job; a live one keeps (or gets) its live partition and takes live_sk (default: due),
        or with keep_sk keeps the sort key it has (a claim, a renewal)."""
        key = (job.tenant, job.job_id)
        self.tables.jobs[key] = job
        if not job.status.is_live:
            self.tables.live.pop(key, None)
            return
        if live_shard is not None:
            partition = self.tables.keyspace.live_pk(live_shard, job.job_id)
        elif key in self.tables.live:
            partition = self.tables.live[key][0]
        else:
            partition = self.tables.keyspace.live_pk(job.shard, job.job_id)
        if keep_sk and key in self.tables.live:
            live_sk = self.tables.live[key][1]
        self.tables.live[key] = (partition, job.due_ms if live_sk is None else live_sk)

    def _send(self, operation: str, request: Callable[[], R]) -> R:
        """Sends one DynamoDB request; when its reply is lost (replies.lose) the client sends it again, and
        the caller gets the repeat's answer."""
        between = self.replies.take(operation)
        if between is not None:
            with contextlib.suppress(Exception):
                request()
            between()
        return request()

    def _owns(self, tenant: str, job_id: str, kind: str, token: str) -> bool:
        """Tells whether the job item was last stamped by the write carrying token."""
        stamp = self.tables.stamps.get((tenant, job_id, kind))
        return stamp is not None and stamp.token == token

    def _transact(
        self, items: int, checks: Callable[[], list[bool]], apply: Callable[[], None]
    ) -> list[str] | None:
        """Writes one transaction as Transactions.write does; returns the reasons when a condition failed.

        checks() tells, per item, whether its condition holds; apply() writes every item. Call with the lock.
        """
        reasons: list[str] = []
        for _ in range(self._attempts):
            injected = self.transactions.take(items)
            if injected is None:
                reasons = [PASSED if held else CONDITION_FAILED for held in checks()]
                if CONDITION_FAILED in reasons:
                    return reasons
                apply()
                return None
            reasons = injected
            if CONDITION_FAILED in reasons:
                return reasons
            if set(reasons) - TRANSIENT_REASONS - {PASSED}:
                raise TransactionRejected(f"TransactionCanceledException: {reasons}")
        raise DependencyDown(
            f"dynamodb kept cancelling the transaction ({', '.join(sorted(set(reasons) - {PASSED}))}); "
            "retry later"
        )

    @port_call
    def create(self, job: Job, request_hash: str, now_ms: int) -> tuple[Job, bool]:
        """Stores a new job, or returns the earlier job of the same idempotent request."""
        token = new_write_token()
        if job.idempotency_key is None:
            return self._send("put_item", lambda: self._create(job, token))
        return self._send("transact_write_items", lambda: self._create_once(job, request_hash, now_ms, token))

    def _create(self, job: Job, token: str) -> tuple[Job, bool]:
        """ITEM_IS_NEW, stamped; refused, the job was created only if by this token."""
        key = (job.tenant, job.job_id)
        with self.tables.lock:
            if key in self.tables.jobs:
                if self._owns(job.tenant, job.job_id, "create", token):
                    return job, True
                raise ConditionFailed("ConditionalCheckFailedException")
            self._put(job)
            self.tables.stamps[(*key, "create")] = Stamp(token)
            return job, True

    def _create_once(self, job: Job, request_hash: str, now_ms: int, token: str) -> tuple[Job, bool]:
        """ITEM_IS_NEW and MARKER_IS_FREE in one transaction; refused, the earlier job of the key."""
        t = self.tables
        assert job.idempotency_key is not None
        marker_key = (job.tenant, job.idempotency_key)
        with t.lock:

            def checks() -> list[bool]:
                marker = t.markers.get(marker_key)
                return [
                    (job.tenant, job.job_id) not in t.jobs,
                    marker is None or marker.expires_at_s < now_ms // 1000,
                ]

            def apply() -> None:
                self._put(job)
                t.stamps[(job.tenant, job.job_id, "create")] = Stamp(token)
                expires_s = now_ms // 1000 + constants.IDEMPOTENCY_RETENTION_S
                t.markers[marker_key] = Marker(job.job_id, request_hash, expires_s, token)

            if self._transact(2, checks, apply) is None:
                return job, True
            # As the adapter: read the marker (expired or not, TTL deletes lazily) for the earlier job.
            marker = t.markers.get(marker_key)
            if marker is None:
                raise StaleState("idempotency marker changed concurrently; retry the request")
            if marker.request_hash != request_hash:
                raise IdempotencyConflict("idempotency_key was already used with a different request")
            return self._get(job.tenant, marker.job_id), marker.write_token == token

    def _get(self, tenant: str, job_id: str) -> Job:
        job = self.tables.jobs.get((tenant, job_id))
        if job is None:
            raise NotFound(f"job {job_id} not found")
        return job

    @port_call
    def get(self, tenant: str, job_id: str) -> Job:
        """Returns the tenant's job or raises NotFound."""
        with self.tables.lock:
            return self._get(tenant, job_id)

    @port_call
    def claim(self, member: Member, now_ms: int) -> Claim:
        """CLAIMABLE, then running for one more attempt under a lease; NotYet or StaleState otherwise."""
        token = new_write_token()
        return self._send("update_item", lambda: self._claim(member, now_ms, token))

    def _claim(self, member: Member, now_ms: int, token: str) -> Claim:
        key = (member.tenant, member.job_id)
        with self.tables.lock:
            before = self.tables.jobs.get(key)
            if before is None:
                raise StaleState(f"job {member.job_id} does not exist")
            lease = before.lease_expires_at_ms
            claimable = before.generation == member.generation and (
                (before.status is JobStatus.SCHEDULED and before.due_ms <= now_ms)
                or (before.status is JobStatus.RUNNING and lease is not None and lease < now_ms)
            )
            if not claimable:
                stamp = self.tables.stamps.get((*key, "claim"))
                if stamp is not None and stamp.token == token:
                    # This claim's first try took the job; its reply was lost.
                    if stamp.claimed_from is JobStatus.RUNNING:
                        return Claim(before, before.attempt - 1, stamp.claimed_from_ms)
                    return Claim(before)
                raise self._claim_refusal(before, member, now_ms)
            lease_ms = now_ms + self._lease_ms
            job = before.with_changes(
                status=JobStatus.RUNNING,
                attempt=before.attempt + 1,
                lease_expires_at_ms=lease_ms,
                updated_ms=now_ms,
            )
            self._put(job, keep_sk=True)
            self.tables.stamps[(*key, "claim")] = Stamp(token, before.status, before.updated_ms)
            if before.status is JobStatus.RUNNING:
                return Claim(job, before.attempt, before.updated_ms)
            return Claim(job)

    @staticmethod
    def _claim_refusal(before: Job, member: Member, now_ms: int) -> NotYet | StaleState:
        lease = before.lease_expires_at_ms
        if before.generation == member.generation:
            if before.status is JobStatus.SCHEDULED and before.due_ms > now_ms:
                return NotYet(f"job {member.job_id} is due at {before.due_ms}", before.due_ms)
            if before.status is JobStatus.RUNNING and lease is not None:
                return NotYet(f"job {member.job_id} is held until {lease}", lease + 1)
        return StaleState(
            f"job {member.job_id} generation {member.generation} is not claimable "
            f"({before.status.value}, generation {before.generation})"
        )

    def _holds(self, job: Job) -> bool:
        """HELD_BY_ATTEMPT: the stored job is running in job's generation for job's attempt."""
        stored = self.tables.jobs.get((job.tenant, job.job_id))
        return (
            stored is not None
            and stored.status is JobStatus.RUNNING
            and stored.generation == job.generation
            and stored.attempt == job.attempt
        )

    @port_call
    def renew_lease(self, job: Job, lease_expires_at_ms: int, timeout_ms: int | None = None) -> None:
        """HELD_BY_ATTEMPT, then the lease moved; updated_ms and the live index's sort key unchanged.

        Answers at once, so timeout_ms never runs out.
        """
        with self.tables.lock:
            if not self._holds(job):
                raise StaleState(f"job {job.job_id} attempt {job.attempt} no longer holds the job")
            stored = self.tables.jobs[(job.tenant, job.job_id)]
            self._put(stored.with_changes(lease_expires_at_ms=lease_expires_at_ms), keep_sk=True)

    @port_call
    def finish(self, job: Job, finish: Finish, executions: list[Execution], now_ms: int) -> None:
        """HELD_BY_ATTEMPT, then the next state and the execution records together.

        One UpdateItem when the only record is attempt 1's (the job item holds it), else one transaction.
        StaleState when the job item's condition failed (unless this call's own first try wrote it);
        DependencyDown when the transaction kept being cancelled for a transient reason, or was cancelled
        at an execution record: nothing is written.
        """
        token = new_write_token()
        operation = "transact_write_items" if split_executions(executions)[1] else "update_item"
        self._send(operation, lambda: self._finish(job, finish, executions, now_ms, token))

    def _finish(self, job: Job, finish: Finish, executions: list[Execution], now_ms: int, token: str) -> None:
        t = self.tables
        with t.lock:

            def checks() -> list[bool]:
                return [True] * len(split_executions(executions)[1]) + [self._holds(job)]

            def apply() -> None:
                stored = t.jobs[(job.tenant, job.job_id)]
                after = stored.with_changes(
                    status=finish.status,
                    updated_ms=now_ms,
                    lease_expires_at_ms=None,
                    last_status_code=finish.status_code,
                    last_error=finish.error,
                )
                if finish.status is JobStatus.SCHEDULED:
                    assert finish.next_due_ms is not None
                    after = after.with_changes(generation=job.generation + 1, due_ms=finish.next_due_ms)
                for execution in executions:
                    records = t.executions.setdefault((execution.tenant, execution.job_id), {})
                    records[execution.attempt] = execution
                self._put(after)
                t.stamps[(job.tenant, job.job_id, "finish")] = Stamp(token)

            later = split_executions(executions)[1]
            reasons: list[str] | None = None
            if later:
                reasons = self._transact(len(later) + 1, checks, apply)
            elif self._holds(job):
                apply()  # one UpdateItem: the job item alone
            else:
                reasons = [CONDITION_FAILED]
            if reasons is not None and reasons[-1] == CONDITION_FAILED:
                if self._owns(job.tenant, job.job_id, "finish", token):
                    return
                raise StaleState(f"job {job.job_id} attempt {job.attempt} no longer holds the job")
            if reasons is not None:
                raise DependencyDown(f"job {job.job_id}: transaction cancelled for {reasons}")

    @port_call
    def mark_dead(self, member: Member, reason: str, now_ms: int) -> None:
        """DEAD_LETTERABLE, then dead with reason as its last error; StaleState unless already so."""
        self._send("update_item", lambda: self._mark_dead(member, reason, now_ms))

    def _mark_dead(self, member: Member, reason: str, now_ms: int) -> None:
        with self.tables.lock:
            stored = self.tables.jobs.get((member.tenant, member.job_id))
            lease = None if stored is None else stored.lease_expires_at_ms
            if (
                stored is None
                or stored.generation != member.generation
                or not (
                    stored.status is JobStatus.SCHEDULED
                    or (stored.status is JobStatus.RUNNING and lease is not None and lease < now_ms)
                )
            ):
                if stored is not None and (stored.status, stored.generation, stored.last_error) == (
                    JobStatus.DEAD,
                    member.generation,
                    reason,
                ):
                    return
                raise StaleState(
                    f"job {member.job_id} is no longer live in generation {member.generation}, "
                    "or an attempt still holds its lease"
                )
            self._put(
                stored.with_changes(
                    status=JobStatus.DEAD, last_error=reason, updated_ms=now_ms, lease_expires_at_ms=None
                )
            )

    @port_call
    def live_jobs(
        self, shard: int, cursor: str | None, limit: int, due_before_ms: int | None = None
    ) -> tuple[list[LiveJob], str | None]:
        """Returns a page of the shard's live GSI partitions ("<shard>#<bucket>"), as the adapter reads them.

        Each partition is read in live_due_ms order (paging.scan_partitions); due_before_ms keeps only rows
        whose live_due_ms is at most that, and of those running only the ones whose lease ends by then (a
        filter applied to the page read, so a page may come short with a key). A partition's position is
        its last key as DynamoDB gives it (table and index keys as attribute values). As in DynamoDB, a full
        page of a partition always carries a key, even when nothing follows (then its next page is empty
        with none); moto gives one only when
        more items match. Callers page to None.
        """
        t = self.tables
        keyspace = t.keyspace

        def fetch(partition: str, start_key: Any, page_size: int) -> tuple[list[LiveJob], Any]:
            self.queries += 1
            rows = sorted(
                (sk, keyspace.job_pk(tenant, job_id), tables.job_sk(job_id), tenant, job_id)
                for (tenant, job_id), (live_pk, sk) in t.live.items()
                if live_pk == partition and (due_before_ms is None or sk <= due_before_ms)
            )
            if start_key is not None:
                key = codec.from_attribute_values(start_key)
                after = (key[tables.LIVE_SK], key[tables.JOBS_PK], key[tables.JOBS_SK])
                rows = [row for row in rows if row[:3] > after]
            page = rows[:page_size]
            jobs = [_live_job(t.jobs[(tenant, job_id)]) for *_, tenant, job_id in page]
            if due_before_ms is not None:
                jobs = [job for job in jobs if not _held_past(job, due_before_ms)]
            if len(page) < page_size:
                return jobs, None
            sk, pk, job_sk, _, _ = page[-1]
            last_key = codec.to_attribute_values(
                {tables.JOBS_PK: pk, tables.JOBS_SK: job_sk, tables.LIVE_PK: partition, tables.LIVE_SK: sk}
            )
            return jobs, last_key

        with t.lock:
            return paging.scan_partitions(keyspace.live_pks(shard), fetch, cursor, limit)

    @port_call
    def executions(self, tenant: str, job_id: str) -> list[Execution]:
        """Returns every recorded attempt of a job, oldest first (none for an unknown job)."""
        with self.tables.lock:
            recorded = self.tables.executions.get((tenant, job_id), {})
            return [recorded[attempt] for attempt in sorted(recorded)]

    @port_call
    def list_jobs(
        self,
        tenant: str,
        status: JobStatus | None,
        after_job_id: str | None,
        limit: int,
        max_read: int = LIST_MAX_READ_ITEMS,
        filtered_batch: int = LIST_FILTERED_BATCH,
    ) -> tuple[list[Job], str | None]:
        """Returns a page of the tenant's jobs, newest first, read as the adapter's queries read them.

        Every bucket of the tenant is read after the position and merged by id (paging.merge_newest_first):
        without a status in pages of what the page still needs, with one in batches of LIST_FILTERED_BATCH
        split over the buckets, filtered, at most max_read items per call, so a sparse status can give a
        short page that still goes on after the last item read.
        """
        t = self.tables
        keyspace = t.keyspace

        def fetch(bucket: int, after: str | None, page_size: int) -> paging.BucketPage[Job]:
            self.queries += 1
            pk = tables.bucket_pk(tenant, bucket)
            ids = sorted(
                (jid for (owner, jid) in t.jobs if owner == tenant and keyspace.job_pk(owner, jid) == pk),
                reverse=True,
            )
            if after is not None:
                ids = [jid for jid in ids if jid < after]
            taken = ids[:page_size]
            found = [t.jobs[(tenant, jid)] for jid in taken]
            last = taken[-1] if len(taken) == page_size else None  # DynamoDB: Limit reached, a key
            return paging.BucketPage(
                [job for job in found if status is None or job.status is status], last, len(taken)
            )

        with t.lock:
            return paging.merge_newest_first(
                keyspace.buckets,
                fetch,
                lambda job: job.job_id,
                after_job_id,
                limit,
                None if status is None else max(1, filtered_batch // keyspace.buckets),
                max_read,
            )

    @port_call
    def cancel(self, tenant: str, job_id: str, now_ms: int) -> Job:
        """CANCELLABLE, then cancelled; returns the cancelled job. NotFound or StaleState otherwise."""
        token = new_write_token()

        def cancel() -> Job:
            with self.tables.lock:
                before = self._refusal_or_job(tenant, job_id, JobStatus.SCHEDULED, "cancelled", token)
                if self._owns(tenant, job_id, "change", token):
                    return before
                after = before.with_changes(status=JobStatus.CANCELLED, updated_ms=now_ms)
                self._put(after)
                self.tables.stamps[(tenant, job_id, "change")] = Stamp(token)
                return after

        return self._send("update_item", cancel)

    @port_call
    def replay(self, tenant: str, job_id: str, shard: int, now_ms: int) -> Job:
        """REPLAYABLE, then scheduled due now in a new generation with a fresh attempt budget."""
        token = new_write_token()

        def replay() -> Job:
            with self.tables.lock:
                before = self._refusal_or_job(tenant, job_id, JobStatus.DEAD, "replayed", token)
                if self._owns(tenant, job_id, "change", token):
                    return before
                after = before.with_changes(
                    status=JobStatus.SCHEDULED,
                    generation=before.generation + 1,
                    attempt_base=before.attempt,
                    due_ms=now_ms,
                    updated_ms=now_ms,
                    lease_expires_at_ms=None,
                    last_status_code=None,
                    last_error=None,
                )
                # The live partition is the shard the caller passes, as in the adapter.
                self._put(after, live_shard=shard)
                self.tables.stamps[(tenant, job_id, "change")] = Stamp(token)
                return after

        return self._send("update_item", replay)

    @port_call
    def run_now(self, tenant: str, job_id: str, generation: int, shard: int, now_ms: int) -> Job:
        """RUNNABLE_NOW (scheduled in generation), then due now in the next generation, attempts unchanged."""
        token = new_write_token()

        def run_now() -> Job:
            with self.tables.lock:
                before = self._refusal_or_job(tenant, job_id, JobStatus.SCHEDULED, "run now", token)
                if self._owns(tenant, job_id, "change", token):
                    return before
                if before.generation != generation:
                    raise StaleState(
                        f"job {job_id} is scheduled; only a job scheduled in generation {generation} "
                        "can be run now"
                    )
                after = before.with_changes(
                    generation=before.generation + 1, due_ms=now_ms, updated_ms=now_ms
                )
                self._put(after, live_shard=shard)
                self.tables.stamps[(tenant, job_id, "change")] = Stamp(token)
                return after

        return self._send("update_item", run_now)

    def _refusal_or_job(self, tenant: str, job_id: str, required: JobStatus, verb: str, token: str) -> Job:
        """Returns the stored job when it is in the required status or was stamped by token (the write's
        own first try); NotFound or StaleState otherwise."""
        stored = self.tables.jobs.get((tenant, job_id))
        if stored is None:
            raise NotFound(f"job {job_id} not found")
        if stored.status is not required and not self._owns(tenant, job_id, "change", token):
            raise StaleState(
                f"job {job_id} is {stored.status.value}; only a {required.value} job can be {verb}"
            )
        return stored


def _held_past(job: LiveJob, horizon_ms: int) -> bool:
    """job_store.RUNNING_JOB_DUE_BY_HORIZON, negated: running under a lease that ends after horizon_ms."""
    lease = job.lease_expires_at_ms
    return job.status is JobStatus.RUNNING and lease is not None and lease > horizon_ms


def _live_job(job: Job) -> LiveJob:
    """Returns what the live GSI projects of a job (tables.LIVE_JOB_ATTRIBUTES), as the adapter reads it."""
    return LiveJob(
        tenant=job.tenant,
        job_id=job.job_id,
        status=job.status,
        generation=job.generation,
        due_ms=job.due_ms,
        shard=job.shard,
        flow=job.flow,
        lease_expires_at_ms=job.lease_expires_at_ms,
    )
