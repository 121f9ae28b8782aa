"""Administering a tenant's jobs: read, list, cancel, replay one dead job, replay dead letters in batches."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from hookline.domain.errors import Conflict, HooklineError, IndexUnavailable, NotWaiting, StaleState
from hookline.domain.models import Execution, Job, JobStatus
from hookline.domain.stats import Outcome
from hookline.ports import (
    Clock,
    DueIndex,
    JobAdminStore,
    MetricsSink,
    NullStats,
    StatsRecorder,
    UnindexedLog,
)
from hookline.usecases.circuit import Circuit
from hookline.usecases.indexing import index_or_note

logger = logging.getLogger(__name__)

# One replay request changes at most this many jobs; a caller loops while `more` is true.
MAX_REPLAY_BATCH = 100


@dataclass(frozen=True)
class JobPage:
    """One page of a listing, and the job id to continue after (None on the last page)."""

    jobs: list[Job]
    after_job_id: str | None


@dataclass(frozen=True)
class ReplayFailure:
    """A job a bulk replay could not replay, and why."""

    job_id: str
    error: HooklineError


@dataclass(frozen=True)
class BulkReplay:
    """What a bulk replay did; `more` tells that dead jobs beyond the batch may remain."""

    replayed: list[Job] = field(default_factory=list)
    failed: list[ReplayFailure] = field(default_factory=list)
    more: bool = False


class JobManager:
    """Reads and changes a tenant's jobs: DynamoDB decides, Redis follows (and is rebuilt if it cannot)."""

    def __init__(
        self,
        store: JobAdminStore,
        index: DueIndex,
        clock: Clock,
        metrics: MetricsSink,
        replay_batch: int = MAX_REPLAY_BATCH,
        stats: StatsRecorder | None = None,
        unindexed: UnindexedLog | None = None,
        circuit: Circuit | None = None,
    ) -> None:
        self._store = store
        self._index = index
        self._unindexed = unindexed
        self._circuit = circuit
        self._clock = clock
        self._metrics = metrics
        self._replay_batch = replay_batch
        self._stats: StatsRecorder = stats or NullStats()

    def get(self, tenant: str, job_id: str) -> Job:
        """Returns one of the tenant's jobs; raises NotFound (also for another tenant's id)."""
        return self._store.get(tenant, job_id)

    def executions(self, tenant: str, job_id: str) -> list[Execution]:
        """Returns every attempt of one of the tenant's jobs, oldest first; NotFound for an unknown job.

        The job is read first: executions are keyed by job, so an unknown or foreign id must answer
        NotFound rather than an empty list.
        """
        self._store.get(tenant, job_id)
        return self._store.executions(tenant, job_id)

    def list_jobs(
        self, tenant: str, status: JobStatus | None, after_job_id: str | None, limit: int
    ) -> JobPage:
        """Returns one page of the tenant's jobs, newest first."""
        jobs, after = self._store.list_jobs(tenant, status, after_job_id, limit)
        return JobPage(jobs, after)

    def cancel(self, tenant: str, job_id: str) -> Job:
        """Cancels a job that has not started; raises NotFound, or Conflict when it is past that point."""
        now_ms = self._clock.now_ms()
        try:
            cancelled = self._store.cancel(tenant, job_id, now_ms)
        except StaleState as error:
            raise Conflict(str(error)) from error
        # Unindexing is a courtesy: the promoter still moves the member, and the executor's claim drops it
        # as stale. So it is skipped while Redis is known down.
        if self._circuit is None or self._circuit.allows():
            try:
                self._index.unindex(cancelled.member(), cancelled.shard)
            except Exception as error:
                if self._circuit is not None and isinstance(error, IndexUnavailable):
                    self._circuit.failed()
                logger.exception("could not unindex a cancelled job", extra={"job_id": job_id})
            else:
                if self._circuit is not None:
                    self._circuit.succeeded()
        self._metrics.count("Cancelled")
        self._stats.record(tenant, Outcome.CANCELLED, now_ms)
        return cancelled

    def replay(self, tenant: str, job_id: str) -> Job:
        """Schedules a dead job again, due now; raises NotFound, or Conflict when it is not dead."""
        # The shard is fixed at creation, so reading it before the conditional write cannot race.
        shard = self._store.get(tenant, job_id).shard
        now_ms = self._clock.now_ms()
        try:
            job = self._store.replay(tenant, job_id, shard, now_ms)
        except StaleState as error:
            raise Conflict(str(error)) from error
        # DynamoDB holds the job as live: if Redis fails, the reaper indexes it once Redis answers.
        index_or_note(self._index, self._unindexed, self._metrics, job, now_ms, circuit=self._circuit)
        self._metrics.count("Replayed")
        self._stats.record(tenant, Outcome.REPLAYED, now_ms, job_id)
        return job

    def run_now(self, tenant: str, job_id: str) -> Job:
        """Makes a waiting job due now, its attempts unchanged; raises NotFound, NotWaiting when it does not
        wait (also when it started between this call's read and its write), or StaleState when it still waits
        but in a later generation than the one read (call again).

        The store's write is fenced on the generation read here and moves the job to the next one, so its
        earlier entry (still due, or already queued) is stale: the promoter may still move it and an executor
        read it, but its claim fails and it is dropped, so the job is delivered once, by the entry indexed
        here.
        """
        found = self._store.get(tenant, job_id)
        if found.status is not JobStatus.SCHEDULED:
            raise NotWaiting(f"job {job_id} is {found.status.value}; only a scheduled job can be run now")
        now_ms = self._clock.now_ms()
        try:
            job = self._store.run_now(tenant, job_id, found.generation, found.shard, now_ms)
        except StaleState as error:
            # Changed since the read: claimed (or ended) meanwhile is "not waiting"; still waiting, in a later
            # generation (another run-now, a retry recorded), is the race itself: the caller may call again.
            if self._store.get(tenant, job_id).status is not JobStatus.SCHEDULED:
                raise NotWaiting(f"job {job_id} started or ended meanwhile; it no longer waits") from error
            raise
        # DynamoDB holds the job as due now: if Redis fails, the reaper indexes it once Redis answers.
        index_or_note(self._index, self._unindexed, self._metrics, job, now_ms, circuit=self._circuit)
        self._metrics.count("RunNow")
        return job

    def replay_dead(self, tenant: str, job_ids: list[str] | None) -> BulkReplay:
        """Replays the given jobs, or (job_ids None) one batch of dead jobs, newest first."""
        more = False
        if job_ids is None:
            page = self.list_jobs(tenant, JobStatus.DEAD, None, self._replay_batch)
            job_ids, more = [job.job_id for job in page.jobs], page.after_job_id is not None
        replayed: list[Job] = []
        failed: list[ReplayFailure] = []
        for job_id in dict.fromkeys(job_ids[: self._replay_batch]):
            try:
                replayed.append(self.replay(tenant, job_id))
            except HooklineError as error:
                failed.append(ReplayFailure(job_id, error))
        return BulkReplay(replayed, failed, more)
