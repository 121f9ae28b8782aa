"""Does the cron pass of the promoter (claim due schedules, create each occurrence once, advance) and the
reaper's rebuild of the cron ZSET from DynamoDB.

Exactly once per occurrence comes from the data, not from a lock: an occurrence's job id is derived from
(schedule id, fire time) and created with a conditional put, so two promoters, a retry after a crash or a
replayed tick can at worst lose that put. The claim (cron_claim.lua) only keeps promoters from doing the
same work twice; the compare-and-set advance (cron_advance.lua) keeps a late promoter from moving a
schedule that someone else has taken over or that was changed meanwhile.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence

from hookline.domain.cron.schedule import Schedule, plan
from hookline.domain.delivery import CronClaim, TickResult
from hookline.domain.errors import NotFound, QueueNotFound
from hookline.domain.ids import derived_id
from hookline.domain.models import Job, JobRequest
from hookline.domain.sharding import shard_of
from hookline.ports import Clock, CronIndex, MetricsSink, ScheduleStore
from hookline.usecases.submit import JobSubmitter

logger = logging.getLogger(__name__)

# Schedules per claim call, and on-time occurrences one claim may create (a per-second schedule behind by a
# few seconds catches up in one claim). A batch is at most CLAIM_BATCH * FIRES_PER_CLAIM instances, each
# a read-free conditional put plus a listing put: far below the claim expiry.
CLAIM_BATCH = 50
FIRES_PER_CLAIM = 10
# When a promoter dies holding claims, their occurrences are handled this much later: still on time while
# below the misfire grace (settings.cron_misfire_grace_ms).
CLAIM_TTL_MS = 10_000
RECONCILE_PAGE = 100


def instance_id(schedule_id: str, fire_ms: int) -> str:
    """Returns the job id of a schedule's occurrence: the same for every caller, ordered by fire time."""
    return derived_id(fire_ms, f"{schedule_id}:{fire_ms}")


class CronRunner:
    """Fires due schedules of every shard; runs inside the promoter's tick (any number at once)."""

    def __init__(
        self,
        store: ScheduleStore,
        index: CronIndex,
        submitter: JobSubmitter,
        clock: Clock,
        shards: Sequence[int],
        metrics: MetricsSink,
        misfire_grace_ms: int,
        job_shards: int,
        batch: int = CLAIM_BATCH,
        claim_ttl_ms: int = CLAIM_TTL_MS,
        fires_per_claim: int = FIRES_PER_CLAIM,
    ) -> None:
        self._store = store
        self._index = index
        self._submitter = submitter
        self._clock = clock
        self._shards = list(shards)
        self._metrics = metrics
        self._grace_ms = misfire_grace_ms
        self._job_shards = job_shards
        self._batch = batch
        self._claim_ttl_ms = claim_ttl_ms
        self._fires_per_claim = fires_per_claim

    def tick(self, now_ms: int) -> TickResult:
        """Handles at most one batch of due schedules per shard; returns instances created and next due."""
        created, next_due, more = 0, None, False
        for shard in self._shards:
            result = self.tick_shard(shard, now_ms)
            created += result.moved
            more = more or result.more_due
            next_due = _lowest(next_due, result.next_due_ms)
        return TickResult(created, next_due, more)

    def tick_shard(self, shard: int, now_ms: int) -> TickResult:
        """Handles at most one batch of the shard's due schedules; returns instances created and next due."""
        result = self._index.claim_cron(shard, now_ms, now_ms + self._claim_ttl_ms, self._batch)
        created, more = 0, len(result.claims) == self._batch
        next_fires: list[int | None] = [result.next_ms]
        for claim in result.claims:
            try:
                fired, next_fire_ms = self._handle(shard, claim, now_ms)
            except Exception:
                # One schedule's failure (DynamoDB throttling, a bad template) must not stop the promoter's
                # job promotion or the other schedules: the claim expires and is retried.
                logger.exception("cron occurrence failed", extra={"schedule": claim.member.encode()})
                self._metrics.count("CronFailed")
                continue
            created += fired
            next_fires.append(next_fire_ms)
            if next_fire_ms is not None and next_fire_ms <= now_ms:
                more = True  # caught up one occurrence of a stalled schedule; the next is due too
        if created:
            self._metrics.count("CronFired", created)
        return TickResult(created, _lowest(*next_fires), more)

    def _handle(self, shard: int, claim: CronClaim, now_ms: int) -> tuple[int, int | None]:
        """Creates the claimed occurrence and those due right after it, then advances the schedule.

        Returns (instances created, next fire time). If a write fails, the exception leaves the claim to
        expire: the next claimer starts again at the claimed occurrence, finds the instances already made
        (conflicts) and goes on from there.
        """
        member = claim.member
        try:
            schedule: Schedule | None = self._store.get(member.tenant, member.schedule_id)
        except NotFound:
            schedule = None
        if schedule is None or schedule.version != member.version or schedule.paused:
            # Deleted, changed (the new version has its own member) or paused: this member is stale.
            self._index.advance_cron(shard, claim, None)
            return 0, None
        request: JobRequest = schedule.template()
        # The queue's retry and timeout defaults as they are at this fire (copied into each occurrence); a
        # queue deleted since leaves the template as it is (the queue then limits nothing).
        with contextlib.suppress(QueueNotFound):
            request = self._submitter.with_queue_defaults(schedule.tenant, request)
        template = self._submitter.build(schedule.tenant, request, now_ms)
        created, fire_ms = 0, claim.fire_ms
        for _ in range(self._fires_per_claim):
            step = plan(schedule, fire_ms, now_ms, self._grace_ms)
            if step.create_fire_ms is not None:
                created += int(self._create(template, schedule.schedule_id, step.create_fire_ms, now_ms))
            if step.next_fire_ms is None or step.next_fire_ms > now_ms:
                break
            fire_ms = step.next_fire_ms
        self._index.advance_cron(shard, claim, step.next_fire_ms)
        return created, step.next_fire_ms

    def _create(self, template: Job, schedule_id: str, fire_ms: int, now_ms: int) -> bool:
        job_id = instance_id(schedule_id, fire_ms)
        job = template.with_changes(
            job_id=job_id,
            shard=shard_of(job_id, self._job_shards),
            due_ms=fire_ms,
            schedule_id=schedule_id,
            fire_time_ms=fire_ms,
        )
        if not self._store.create_instance(job):
            self._metrics.count("CronDuplicateAvoided")
            return False
        self._submitter.accept_instance(job, now_ms)
        return True


def _lowest(*values: int | None) -> int | None:
    present = [value for value in values if value is not None]
    return min(present) if present else None


class ScheduleReconciler:
    """Puts back into the cron ZSET every active schedule DynamoDB holds and Redis lost (reaper step)."""

    def __init__(self, store: ScheduleStore, index: CronIndex, clock: Clock) -> None:
        self._store = store
        self._index = index
        self._clock = clock

    def reconcile(self, shard: int, deadline_ms: int) -> tuple[int, int, bool]:
        """Returns (active schedules seen, restored, whether every page was seen before deadline_ms)."""
        seen = restored = 0
        start_key = None
        while self._clock.now_ms() < deadline_ms:
            schedules, start_key = self._store.active(shard, start_key, RECONCILE_PAGE)
            seen += len(schedules)
            scores = self._index.cron_scores(shard, [s.member() for s in schedules]) if schedules else []
            for schedule, score in zip(schedules, scores, strict=True):
                if score is None and self._restore(shard, schedule):
                    restored += 1
            if start_key is None:
                return seen, restored, True
        return seen, restored, False

    def _restore(self, shard: int, schedule: Schedule) -> bool:
        """Re-adds a schedule at the occurrence after its newest instance, so none is lost or repeated.

        The promoter then applies the catch-up policy if that occurrence is long past. With no instance
        yet, the schedule resumes after its creation (or last change).
        """
        last_fire_ms = self._store.last_fire_ms(schedule.tenant, schedule.schedule_id)
        after_ms = max(last_fire_ms if last_fire_ms is not None else 0, schedule.updated_ms)
        next_fire_ms = schedule.next_fire_after(after_ms)
        if next_fire_ms is None:
            self._store.retire(schedule)  # past end_at: stop listing it as active
            return False
        logger.warning(
            "re-adding a schedule Redis lost",
            extra={"tenant": schedule.tenant, "schedule_id": schedule.schedule_id},
        )
        return self._index.set_cron(shard, None, schedule.member(), next_fire_ms, only_if_absent=True)
