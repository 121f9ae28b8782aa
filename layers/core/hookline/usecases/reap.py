"""Reaping: re-deliver what crashed executors left, dead-letter poison entries, rebuild what Redis lost."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hookline.domain.delivery import StreamEntry
from hookline.domain.errors import IndexUnavailable, StaleState
from hookline.domain.models import Job, JobStatus
from hookline.ports import Clock, DueIndex, JobStore, MetricsSink, ReadyStream
from hookline.usecases.cron import ScheduleReconciler
from hookline.usecases.outage import Outage

logger = logging.getLogger(__name__)

RECONCILE_PAGE = 100
# A consumer idle this long with nothing pending belongs to an executor process that is gone.
CONSUMER_IDLE_MS = 3_600_000


@dataclass
class ReapReport:
    """What one reaper run did."""

    redelivered: int = 0
    dead_lettered: int = 0
    malformed: int = 0  # entries holding no readable delivery, dead-lettered in Redis
    reindexed: int = 0
    live_seen: int = 0
    schedules_seen: int = 0
    schedules_restored: int = 0
    reconcile_complete: dict[int, bool] = field(default_factory=dict)


class Reaper:
    """Recovers deliveries and indexes; safe beside any other component (every step is idempotent)."""

    def __init__(
        self,
        store: JobStore,
        stream: ReadyStream,
        due: DueIndex,
        clock: Clock,
        shards: Sequence[int],
        metrics: MetricsSink,
        redeliver_after_ms: int,
        max_deliveries: int,
        schedules: ScheduleReconciler | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._store = store
        self._stream = stream
        self._due = due
        self._clock = clock
        self._shards = list(shards)
        self._metrics = metrics
        self._redeliver_after_ms = redeliver_after_ms
        self._max_deliveries = max_deliveries
        self._schedules = schedules
        self._sleep = sleep

    def run(self, deadline_ms: int) -> ReapReport:
        """Re-delivers, reconciles and trims every shard, stopping early at deadline_ms.

        A Redis blip does not end the run: the shard at hand is tried again after a back-off (100 ms
        doubling to 1 s) until the deadline; every step is idempotent, so a repeat is harmless.
        """
        report = ReapReport()
        outage = Outage(self._clock, self._metrics, "reap")
        pending = list(self._shards)
        while pending and self._clock.now_ms() < deadline_ms:
            try:
                self._reap_shard(pending[0], deadline_ms, report)
            except IndexUnavailable as error:
                report.reconcile_complete[pending[0]] = False
                self._sleep(outage.failed(error, deadline_ms))
                continue
            outage.succeeded()
            pending.pop(0)
        self._metrics.count("Redelivered", report.redelivered)
        self._metrics.count("Reindexed", report.reindexed)
        return report

    def _reap_shard(self, shard: int, deadline_ms: int, report: ReapReport) -> None:
        self._stream.ensure_group(shard)
        self.redeliver(shard, report)
        report.reconcile_complete[shard] = self.reconcile(shard, deadline_ms, report)
        if self._schedules is not None:
            seen, restored, complete = self._schedules.reconcile(shard, deadline_ms)
            report.schedules_seen += seen
            report.schedules_restored += restored
            report.reconcile_complete[shard] = report.reconcile_complete[shard] and complete
        self._stream.trim_dead(shard)
        self._stream.prune_consumers(shard, CONSUMER_IDLE_MS)
        due, inflight = self._due.depth(shard)
        self._metrics.gauge("QueueDepth", due + inflight)

    def redeliver(self, shard: int, report: ReapReport) -> None:
        """Re-adds entries whose consumer held them past the lease; dead-letters those out of deliveries."""
        cursor = "0-0"
        while True:
            result = self._stream.redeliver(
                shard, self._redeliver_after_ms, self._clock.now_ms(), self._max_deliveries, cursor
            )
            report.redelivered += result.redelivered
            report.malformed += result.malformed
            for entry in result.exhausted:
                self._dead_letter(entry, report)
            if result.scan_finished:
                return
            cursor = result.next_cursor

    def _dead_letter(self, entry: StreamEntry, report: ReapReport) -> None:
        now_ms = self._clock.now_ms()
        try:
            self._store.mark_dead(entry.member, "deliveries_exhausted", now_ms)
        except StaleState:
            # The job moved on (finished, retried, cancelled), or an attempt still holds its lease and will
            # record its own outcome: nothing to kill. If that attempt dies, its lease expires and the
            # reconciliation finds the job missing from Redis and indexes it again.
            self._stream.ack(entry)
            return
        self._stream.dead_letter(entry, "deliveries_exhausted", now_ms)
        report.dead_lettered += 1
        self._metrics.count("DeadLettered")

    def reconcile(self, shard: int, deadline_ms: int, report: ReapReport) -> bool:
        """Indexes again every live job DynamoDB holds that no Redis index holds; True when all were seen.

        A job being submitted, claimed or finished right now may look missing: indexing it again is harmless,
        since a delivery whose generation or status moved on is dropped at claim.
        """
        start_key = None
        while self._clock.now_ms() < deadline_ms:
            jobs, start_key = self._store.live_jobs(shard, start_key, RECONCILE_PAGE)
            report.live_seen += len(jobs)
            if jobs:
                held = self._due.indexed_members(shard, [job.member() for job in jobs])
                for job, is_held in zip(jobs, held, strict=True):
                    if not is_held:
                        self._reindex(job)
                        report.reindexed += 1
            if start_key is None:
                return True
        return False

    def _reindex(self, job: Job) -> None:
        now_ms = self._clock.now_ms()
        due_ms = job.due_ms
        if job.status is JobStatus.RUNNING and job.lease_expires_at_ms is not None:
            # The attempt may still be running: offer the job again only once its lease has expired.
            due_ms = job.lease_expires_at_ms + 1
        logger.warning(
            "re-indexing a live job Redis lost",
            extra={"job_id": job.job_id, "tenant": job.tenant, "status": job.status.value},
        )
        self._due.index(job.member(), job.shard, due_ms, now_ms)
