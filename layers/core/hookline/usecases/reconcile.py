"""Reconciliation: index again every live job DynamoDB holds that Redis lost, reading only what can be lost.

Two scans of a shard's `live` index (ordered by live_due_ms: a job's due time, which a running job keeps;
items an older version wrote hold a running job's lease expiry there):

- due: what can be overdue, live_due_ms <= now + DUE_HORIZON_MS, and of the running jobs only those whose
  lease can have ended by then (the store filters on the projected lease). Redis holds everything else until
  it falls due; a job lost from it then shows up here. This is every ordinary run: its cost follows the
  backlog and the jobs running (each read, and filtered, by every due scan), not the number of live jobs.
- full: everything, at once, when Redis lost its state: the shard's epoch (written when its consumer group is
  created) is missing or differs from the last complete rebuild's (RebuildMarks.lost).

A scan stops at the invocation's deadline and keeps its cursor in Redis; the next run goes on from there
and starts over only once it reached the end. So a backlog too large for one run cannot starve the jobs
near its end (near-due ones sort last, running ones at their due time): every job in the range is read within
ceil(range / one run's pages) runs, and the most overdue ones again as soon as a scan wraps around. A
shard's live jobs spread over one index partition per job bucket; every page reads each partition not yet
at its end (the store's cursor keeps each one's position), so the argument holds per partition: no
partition's tail waits for another's.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from hookline.domain import constants
from hookline.domain.models import JobStatus
from hookline.domain.reconcile import LiveJob
from hookline.ports import Clock, DueIndex, JobStore, RebuildMarkStore, UnindexedLog

logger = logging.getLogger(__name__)

RECONCILE_PAGE = 100
# A due scan also reads jobs due (or leases ending) this soon, so one lost just before it falls due, or
# behind a clock a little ahead of ours, is indexed on time.
DUE_HORIZON_MS = 5_000
DUE_SCAN = "due"
# No attempt holds a job longer than the longest callback plus the recording of its outcome: the heartbeat
# renews a short lease until then (docs/timing.md).
LONGEST_LEASE_MS = constants.LONGEST_ATTEMPT_MS


@dataclass
class ReconcileResult:
    """What reconciling one shard did."""

    seen: int = 0
    reindexed: int = 0
    complete: bool = False  # the scan reached the end of its range before the deadline
    full: bool = False  # Redis had lost its state: every live job was read


class JobReconciler:
    """Finds live jobs no Redis index holds and indexes them again (a reaper step; idempotent)."""

    def __init__(
        self,
        store: JobStore,
        due: DueIndex,
        marks: RebuildMarkStore,
        clock: Clock,
        longest_lease_ms: int = LONGEST_LEASE_MS,
        page: int = RECONCILE_PAGE,
        unindexed: UnindexedLog | None = None,
    ) -> None:
        self._store = store
        self._due = due
        self._marks = marks
        self._unindexed = unindexed
        self._clock = clock
        self._longest_lease_ms = longest_lease_ms
        self._page = page

    def lost_state(self, shard: int) -> bool:
        """Tells whether Redis lost the shard's state since its last complete rebuild."""
        return self._marks.marks(shard).lost

    def reconcile(self, shard: int, deadline_ms: int, full: bool = False) -> ReconcileResult:
        """Scans the shard's live jobs that can be missing from Redis until done or deadline_ms.

        Every live job when Redis lost the shard's state, or when full; otherwise only those that can be
        overdue. A job being submitted, claimed or finished right now may look missing: indexing it again is
        harmless, since a delivery whose generation or status moved on is dropped at claim.
        """
        marks = self._marks.marks(shard)
        epoch = marks.epoch if marks.epoch is not None else self._marks.start_epoch(shard)
        result = ReconcileResult(full=marks.lost or full)
        mode = f"full:{epoch}" if result.full else DUE_SCAN
        cursor = marks.cursor if marks.cursor_mode == mode else None
        if result.full:
            logger.warning("redis lost its state: rebuilding every live job", extra={"shard": shard})
        while self._clock.now_ms() < deadline_ms:
            now_ms = self._clock.now_ms()
            due_before_ms = None if result.full else now_ms + DUE_HORIZON_MS
            jobs, cursor = self._store.live_jobs(shard, cursor, self._page, due_before_ms)
            result.seen += len(jobs)
            result.reindexed += self._reindex_missing(shard, jobs, now_ms)
            if cursor is None:
                if result.full:
                    self._marks.finish_rebuild(shard, epoch)
                self._marks.save_cursor(shard, mode, None)
                result.complete = True
                return result
        self._marks.save_cursor(shard, mode, cursor)
        return result

    def repair_unindexed(self, shards: Sequence[int], deadline_ms: int) -> int:
        """Indexes the jobs writers noted when Redis failed them (UnindexedLog); returns how many it indexed.

        The reaper calls this every second, so a job accepted while Redis was down is indexed about a second
        after Redis answers again, not at the next due scan. A note is deleted only once every job in it is
        indexed, and only if no job was noted since it was read (its version); a Redis failure half way
        raises IndexUnavailable with the note intact, and the next call starts over (indexing is idempotent:
        a member already held is skipped). An overflowed note (too many jobs to list) costs a full scan of
        the shard, which resumes from its cursor across calls until complete.
        """
        if self._unindexed is None:
            return 0
        indexed = 0
        for note in self._unindexed.unindexed(shards):
            if self._clock.now_ms() >= deadline_ms:
                break
            if note.overflow:
                result = self.reconcile(note.shard, deadline_ms, full=True)
                indexed += result.reindexed
                if not result.complete:
                    continue
            if note.jobs:
                now_ms = self._clock.now_ms()
                held = self._due.indexed_members(
                    note.shard,
                    [job.member for job in note.jobs],
                    stale_before_ms=now_ms - self._longest_lease_ms,
                )
                for job, is_held in zip(note.jobs, held, strict=True):
                    if not is_held:
                        self._due.index(job.member, note.shard, job.due_ms, now_ms)
                        indexed += 1
            if not self._unindexed.clear_unindexed(note.shard, note.version):
                logger.info("more jobs were noted meanwhile; next pass", extra={"shard": note.shard})
        return indexed

    def _reindex_missing(self, shard: int, jobs: list[LiveJob], now_ms: int) -> int:
        if not jobs:
            return 0
        # An in-flight member older than the longest lease stands for an entry that is gone (the members of
        # live deliveries are younger), so it does not count as held.
        held = self._due.indexed_members(
            shard, [job.member() for job in jobs], stale_before_ms=now_ms - self._longest_lease_ms
        )
        missing = [job for job, is_held in zip(jobs, held, strict=True) if not is_held]
        for job in missing:
            self._reindex(job, now_ms)
        return len(missing)

    def _reindex(self, job: LiveJob, now_ms: int) -> None:
        due_ms = job.due_ms
        if job.status is JobStatus.RUNNING and job.lease_expires_at_ms is not None:
            # The attempt may still be running: offer the job again only once its lease has expired.
            due_ms = job.lease_expires_at_ms + 1
        logger.warning(
            "re-indexing a live job Redis lost",
            extra={"job_id": job.job_id, "tenant": job.tenant, "status": job.status.value},
        )
        self._due.index(job.member(), job.shard, due_ms, now_ms)
