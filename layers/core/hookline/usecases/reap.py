"""Reaping: re-deliver what crashed executors left, dead-letter poison entries, rebuild what Redis lost."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hookline.domain.errors import IndexUnavailable
from hookline.ports import (
    Clock,
    DueIndex,
    JobStore,
    MetricsSink,
    NullStats,
    PromoterPresence,
    ReadyStream,
    StatsRecorder,
)
from hookline.usecases.backstop import PromotionBackstop
from hookline.usecases.cron import ScheduleReconciler
from hookline.usecases.idle import IdleWatch
from hookline.usecases.outage import Outage
from hookline.usecases.queues import QueueManager
from hookline.usecases.reconcile import JobReconciler
from hookline.usecases.recover import MAX_BATCHES_PER_PASS, SCAN_START, Recovered, Recoverer

logger = logging.getLogger(__name__)

# A consumer idle this long with nothing pending belongs to an executor process that is gone.
CONSUMER_IDLE_MS = 3_600_000
# Between passes, how often watch() asks whether Redis lost its state.
WATCH_INTERVAL_MS = 1_000
# After a step's DynamoDB call failed (throttled, timed out, unreachable), how long before it is tried again.
STORE_RETRY_MS = 500


@dataclass
class _ShardWork:
    """How far one run got with one shard; a shard worked again in the same run goes on from here."""

    redeliver_cursor: str | None = SCAN_START  # None: every pending entry was looked at
    tidied: bool = False  # the dead stream trimmed, idle consumers pruned, the depth gauged


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
        idle: IdleWatch | None = None,
        presence: PromoterPresence | None = None,
        readd_grace_ms: int = 0,
        queues: QueueManager | None = None,
    ) -> None:
        self._store = store
        # Heals the named queues from their records: a resume lost between DynamoDB and Redis.
        self._queues = queues
        # Idle mode: the watch ends early while Redis holds nothing due within the horizon and no stream
        # entry, nothing rebuilt or repaired, for the grace (a noted job wakes a reaper: usecases/idle.py).
        self._idle = idle
        self._presence = presence
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
            store,
            stream,
            clock,
            shards,
            metrics,
            redeliver_after_ms,
            max_deliveries,
            self._stats,
            readd_grace_ms=readd_grace_ms,
        )
        self._backstop = PromotionBackstop(due, clock, shards, metrics)
        self._sleep = sleep
        self._start = 0  # where the next run starts (runs rotate through the shards)

    def run(self, deadline_ms: int) -> ReapReport:
        """Re-delivers, tidies and reconciles every shard, each in its own share of the time to deadline_ms.

        Shards are worked in rounds (_share): in a round each shard not yet done gets the time left
        divided by the shards left in the round, so a shard with a huge backlog to re-deliver or
        reconcile takes at most its share before the others get theirs, and what a quick shard leaves
        goes to those after it. Shards cut short are worked again in the next round, with what the round
        before left over, going on where they stopped (the re-delivery scan from its cursor, the
        reconcile scan from the cursor it keeps in Redis). Each run starts one shard further on, so the
        same shard is not always the last. A Redis blip does not end the run: the shard at hand is tried
        again after a back-off (100 ms doubling to 500 ms) within its share; every step is idempotent, so a
        repeat is harmless.
        """
        report = ReapReport()
        recovered = Recovered()
        outage = Outage(self._clock, self._metrics, "reap")
        work = {shard: _ShardWork() for shard in self._shards}

        def reap(shard: int, until_ms: int) -> bool:
            return self._reap_shard(shard, until_ms, work[shard], report, recovered)

        try:
            self._share(self._next_order(), deadline_ms, outage, report, reap)
        finally:
            report.redelivered += recovered.redelivered
            report.dead_lettered += recovered.dead_lettered
            report.malformed += recovered.malformed
        self._metrics.count("Redelivered", report.redelivered)
        self._metrics.count("Reindexed", report.reindexed)
        return report

    def watch(self, deadline_ms: int, interval_ms: int = WATCH_INTERVAL_MS) -> ReapReport:
        """Runs one pass, then until deadline_ms rebuilds at once any shard whose Redis lost its state.

        One check a second (a read of each shard's rebuild marks), so after a flush or a fail-over to an
        empty Redis the jobs that were in flight are indexed again within about a second, not at the next
        scheduled run. The same check indexes the jobs writers noted while Redis failed them (one read of
        the notes, before the pass too), so a job accepted during an outage is indexed about a second
        after Redis answers again. Shards that lost their state together share the time as in run().
        Each check also re-delivers the entries that turned idle since (a bounded pass, as an executor's)
        and promotes what no promoter moved in time (usecases/backstop.py): a stopped executor's work and a
        dead promoter's due jobs wait seconds, not for the next run, even with no other executor reading.
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

        def rebuild(shard: int, until_ms: int) -> bool:
            self._stream.ensure_group(shard)
            return self._reconcile_shard(shard, until_ms, report)

        while self._clock.now_ms() < deadline_ms:
            self._sleep(max(0, min(interval_ms, deadline_ms - self._clock.now_ms())) / 1000)
            try:
                lost = [shard for shard in self._shards if self._jobs.lost_state(shard)]
            except IndexUnavailable as error:
                self._sleep(outage.failed(error, deadline_ms))
                continue
            outage.succeeded()
            self._share(lost, deadline_ms, outage, report, rebuild)
            try:
                self._recover_between_checks(report, deadline_ms)
            except IndexUnavailable as error:
                self._sleep(outage.failed(error, deadline_ms))
            except Exception:
                # Dead-lettering an exhausted entry failed (DynamoDB throttled or away): the entry stays
                # pending and the next check tries again; the watch itself must go on.
                logger.exception("re-delivery between checks failed; the next check tries again")
                self._metrics.count("RecoveryErrors")
            repaired = report.reindexed
            try:
                self._repair_unindexed(deadline_ms, report)
            except IndexUnavailable as error:
                self._sleep(outage.failed(error, deadline_ms))
                continue
            if self._ends_idle(busy=bool(lost) or report.reindexed > repaired):
                break
        self._metrics.count("Reindexed", report.reindexed - counted)
        return report

    def _ends_idle(self, busy: bool) -> bool:
        """Tells whether the watch ends early (idle mode): Redis answered, nothing was rebuilt or repaired at
        this check, and for the grace the streams held nothing and nothing fell due within the horizon.

        Ending loses nothing a later watch would not do in time: every reaper tick runs a pass, a member due
        past the horizon is due after the next tick, and a job noted while Redis fails starts a reaper.
        """
        if self._idle is None or self._presence is None or not self._idle.policy.enabled:
            return False
        if busy:
            self._idle.busy()
            return False
        try:
            if not self._idle.should_exit(self._presence.earliest_due(self._shards)):
                return False
        except IndexUnavailable:
            return False
        self._metrics.count("ReaperIdleExits", 1)
        return True

    def _recover_between_checks(self, report: ReapReport, deadline_ms: int) -> None:
        """Re-delivers newly idle entries (bounded batches per shard) and promotes overdue members.

        No shard's pass starts at or past deadline_ms: dead-lettering an exhausted entry writes to DynamoDB,
        and the caller's deadline leaves room for one such call only.
        """
        done = Recovered()
        for shard in self._shards:
            if self._clock.now_ms() >= deadline_ms:
                break
            self._recoverer.recover_shard(shard, done, MAX_BATCHES_PER_PASS)
        report.redelivered += done.redelivered
        report.dead_lettered += done.dead_lettered
        report.malformed += done.malformed
        if done.redelivered:
            self._metrics.count("Redelivered", done.redelivered)
        self._backstop.promote_overdue()

    def _repair_unindexed(self, deadline_ms: int, report: ReapReport) -> None:
        """Indexes the jobs noted while Redis failed their writers; a DynamoDB error waits a check."""
        if self._clock.now_ms() >= deadline_ms:
            return  # its first call reads DynamoDB: none starts past the deadline
        try:
            report.reindexed += self._jobs.repair_unindexed(self._shards, deadline_ms)
        except IndexUnavailable:
            raise
        except Exception:
            # Reading or clearing the note failed (DynamoDB throttled or away): the note stays, the next
            # check (a second later) reads it again, and the due scan still covers the jobs meanwhile.
            logger.exception("reading the unindexed jobs' notes failed")
            self._metrics.count("UnindexedReadFailed")

    def _next_order(self) -> list[int]:
        """Returns the shards in this run's order: each run starts one shard further on."""
        start = self._start % len(self._shards) if self._shards else 0
        self._start = start + 1
        return self._shards[start:] + self._shards[:start]

    def _share(
        self,
        shards: Sequence[int],
        deadline_ms: int,
        outage: Outage,
        report: ReapReport,
        step: Callable[[int, int], bool],
    ) -> None:
        """Runs step(shard, until_ms) on each shard until it says done, each in its share of the time left.

        In each round, a shard's share ends at now + (deadline_ms - now) / (shards left in the round), so
        every shard gets at least an even share of the time the round began with (a step overruns its end
        by at most one request); a shard the step left unfinished goes to the next round. A step that
        returns unfinished has spent its share (it stops only at its end), so every round takes time and
        the loop ends at deadline_ms.
        """
        pending = list(shards)
        while pending and self._clock.now_ms() < deadline_ms:
            unfinished: list[int] = []
            for position, shard in enumerate(pending):
                now_ms = self._clock.now_ms()
                if now_ms >= deadline_ms:
                    unfinished.extend(pending[position:])
                    break
                until_ms = min(
                    deadline_ms, now_ms + max(1, (deadline_ms - now_ms) // (len(pending) - position))
                )
                if not self._visit(shard, until_ms, outage, report, step):
                    unfinished.append(shard)
            pending = unfinished

    def _visit(
        self, shard: int, until_ms: int, outage: Outage, report: ReapReport, step: Callable[[int, int], bool]
    ) -> bool:
        """Runs step on a shard until it is done or until_ms, backing off from Redis blips and DynamoDB
        failures; True when done.

        A DynamoDB failure (throttled, timed out, unreachable) does not end the run either: the step is
        tried again from where it stood after STORE_RETRY_MS, within the shard's share, as after a Redis
        blip. Each call is bounded by the store client's timeouts, which the caller's deadline leaves room
        for (functions/reap/app.py reserves one call's worst case), so no step outlasts the invocation.
        """
        while True:
            try:
                done = step(shard, until_ms)
            except IndexUnavailable as error:
                report.reconcile_complete[shard] = False
                self._sleep(outage.failed(error, until_ms))
                if self._clock.now_ms() >= until_ms:
                    return False
                continue
            except Exception as error:
                report.reconcile_complete[shard] = False
                logger.warning(
                    "a reaper step failed; trying it again", extra={"shard": shard, "error": repr(error)}
                )
                self._metrics.count("ReapStepFailed")
                self._sleep(max(0, min(STORE_RETRY_MS, until_ms - self._clock.now_ms())) / 1000)
                if self._clock.now_ms() >= until_ms:
                    return False
                continue
            outage.succeeded()
            return done

    def _reap_shard(
        self, shard: int, until_ms: int, work: _ShardWork, report: ReapReport, recovered: Recovered
    ) -> bool:
        """Works one shard until done or until_ms, going on from `work`; True when every step is done.

        If a step fails halfway, `work` still says where the shard stood before it: the step is done again
        (re-delivery from its last cursor, reconcile from the cursor it saved in Redis), which is harmless.
        """
        self._stream.ensure_group(shard)
        if work.redeliver_cursor is not None:
            work.redeliver_cursor = self._recoverer.recover_shard(
                shard, recovered, cursor=work.redeliver_cursor, deadline_ms=until_ms
            )
            if work.redeliver_cursor is not None:
                return False
        if not work.tidied:
            self._stream.trim_dead(shard)
            self._stream.prune_consumers(shard, CONSUMER_IDLE_MS)
            due, inflight = self._due.depth(shard)
            self._metrics.gauge("QueueDepth", due + inflight)
            if self._queues is not None:
                self._queues.heal(shard)
            work.tidied = True
        return self._reconcile_shard(shard, until_ms, report)

    def _reconcile_shard(self, shard: int, deadline_ms: int, report: ReapReport) -> bool:
        """Indexes again the shard's live jobs and schedules that Redis lost; True when both scans ended."""
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
        return complete
