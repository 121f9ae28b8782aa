"""The in-memory stores of tests/fakes, metered: each call counted as the DynamoDB request the adapter sends.

The fakes keep the adapters' conditional semantics (tests/contract checks them against moto), so the engine
runs over them exactly as over DynamoDB, minus the network and the emulator. The meter turns each port call
into the request adapters/dynamo sends for it (tests/bench/test_meter.py checks the mapping against the real
adapter's requests) and prices it in capacity units from the item's real size (codec.job_to_item), so the
engine's own DynamoDB cost per job shows without an emulator's noise.
"""

from __future__ import annotations

import threading
from collections import Counter

from bench.compare.dynamo_units import item_size, read_units, write_units
from hookline.adapters.dynamo import codec, tables
from hookline.domain.delivery import Claim, Finish
from hookline.domain.keys import KeyRecord, SigningSecrets
from hookline.domain.models import Execution, Job, JobStatus, Member
from hookline.domain.reconcile import LiveJob
from tests.fakes.jobs import FakeJobStore
from tests.fakes.keys import FakeKeyStore

MARKER_BYTES = 120  # an idempotency marker item: keys, job id, request hash, expiry
# What one item of the live index's INCLUDE projection holds (keys and the few attributes reconcile reads).
LIVE_JOB_ITEM_BYTES = 200
# What a claim or a finish adds to the item as created: a lease, a status code, an error, an expiry.
GROWTH_BYTES = 64


class DynamoMeter:
    """Requests by operation and capacity units, summed over every metered store; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: Counter[str] = Counter()
        self.wru = 0.0
        self.rru = 0.0

    def record(self, operation: str, wru: float = 0.0, rru: float = 0.0) -> None:
        """Counts one request and the units it consumed."""
        with self._lock:
            self.requests[operation] += 1
            self.wru += wru
            self.rru += rru

    def snapshot(self) -> dict[str, float]:
        """Returns the totals so far: requests, WRU, RRU and each operation's requests."""
        with self._lock:
            return {
                "dynamodb_requests": float(sum(self.requests.values())),
                "dynamodb_wru": self.wru,
                "dynamodb_rru": self.rru,
                **{f"dynamodb_{name}": float(count) for name, count in self.requests.items()},
            }


def job_bytes(job: Job) -> int:
    """Returns the size of the job's item as the adapter stores it."""
    return item_size(codec.job_to_item(job, tables.Keyspace()))


class MeteredJobStore:
    """JobStore and JobAdminStore over FakeJobStore; a refused write is still metered (DynamoDB bills it).

    A job's item is sized once, when it is created (serialised as the adapter does), and its later writes
    are priced at that size plus GROWTH_BYTES: serialising it again on every claim and finish would put the
    meter's own CPU into the engine's worker CPU. Units are whole KB, so the allowance only matters for
    jobs within 64 bytes of a KB boundary.
    """

    def __init__(self, inner: FakeJobStore, meter: DynamoMeter) -> None:
        self._inner = inner
        self._meter = meter
        self._sizes: dict[tuple[str, str], int] = {}

    def _size(self, job: Job) -> int:
        created = self._sizes.get((job.tenant, job.job_id))
        return job_bytes(job) if created is None else created + GROWTH_BYTES

    def create(self, job: Job, request_hash: str, now_ms: int) -> tuple[Job, bool]:
        """PutItem of the job, or with an idempotency key a transaction with its marker."""
        size = self._sizes[(job.tenant, job.job_id)] = job_bytes(job)
        try:
            return self._inner.create(job, request_hash, now_ms)
        finally:
            if job.idempotency_key is None:
                self._meter.record("PutItem", wru=write_units(size))
            else:
                units = write_units(size, True) + write_units(MARKER_BYTES, True)
                self._meter.record("TransactWriteItems", wru=units)

    def get(self, tenant: str, job_id: str) -> Job:
        """GetItem, strongly consistent."""
        job: Job | None = None
        try:
            job = self._inner.get(tenant, job_id)
            return job
        finally:
            self._meter.record("GetItem", rru=read_units(self._size(job) if job else 0))

    def claim(self, member: Member, now_ms: int) -> Claim:
        """UpdateItem with ReturnValues ALL_OLD (no read is billed for the returned item)."""
        claim: Claim | None = None
        try:
            claim = self._inner.claim(member, now_ms)
            return claim
        finally:
            # The claim only adds to the item, so the item after it is the larger one.
            self._meter.record("UpdateItem", wru=write_units(self._size(claim.job) if claim else 0))

    def finish(self, job: Job, finish: Finish, executions: list[Execution], now_ms: int) -> None:
        """TransactWriteItems: the execution puts and the job's update, each item billed twice."""
        units = write_units(self._size(job), True)
        units += sum(write_units(item_size(codec.execution_to_item(e)), True) for e in executions)
        try:
            self._inner.finish(job, finish, executions, now_ms)
        finally:
            self._meter.record("TransactWriteItems", wru=units)

    def mark_dead(self, member: Member, reason: str, now_ms: int) -> None:
        """UpdateItem."""
        try:
            self._inner.mark_dead(member, reason, now_ms)
        finally:
            self._meter.record("UpdateItem", wru=1)

    def renew_lease(self, job: Job, lease_expires_at_ms: int) -> None:
        """UpdateItem, conditional on the attempt still holding the job."""
        try:
            self._inner.renew_lease(job, lease_expires_at_ms)
        finally:
            self._meter.record("UpdateItem", wru=write_units(self._size(job)))

    def live_jobs(
        self, shard: int, cursor: str | None, limit: int, due_before_ms: int | None = None
    ) -> tuple[list[LiveJob], str | None]:
        """Queries of the live index, one per partition read (a GSI projecting a few attributes: eventually
        consistent, small items)."""
        before = self._inner.queries
        jobs, next_cursor = self._inner.live_jobs(shard, cursor, limit, due_before_ms)
        self._queries(self._inner.queries - before, LIVE_JOB_ITEM_BYTES * len(jobs))
        return jobs, next_cursor

    def _queries(self, count: int, size: int) -> None:
        """Records count Query requests (one per bucket or live partition read) that read size bytes."""
        for n in range(count):
            self._meter.record("Query", rru=read_units(size if n == 0 else 0, consistent=False))

    def executions(self, tenant: str, job_id: str) -> list[Execution]:
        """Query of the executions table."""
        found = self._inner.executions(tenant, job_id)
        size = sum(item_size(codec.execution_to_item(e)) for e in found)
        self._meter.record("Query", rru=read_units(size))
        return found

    def list_jobs(
        self, tenant: str, status: JobStatus | None, after_job_id: str | None, limit: int
    ) -> tuple[list[Job], str | None]:
        """One Query per bucket page read (the units of the jobs returned; filtered-out reads not priced)."""
        before = self._inner.queries
        jobs, after = self._inner.list_jobs(tenant, status, after_job_id, limit)
        self._queries(self._inner.queries - before, sum(self._size(j) for j in jobs))
        return jobs, after

    def cancel(self, tenant: str, job_id: str, now_ms: int) -> Job:
        """UpdateItem with ALL_OLD."""
        try:
            return self._inner.cancel(tenant, job_id, now_ms)
        finally:
            self._meter.record("UpdateItem", wru=1)

    def replay(self, tenant: str, job_id: str, shard: int, now_ms: int) -> Job:
        """UpdateItem with ALL_NEW."""
        try:
            return self._inner.replay(tenant, job_id, shard, now_ms)
        finally:
            self._meter.record("UpdateItem", wru=1)


class MeteredKeyStore:
    """KeyReader over FakeKeyStore: key lookups eventually consistent, signing secrets strongly."""

    def __init__(self, inner: FakeKeyStore, meter: DynamoMeter) -> None:
        self._inner = inner
        self._meter = meter

    def get_key(self, key_id: str) -> KeyRecord | None:
        """GetItem."""
        self._meter.record("GetItem", rru=read_units(0, consistent=False))
        return self._inner.get_key(key_id)

    def get_signing_secrets(self, tenant: str) -> SigningSecrets | None:
        """GetItem, strongly consistent."""
        self._meter.record("GetItem", rru=read_units(0))
        return self._inner.get_signing_secrets(tenant)

    def put_signing_secrets(
        self, tenant: str, secrets: SigningSecrets, now_ms: int, *, only_if_missing: bool = False
    ) -> bool:
        """PutItem (conditional with only_if_missing)."""
        self._meter.record("PutItem", wru=1)
        return self._inner.put_signing_secrets(tenant, secrets, now_ms, only_if_missing=only_if_missing)
