"""Submitting a job: validate, store durably in DynamoDB, then index in Redis."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from hookline.domain.ids import new_id
from hookline.domain.models import FlowControl, Job, JobRequest, JobStatus
from hookline.domain.sharding import shard_of
from hookline.domain.stats import Outcome
from hookline.ports import (
    Clock,
    DueIndex,
    JobStore,
    MetricsSink,
    NullStats,
    QueueStore,
    StatsRecorder,
    UnindexedLog,
    UrlChecker,
)
from hookline.usecases.circuit import Circuit
from hookline.usecases.indexing import index_many_or_note, index_or_note
from hookline.usecases.stats_buffer import StatsBuffer

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SubmitResult:
    """The stored job, and whether this call created it (False: an idempotent repeat)."""

    job: Job
    created: bool


def request_hash(request: JobRequest) -> str:
    """Returns a digest of everything in the request, so a reused idempotency key can be told apart."""
    return hashlib.sha256(request.model_dump_json().encode()).hexdigest()


def flow_of(request: JobRequest) -> FlowControl:
    """Returns the limiter settings the request asks for."""
    rate, concurrency = request.rate_limit, request.max_concurrency
    return FlowControl(
        rate_key=rate.key if rate else None,
        rate_limit=rate.limit if rate else 0,
        rate_period_ms=int(rate.period_s * 1000) if rate else 0,
        concurrency_key=concurrency.key if concurrency else None,
        concurrency_limit=concurrency.limit if concurrency else 0,
        queue=request.queue,
    )


def _headers(request: JobRequest) -> dict[str, str]:
    headers = dict(request.headers)
    if request.body is not None and not any(name.lower() == "content-type" for name in headers):
        is_text = isinstance(request.body, str)
        headers["Content-Type"] = "text/plain; charset=utf-8" if is_text else "application/json"
    return headers


class JobSubmitter:
    """Accepts jobs: DynamoDB first (the record), Redis second (the index the reaper can rebuild)."""

    def __init__(
        self,
        store: JobStore,
        index: DueIndex,
        clock: Clock,
        check_url: UrlChecker,
        shards: int,
        metrics: MetricsSink,
        stats: StatsRecorder | None = None,
        unindexed: UnindexedLog | None = None,
        circuit: Circuit | None = None,
        queues: QueueStore | None = None,
    ) -> None:
        self._store = store
        self._queues = queues
        self._index = index
        self._unindexed = unindexed
        self._circuit = circuit
        self._clock = clock
        self._check_url = check_url
        self._shards = shards
        self._metrics = metrics
        self._stats: StatsRecorder = stats or NullStats()

    def build(self, tenant: str, request: JobRequest, now_ms: int) -> Job:
        """Returns the job a request describes, not yet stored."""
        job_id = new_id(now_ms)
        return Job(
            tenant=tenant,
            job_id=job_id,
            status=JobStatus.SCHEDULED,
            generation=1,
            attempt=0,
            max_attempts=request.max_attempts,
            url=request.url,
            method=request.method,
            headers=_headers(request),
            body=request.encoded_body(),
            due_ms=request.due_ms(now_ms),
            created_ms=now_ms,
            updated_ms=now_ms,
            min_backoff_ms=int(request.min_backoff_s * 1000),
            max_backoff_ms=int(request.max_backoff_s * 1000),
            timeout_ms=int(request.timeout_s * 1000),
            shard=shard_of(job_id, self._shards),
            idempotency_key=request.idempotency_key,
            flow=flow_of(request),
        )

    def with_queue_defaults(self, tenant: str, request: JobRequest) -> JobRequest:
        """Returns the request with its queue's retry and timeout defaults where the client gave none.

        Raises:
            QueueNotFound: the request names a queue the tenant does not have (nothing is stored).
        """
        if request.queue is None or self._queues is None:
            return request
        return self._queues.get(tenant, request.queue).apply_defaults(request)

    def submit(self, tenant: str, request: JobRequest) -> SubmitResult:
        """Stores and indexes a job; raises UnsafeUrl, IdempotencyConflict, QueueNotFound."""
        return self._submit(tenant, request, self._stats)

    @contextmanager
    def batch(self) -> Iterator[SubmitBatch]:
        """Yields a submitter for the jobs of one request, which indexes them in Redis together and writes
        their `submitted` statistic once, at the end of the block: a round trip or two for the batch
        instead of two per job.

        Each job is stored in DynamoDB before its submit returns, as on its own; its indexing waits for the
        next of: INDEX_BATCH jobs waiting, the first waiting INDEX_WAIT_MS, the block's end (SubmitBatch).
        The block's end comes before the request answers, so a caller that sees a job accepted sees it
        indexed (or noted for the reaper), as with one submit.

        What this changes if the process dies inside the block: jobs stored but not yet indexed are not
        lost: DynamoDB holds them, SCHEDULED, and the reaper's due scan indexes them once due, as it does a
        single submit that died between its two writes (a wider window here, at most INDEX_WAIT_MS and a
        store call). The counts of the jobs submitted so far are lost; statistics are a view, best effort
        already (usecases/stats_buffer.py). Indexing and counts are written even when the block raises,
        and writing them never raises.
        """
        tally = StatsBuffer(self._stats)
        batch = SubmitBatch(self, tally, self._clock)
        try:
            yield batch
        finally:
            batch.flush()
            tally.flush()

    def _submit(
        self,
        tenant: str,
        request: JobRequest,
        stats: StatsRecorder,
        index: Callable[[Job, int], None] | None = None,
    ) -> SubmitResult:
        """Stores a job and indexes it (through index when given), counting it in stats."""
        self._check_url(request.url)
        now_ms = self._clock.now_ms()
        # Only an idempotent request needs its digest (to tell a reused key from a repeat); hashing every
        # request would encode its body once more on the hot path.
        digest = request_hash(request) if request.idempotency_key is not None else ""
        request = self.with_queue_defaults(tenant, request)
        job, created = self._store.create(self.build(tenant, request, now_ms), digest, now_ms)
        if created:
            (index or self.index)(job, now_ms)
            self._metrics.count("Submitted")
            stats.record(tenant, Outcome.SUBMITTED, now_ms)
        return SubmitResult(job, created)

    def index(self, job: Job, now_ms: int) -> None:
        """Indexes a job this caller has just created in DynamoDB (a submit, a cron instance) in Redis; if
        Redis fails, notes it for the reaper (DynamoDB holds it).

        The job was created by this call (a repeat of an idempotent submit, or an instance another fire
        created, is not indexed again), so nothing has indexed its member yet: new_member.
        """
        index_or_note(
            self._index, self._unindexed, self._metrics, job, now_ms, new_member=True, circuit=self._circuit
        )

    def accept_instance(self, job: Job, now_ms: int) -> None:
        """Indexes a schedule's occurrence this caller has just created (see index()) and counts it as
        submitted, as a job the API accepted is: every job that can succeed was counted submitted once."""
        self.index(job, now_ms)
        self._metrics.count("Submitted")
        self._stats.record(job.tenant, Outcome.SUBMITTED, now_ms)

    def index_all(self, jobs: Sequence[Job]) -> None:
        """Indexes jobs this caller has just created, together (see index()); never raises."""
        now_ms = self._clock.now_ms()
        index_many_or_note(
            self._index, self._unindexed, self._metrics, jobs, now_ms, new_member=True, circuit=self._circuit
        )


# A batch indexes its stored jobs together once this many wait, or the first has waited this long (the
# API's largest batch is 100 jobs; a DynamoDB write takes some milliseconds, so in AWS a batch indexes
# every few jobs and a job due now waits at most this long more before the promoter can see it).
INDEX_BATCH = 100
INDEX_WAIT_MS = 50


class SubmitBatch:
    """Submits the jobs of one request through a JobSubmitter, indexing them and counting them together
    (see JobSubmitter.batch()). Not thread-safe: one request's items, one after the other."""

    def __init__(self, submitter: JobSubmitter, tally: StatsBuffer, clock: Clock) -> None:
        self._submitter = submitter
        self._tally = tally
        self._clock = clock
        self._waiting: list[Job] = []
        self._first_waiting_ms = 0

    def submit(self, tenant: str, request: JobRequest) -> SubmitResult:
        """Stores a job as JobSubmitter.submit does; its indexing and statistic wait (see batch())."""
        return self._submitter._submit(tenant, request, self._tally, self._defer_index)

    def flush(self) -> None:
        """Indexes every stored job still waiting; never raises."""
        waiting, self._waiting = self._waiting, []
        self._submitter.index_all(waiting)

    def _defer_index(self, job: Job, now_ms: int) -> None:
        if not self._waiting:
            self._first_waiting_ms = now_ms
        self._waiting.append(job)
        if (
            len(self._waiting) >= INDEX_BATCH
            or self._clock.now_ms() - self._first_waiting_ms >= INDEX_WAIT_MS
        ):
            self.flush()
