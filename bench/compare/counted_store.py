"""The in-memory stores of tests/fakes, metered: each call counted as the DynamoDB request the adapter sends.

The fakes keep the adapters' conditional semantics (tests/contract checks them against moto), so the engine
runs over them exactly as over DynamoDB, minus the network and the emulator. The meter turns each port call
into the request adapters/dynamo sends for it (tests/bench/test_meter.py checks the mapping against the real
adapter's requests) and prices it in capacity units from the item's real size (codec.job_to_item), so the
engine's own DynamoDB cost per job shows without an emulator's noise.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Callable

from bench.compare.dynamo_units import item_size, read_units, value_size, write_units
from hookline.adapters.dynamo import codec, tables
from hookline.adapters.dynamo.job_store import split_executions
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
# The live index's writes (DynamoDB bills a GSI its own WRU: one per started KB of the projected item per
# index write, and two when a table write changes the index's key, a delete then a put; the emulators do
# not bill indexes, so the meter derives them from which writes add, move, change or remove a job's live
# item).
INDEX_PUT = write_units(LIVE_JOB_ITEM_BYTES)  # the job becomes live: its index item is put
INDEX_MOVE = 2 * write_units(LIVE_JOB_ITEM_BYTES)  # live_due_ms changes (a retry's new due time)
# Only projected attributes change (status, lease, updated_ms): a claim, a take-over, a lease renewal.
INDEX_UPDATE = write_units(LIVE_JOB_ITEM_BYTES)
INDEX_DELETE = write_units(LIVE_JOB_ITEM_BYTES)  # the job ends: its live attributes are removed


class DynamoMeter:
    """Requests by operation and capacity units, summed over every metered store; thread-safe.

    A call only appends a record to a deque (atomic, no lock: the meter's cost must not land in the
    engine's worker CPU, measured between two readings of the totals); the totals are added up when read.
    A request whose units depend on an item's size is priced then too (`record_later`): sizing an item
    means serialising it as the adapter would, about a quarter of a millisecond per delivered job.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (operation or None, units() or None, wru, rru, index wru), appended by the calls, added up on reads
        self._records: deque[tuple[str | None, Callable[[], tuple[float, float]] | None, float, float, float]]
        self._records = deque()
        self._requests: Counter[str] = Counter()
        self._wru = 0.0
        self._rru = 0.0
        self._index_wru = 0.0
        self._unpriced: list[Callable[[], tuple[float, float]]] = []

    def record(self, operation: str, wru: float = 0.0, rru: float = 0.0) -> None:
        """Counts one request and the units it consumed on the tables."""
        self._records.append((operation, None, wru, rru, 0.0))

    def record_later(self, operation: str, units: Callable[[], tuple[float, float]]) -> None:
        """Counts one request; units() gives its (WRU, RRU) when the totals are next read."""
        self._records.append((operation, units, 0.0, 0.0, 0.0))

    def index_write(self, wru: float) -> None:
        """Counts the live index's units of a table write that succeeded (a refused one changes no index)."""
        self._records.append((None, None, 0.0, 0.0, wru))

    def _add_up(self, price: bool) -> None:
        """Adds the records appended so far to the totals (and prices the deferred ones when price); call
        with the lock held."""
        while self._records:
            operation, units, wru, rru, index_wru = self._records.popleft()
            if operation is not None:
                self._requests[operation] += 1
            if units is not None:
                self._unpriced.append(units)
            self._wru += wru
            self._rru += rru
            self._index_wru += index_wru
        if price:
            unpriced, self._unpriced = self._unpriced, []
            for units in unpriced:
                wru, rru = units()
                self._wru += wru
                self._rru += rru

    @property
    def requests(self) -> Counter[str]:
        """Requests so far by operation (none priced by this)."""
        with self._lock:
            self._add_up(price=False)
            return Counter(self._requests)

    @property
    def wru(self) -> float:
        """Write units so far, every request priced."""
        with self._lock:
            self._add_up(price=True)
            return self._wru

    @property
    def rru(self) -> float:
        """Read units so far, every request priced."""
        with self._lock:
            self._add_up(price=True)
            return self._rru

    @property
    def index_wru(self) -> float:
        """The live index's write units so far."""
        with self._lock:
            self._add_up(price=False)
            return self._index_wru

    def snapshot(self) -> dict[str, float]:
        """Returns the totals so far: requests, WRU, RRU and each operation's requests."""
        with self._lock:
            self._add_up(price=True)
            return {
                "dynamodb_requests": float(sum(self._requests.values())),
                "dynamodb_wru": self._wru,
                "dynamodb_rru": self._rru,
                "dynamodb_index_wru": self._index_wru,
                **{f"dynamodb_{name}": float(count) for name, count in self._requests.items()},
            }


def job_bytes(job: Job) -> int:
    """Returns the size of the job's item as the adapter stores it."""
    return item_size(codec.job_to_item(job, tables.Keyspace()))


class MeteredJobStore:
    """JobStore and JobAdminStore over FakeJobStore; a refused write is still metered (DynamoDB bills it).

    A job's item is sized once (serialised as the adapter does), as created, and its later writes are
    priced at that size plus GROWTH_BYTES, plus attempt 1's record once a finish put it in the item
    (tables.FIRST_EXECUTION, sized as the adapter writes it). Sizes are taken when the meter's totals are
    read, not during the calls (see DynamoMeter). Units are whole KB, so the allowance only matters for
    jobs within 64 bytes of a KB boundary.
    """

    def __init__(self, inner: FakeJobStore, meter: DynamoMeter) -> None:
        self._inner = inner
        self._meter = meter
        self._created: dict[tuple[str, str], Job] = {}  # each job as created, sized when first priced
        self._sizes: dict[tuple[str, str], int] = {}
        self._firsts: dict[tuple[str, str], Execution] = {}  # attempt 1's record, once in the job item

    def _created_bytes(self, key: tuple[str, str]) -> int:
        size = self._sizes.get(key)
        if size is None:
            size = self._sizes[key] = job_bytes(self._created[key])
        return size

    def _sized(self, job: Job | None, first: Execution | None = None) -> Callable[[], int]:
        """Returns how to size job's item later (0 for no job): as it is now, or with first, attempt 1's
        record, written into it."""
        if job is None:
            return lambda: 0
        key = (job.tenant, job.job_id)
        first = first or self._firsts.get(key)
        record = (
            0 if first is None else len(tables.FIRST_EXECUTION) + value_size(codec.execution_to_map(first))
        )
        if key not in self._created:
            return lambda: job_bytes(job) + record
        return lambda: self._created_bytes(key) + GROWTH_BYTES + record

    def _size(self, job: Job) -> int:
        return self._sized(job)()

    def create(self, job: Job, request_hash: str, now_ms: int) -> tuple[Job, bool]:
        """PutItem of the job, or with an idempotency key a transaction with its marker."""
        key = (job.tenant, job.job_id)
        self._created[key] = job
        self._sizes.pop(key, None)
        try:
            stored, created = self._inner.create(job, request_hash, now_ms)
            if created:
                self._meter.index_write(INDEX_PUT)
            return stored, created
        finally:
            if job.idempotency_key is None:
                self._meter.record_later("PutItem", lambda: (write_units(self._created_bytes(key)), 0.0))
            else:
                self._meter.record_later(
                    "TransactWriteItems",
                    lambda: (
                        write_units(self._created_bytes(key), True) + write_units(MARKER_BYTES, True),
                        0.0,
                    ),
                )

    def get(self, tenant: str, job_id: str) -> Job:
        """GetItem, strongly consistent."""
        job: Job | None = None
        try:
            job = self._inner.get(tenant, job_id)
            return job
        finally:
            sized = self._sized(job)
            self._meter.record_later("GetItem", lambda: (0.0, read_units(sized())))

    def claim(self, member: Member, now_ms: int) -> Claim:
        """UpdateItem with ReturnValues ALL_OLD (no read is billed for the returned item); on the index,
        projected attributes change, not its key."""
        claim: Claim | None = None
        try:
            claim = self._inner.claim(member, now_ms)
            self._meter.index_write(INDEX_UPDATE)
            return claim
        finally:
            # The claim only adds to the item, so the item after it is the larger one.
            sized = self._sized(claim.job if claim else None)
            self._meter.record_later("UpdateItem", lambda: (write_units(sized()), 0.0))

    def finish(self, job: Job, finish: Finish, executions: list[Execution], now_ms: int) -> None:
        """Attempt 1's record goes into the job item: with no other record one UpdateItem, priced at the
        item after it (the larger); else TransactWriteItems of the job's update and the other records'
        puts, each item billed twice."""
        first, later = split_executions(executions)
        sized = self._sized(job, first)

        def units() -> tuple[float, float]:
            if not later:
                return float(write_units(sized())), 0.0
            wru = write_units(sized(), True)
            wru += sum(write_units(item_size(codec.execution_to_item(e)), True) for e in later)
            return wru, 0.0

        try:
            self._inner.finish(job, finish, executions, now_ms)
            if first is not None:
                self._firsts[(job.tenant, job.job_id)] = first
            self._meter.index_write(INDEX_MOVE if finish.status.is_live else INDEX_DELETE)
        finally:
            self._meter.record_later("TransactWriteItems" if later else "UpdateItem", units)

    def mark_dead(self, member: Member, reason: str, now_ms: int) -> None:
        """UpdateItem."""
        try:
            self._inner.mark_dead(member, reason, now_ms)
            self._meter.index_write(INDEX_DELETE)
        finally:
            self._meter.record("UpdateItem", wru=1)

    def renew_lease(self, job: Job, lease_expires_at_ms: int) -> None:
        """UpdateItem, conditional on the attempt still holding the job; on the index, the lease changes."""
        try:
            self._inner.renew_lease(job, lease_expires_at_ms)
            self._meter.index_write(INDEX_UPDATE)
        finally:
            sized = self._sized(job)
            self._meter.record_later("UpdateItem", lambda: (write_units(sized()), 0.0))

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
        """GetItem of the job item (attempt 1's record), then a Query of the executions table unless the
        job made no other attempt."""
        found = self._inner.executions(tenant, job_id)
        job = self._inner.tables.jobs.get((tenant, job_id))
        sized = self._sized(job)
        self._meter.record_later("GetItem", lambda: (0.0, read_units(sized())))
        first = self._firsts.get((tenant, job_id))
        if first is None or job is None or job.attempt > tables.FIRST_ATTEMPT:
            size = sum(
                item_size(codec.execution_to_item(e))
                for e in found
                if first is None or e.attempt != tables.FIRST_ATTEMPT
            )
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
            cancelled = self._inner.cancel(tenant, job_id, now_ms)
            self._meter.index_write(INDEX_DELETE)
            return cancelled
        finally:
            self._meter.record("UpdateItem", wru=1)

    def replay(self, tenant: str, job_id: str, shard: int, now_ms: int) -> Job:
        """UpdateItem with ALL_NEW."""
        try:
            replayed = self._inner.replay(tenant, job_id, shard, now_ms)
            self._meter.index_write(INDEX_PUT)
            return replayed
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
