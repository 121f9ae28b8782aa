"""Reaping: re-deliver what crashed executors left, dead-letter poison entries, rebuild what Redis lost."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hookline.domain.errors import IndexUnavailable
from hookline.ports import Clock, DueIndex, JobStore, MetricsSink, NullStats, ReadyStream, StatsRecorder
from hookline.usecases.cron import ScheduleReconciler
from hookline.usecases.outage import Outage
from hookline.usecases.reconcile import JobReconciler
from hookline.usecases.recover import Recovered, Recoverer

logger = logging.getLogger(__name__)

# A consumer idle this long with nothing pending belongs to an executor process that is gone.
CONSUMER_IDLE_MS = 3_600_000
# Between passes, how often watch() asks whether Redis lost its state.
WATCH_INTERVAL_MS = 1_000


@dataclass
class ReapReport:
    """What one reaper run did."""

    redelivered: int = 0
    dead_lettered: int = 0
    malformed: int = 0  # entries holding no readable delivery, dead-lettered in Redis
    reindexed: int = 0
    live_seen: int = 0
    rebuilt: list[int] = field(default_factory=list)  # shards whose every live job was read (Redis lost them)
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
        jobs: JobReconciler,
        schedules: ScheduleReconciler | None = None,
        stats: StatsRecorder | None = None,
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
        self._jobs = jobs
        self._schedules = schedules
        self._stats: StatsRecorder = stats or NullStats()
        self._recoverer = Recoverer(
            store, stream, clock, shards, metrics, redeliver_after_ms, max_deliveries, self._stats
        )
        self._sleep = sleep

    def run(self, deadline_ms: int) -> ReapReport:
        """Re-delivers, reconciles and trims every shard, stopping early at deadline_ms.

        A Redis blip does not end the run: the shard at hand is tried again after a back-off (100 ms
        doubling to 500 ms) until the deadline; every step is idempotent, so a repeat is harmless.
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

    def watch(self, deadline_ms: int, interval_ms: int = WATCH_INTERVAL_MS) -> ReapReport:
        """Runs one pass, then until deadline_ms rebuilds at once any shard whose Redis lost its state.

        One check a second (a read of each shard's rebuild marks), so after a flush or a fail-over to an
        empty Redis the jobs that were in flight are indexed again within about a second, not at the next
        scheduled run. The same check indexes the jobs writers noted while Redis failed them (one read of
        the notes, before the pass too), so a job accepted during an outage is indexed about a second
        after Redis answers again.
        """
        early = ReapReport()
        # Redis away: the pass below waits it out, and the loop after it repairs.
        with contextlib.suppress(IndexUnavailable):
            self._repair_unindexed(deadline_ms, early)
        self._metrics.count("Reindexed", early.reindexed)
        report = self.run(deadline_ms)
        report.reindexed += early.reindexed
        counted = report.reindexed
        outage = Outage(self._clock, self._metrics, "reap")
        while self._clock.now_ms() < deadline_ms:
            self._sleep(max(0, min(interval_ms, deadline_ms - self._clock.now_ms())) / 1000)
            try:
                for shard in self._shards:
                    if self._clock.now_ms() < deadline_ms and self._jobs.lost_state(shard):
                        self._stream.ensure_group(shard)
                        self._reconcile_shard(shard, deadline_ms, report)
                self._repair_unindexed(deadline_ms, report)
            except IndexUnavailable as error:
                self._sleep(outage.failed(error, deadline_ms))
                continue
            outage.succeeded()
        self._metrics.count("Reindexed", report.reindexed - counted)
        return report

    def _repair_unindexed(self, deadline_ms: int, report: ReapReport) -> None:
        """Indexes the jobs noted while Redis failed their writers; a DynamoDB error waits a check."""
        try:
            report.reindexed += self._jobs.repair_unindexed(self._shards, deadline_ms)
        except IndexUnavailable:
            raise
        except Exception:
            # Reading or clearing the note failed (DynamoDB throttled or away): the note stays, the next
            # check (a second later) reads it again, and the due scan still covers the jobs meanwhile.
            logger.exception("reading the unindexed jobs' notes failed")
            self._metrics.count("UnindexedReadFailed")

    def _reap_shard(self, shard: int, deadline_ms: int, report: ReapReport) -> None:
        self._stream.ensure_group(shard)
        self.redeliver(shard, report)
        self._reconcile_shard(shard, deadline_ms, report)
        self._stream.trim_dead(shard)
        self._stream.prune_consumers(shard, CONSUMER_IDLE_MS)
        due, inflight = self._due.depth(shard)
        self._metrics.gauge("QueueDepth", due + inflight)

    def redeliver(self, shard: int, report: ReapReport) -> None:
        """Re-adds every entry whose consumer is gone; dead-letters those out of deliveries."""
        done = Recovered()
        self._recoverer.recover_shard(shard, done)
        report.redelivered += done.redelivered
        report.dead_lettered += done.dead_lettered
        report.malformed += done.malformed

    def _reconcile_shard(self, shard: int, deadline_ms: int, report: ReapReport) -> None:
        """Indexes again the shard's live jobs and schedules that Redis lost."""
        result = self._jobs.reconcile(shard, deadline_ms)
        report.live_seen += result.seen
        report.reindexed += result.reindexed
        if result.full and result.complete:
            report.rebuilt.append(shard)
        complete = result.complete
        if self._schedules is not None:
            seen, restored, schedules_complete = self._schedules.reconcile(shard, deadline_ms)
            report.schedules_seen += seen
            report.schedules_restored += restored
            complete = complete and schedules_complete
        report.reconcile_complete[shard] = complete
