"""The job store (hookline.ports.JobStore and JobAdminStore) in memory, with the real adapter's conditions.

Each write checks the named condition of adapters/dynamo/job_store.py and applies the same update, so a
state the fake reaches is a state DynamoDB would hold:

- create: ITEM_IS_NEW on the job; with an idempotency key, also MARKER_IS_FREE on the marker, both or
  neither (a transaction); a refused transaction returns the earlier job of the same request, or raises
  IdempotencyConflict (another request) or StaleState (the marker vanished meanwhile).
- claim: CLAIMABLE (this generation, scheduled, or running with an expired lease); the lease is the job's
  timeout plus lease_margin_ms from now.
- finish: HELD_BY_ATTEMPT (running, this generation, this attempt), the execution records in the same
  transaction: refused, nothing is written.
- mark_dead: LIVE_IN_GENERATION; cancel: CANCELLABLE; replay: REPLAYABLE (NotFound when missing).

The real adapter turns every cancelled finish transaction into StaleState, whatever cancelled it; plan
`finish_cancelled()` as a fault to get that without the condition failing.
"""

from __future__ import annotations

from typing import Any

from hookline.domain import constants
from hookline.domain.delivery import Claim, Finish
from hookline.domain.errors import IdempotencyConflict, NotFound, StaleState
from hookline.domain.models import Execution, Job, JobStatus, Member
from tests.fakes.faults import ConditionFailed, Faults, dynamo_down, port_call
from tests.fakes.tables import JobsTables, Marker

LIST_FILTERED_BATCH = 200
LIST_MAX_READ_ITEMS = 1000


def finish_cancelled() -> StaleState:
    """Returns what the adapter raises when a finish transaction is cancelled for any reason (a conflict
    with another transaction, throttling of one item): StaleState, as for a lost lease."""
    return StaleState("transaction cancelled: TransactionConflict")


class FakeJobStore:
    """Jobs, idempotency markers and execution records in JobsTables."""

    def __init__(
        self,
        tables: JobsTables | None = None,
        lease_margin_ms: int = int(constants.LEASE_MARGIN_S * 1000),
    ) -> None:
        self.tables = tables or JobsTables()
        self._lease_margin_ms = lease_margin_ms
        self._faults = Faults(dynamo_down)

    @property
    def faults(self) -> Faults:
        """Returns the fault plan of this fake's calls (default error: DynamoUnavailable)."""
        return self._faults

    def _put(self, job: Job, live_sk: int | None = None, live_shard: int | None = None) -> None:
        """Writes the job; a live one keeps (or gets) its live partition and takes live_sk (default: due)."""
        key = (job.tenant, job.job_id)
        self.tables.jobs[key] = job
        if not job.status.is_live:
            self.tables.live.pop(key, None)
            return
        if live_shard is None:
            live_shard = self.tables.live[key][0] if key in self.tables.live else job.shard
        self.tables.live[key] = (live_shard, job.due_ms if live_sk is None else live_sk)

    @port_call
    def create(self, job: Job, request_hash: str, now_ms: int) -> tuple[Job, bool]:
        """Stores a new job, or returns the earlier job of the same idempotent request."""
        t = self.tables
        with t.lock:
            job_free = (job.tenant, job.job_id) not in t.jobs
            if job.idempotency_key is None:
                if not job_free:
                    raise ConditionFailed("ConditionalCheckFailedException")
                self._put(job)
                return job, True
            marker_key = (job.tenant, job.idempotency_key)
            marker = t.markers.get(marker_key)
            if job_free and (marker is None or marker.expires_at_s < now_ms // 1000):
                self._put(job)
                expires_s = now_ms // 1000 + constants.IDEMPOTENCY_RETENTION_S
                t.markers[marker_key] = Marker(job.job_id, request_hash, expires_s)
                return job, True
            if marker is None:
                raise StaleState("idempotency marker changed concurrently; retry the request")
            if marker.request_hash != request_hash:
                raise IdempotencyConflict("idempotency_key was already used with a different request")
            return self._get(job.tenant, marker.job_id), False

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
        """CLAIMABLE, then running for one more attempt under a lease; StaleState otherwise."""
        with self.tables.lock:
            before = self.tables.jobs.get((member.tenant, member.job_id))
            claimable = before is not None and before.generation == member.generation
            if before is not None and claimable:
                lease_expired = before.lease_expires_at_ms is not None and before.lease_expires_at_ms < now_ms
                claimable = before.status is JobStatus.SCHEDULED or (
                    before.status is JobStatus.RUNNING and lease_expired
                )
            if before is None or not claimable:
                raise StaleState(f"job {member.job_id} generation {member.generation} is not claimable")
            lease_ms = before.timeout_ms + now_ms + self._lease_margin_ms
            job = before.with_changes(
                status=JobStatus.RUNNING,
                attempt=before.attempt + 1,
                lease_expires_at_ms=lease_ms,
                updated_ms=now_ms,
            )
            self._put(job, live_sk=lease_ms)
            if before.status is JobStatus.RUNNING:
                return Claim(job, before.attempt, before.updated_ms)
            return Claim(job)

    @port_call
    def finish(self, job: Job, finish: Finish, executions: list[Execution], now_ms: int) -> None:
        """HELD_BY_ATTEMPT, then the next state and the execution records together; StaleState otherwise."""
        t = self.tables
        with t.lock:
            stored = t.jobs.get((job.tenant, job.job_id))
            if (
                stored is None
                or stored.status is not JobStatus.RUNNING
                or stored.generation != job.generation
                or stored.attempt != job.attempt
            ):
                raise StaleState(f"job {job.job_id} attempt {job.attempt} no longer holds the job")
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
                t.executions.setdefault((execution.tenant, execution.job_id), {})[execution.attempt] = (
                    execution
                )
            self._put(after)

    @port_call
    def mark_dead(self, member: Member, reason: str, now_ms: int) -> None:
        """LIVE_IN_GENERATION, then dead with reason as its last error; StaleState otherwise."""
        with self.tables.lock:
            stored = self.tables.jobs.get((member.tenant, member.job_id))
            if stored is None or stored.generation != member.generation or not stored.status.is_live:
                raise StaleState(f"job {member.job_id} is no longer live in generation {member.generation}")
            self._put(
                stored.with_changes(
                    status=JobStatus.DEAD, last_error=reason, updated_ms=now_ms, lease_expires_at_ms=None
                )
            )

    @port_call
    def live_jobs(self, shard: int, start_key: dict[str, Any] | None, limit: int) -> tuple[list[Job], Any]:
        """Returns a page of the shard's live GSI partition in live_due_ms order, and the key to go on from.

        As in DynamoDB, a full page always carries a key, even when nothing follows (then the next page is
        empty with no key); moto gives one only when its partition holds more items. Callers page to None.
        """
        t = self.tables
        with t.lock:
            rows = sorted(
                (sk, tenant, job_id)
                for (tenant, job_id), (partition, sk) in t.live.items()
                if partition == shard
            )
            if start_key is not None:
                after = (start_key["live_due_ms"], start_key["pk"], start_key["job_id"])
                rows = [row for row in rows if row > after]
            page = rows[:limit]
            jobs = [t.jobs[(tenant, job_id)] for _, tenant, job_id in page]
            if len(page) < limit:
                return jobs, None
            sk, tenant, job_id = page[-1]
            return jobs, {"live_due_ms": sk, "pk": tenant, "job_id": job_id}

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
    ) -> tuple[list[Job], str | None]:
        """Returns a page of the tenant's jobs, newest first, read as the adapter's queries read them.

        Without a status a query reads limit + 1 items; with one it reads batches of LIST_FILTERED_BATCH
        and filters them, at most max_read items per call, so a sparse status can give a short page that
        still goes on after the last item read.
        """
        with self.tables.lock:
            ids = sorted((jid for (t, jid) in self.tables.jobs if t == tenant), reverse=True)
            if after_job_id is not None:
                ids = [jid for jid in ids if jid < after_job_id]
            batch = limit + 1 if status is None else LIST_FILTERED_BATCH
            jobs: list[Job] = []
            read = 0
            while True:
                taken, ids = ids[:batch], ids[batch:]
                read += len(taken)
                found = [self.tables.jobs[(tenant, jid)] for jid in taken]
                jobs += [job for job in found if status is None or job.status is status]
                last_id = taken[-1] if len(taken) == batch else None  # DynamoDB: Limit reached, a key
                if len(jobs) > limit or last_id is None or read >= max_read:
                    break
            if len(jobs) > limit:
                return jobs[:limit], jobs[limit - 1].job_id
            return jobs, last_id

    @port_call
    def cancel(self, tenant: str, job_id: str, now_ms: int) -> Job:
        """CANCELLABLE, then cancelled; returns the job as it was. NotFound or StaleState otherwise."""
        with self.tables.lock:
            before = self._refusal_or_job(tenant, job_id, JobStatus.SCHEDULED, "cancelled")
            self._put(before.with_changes(status=JobStatus.CANCELLED, updated_ms=now_ms))
            return before

    @port_call
    def replay(self, tenant: str, job_id: str, shard: int, now_ms: int) -> Job:
        """REPLAYABLE, then scheduled due now in a new generation with a fresh attempt budget."""
        with self.tables.lock:
            before = self._refusal_or_job(tenant, job_id, JobStatus.DEAD, "replayed")
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
            return after

    def _refusal_or_job(self, tenant: str, job_id: str, required: JobStatus, verb: str) -> Job:
        stored = self.tables.jobs.get((tenant, job_id))
        if stored is None:
            raise NotFound(f"job {job_id} not found")
        if stored.status is not required:
            raise StaleState(
                f"job {job_id} is {stored.status.value}; only a {required.value} job can be {verb}"
            )
        return stored
