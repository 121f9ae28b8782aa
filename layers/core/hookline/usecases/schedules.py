"""Does schedule management for the API: create, read, list, change, pause/resume and delete schedules.

DynamoDB is written first (the record, conditional on the version read), Redis second; if the Redis step
fails, the reaper's reconciliation puts the schedule back, and a stale version left in Redis is dropped by
the promoter when it falls due (it compares versions).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from hookline.domain.cron.expression import CronError, spec_for
from hookline.domain.cron.schedule import Schedule, ScheduleRequest, ScheduleTooFrequent, ScheduleUpdate
from hookline.domain.errors import InvalidRequest
from hookline.domain.ids import new_id
from hookline.domain.models import Job
from hookline.domain.sharding import shard_of
from hookline.ports import Clock, CronIndex, MetricsSink, QueueStore, ScheduleAdminStore, UrlChecker

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FrequencyFloor:
    """The shortest allowed gap between two occurrences: one default, optional per-tenant overrides."""

    default_ms: int
    per_tenant_ms: Mapping[str, int]

    def for_tenant(self, tenant: str) -> int:
        """Returns the floor that applies to tenant."""
        return self.per_tenant_ms.get(tenant, self.default_ms)


class ScheduleManager:
    """Keeps schedules in DynamoDB and their next fire times in the cron ZSET."""

    def __init__(
        self,
        store: ScheduleAdminStore,
        index: CronIndex,
        clock: Clock,
        check_url: UrlChecker,
        shards: int,
        floor: FrequencyFloor,
        metrics: MetricsSink,
        queues: QueueStore | None = None,
    ) -> None:
        self._store = store
        self._queues = queues
        self._index = index
        self._clock = clock
        self._check_url = check_url
        self._shards = shards
        self._floor = floor
        self._metrics = metrics

    def create(self, tenant: str, request: ScheduleRequest) -> Schedule:
        """Stores a schedule and indexes its first occurrence; raises InvalidRequest, UnsafeUrl,
        QueueNotFound (its job names a queue the tenant does not have: nothing is stored)."""
        self._check_url(request.job.url)
        self._check_queue(tenant, request.job.queue)
        now_ms = self._clock.now_ms()
        schedule_id = new_id(now_ms)
        schedule = Schedule(
            tenant=tenant,
            schedule_id=schedule_id,
            expression=request.expression,
            timezone=request.timezone,
            job=request.job.model_dump(mode="json", exclude_none=True),
            catch_up=request.catch_up,
            paused=request.paused,
            version=1,
            shard=shard_of(schedule_id, self._shards),
            created_ms=now_ms,
            updated_ms=now_ms,
            start_ms=_ms(request.start_at),
            end_ms=_ms(request.end_at),
        )
        self._check_frequency(schedule, now_ms)
        next_fire_ms = schedule.next_fire_after(now_ms)
        if next_fire_ms is None and schedule.end_ms is None:
            raise InvalidRequest(f"{schedule.expression!r} never fires", field="expression")
        self._store.create(schedule, next_fire_ms)
        self._sync(None, schedule, next_fire_ms)
        self._metrics.count("SchedulesCreated")
        return schedule

    def _check_queue(self, tenant: str, queue: str | None) -> None:
        """Raises QueueNotFound when a job template names a queue the tenant does not have."""
        if queue is not None and self._queues is not None:
            self._queues.get(tenant, queue)

    def get(self, tenant: str, schedule_id: str) -> Schedule:
        """Returns one of the tenant's schedules; raises NotFound."""
        return self._store.get(tenant, schedule_id)

    def list_page(self, tenant: str, after_id: str | None, limit: int) -> tuple[list[Schedule], str | None]:
        """Returns a page of the tenant's schedules, newest first."""
        return self._store.list_page(tenant, after_id, limit)

    def instances(
        self, tenant: str, schedule_id: str, after_job_id: str | None, limit: int
    ) -> tuple[list[Job], str | None]:
        """Returns a page of the jobs one of the tenant's schedules created; raises NotFound."""
        self._store.get(tenant, schedule_id)  # 404 for an unknown or foreign id
        return self._store.instances(tenant, schedule_id, after_job_id, limit)

    def update(self, tenant: str, schedule_id: str, update: ScheduleUpdate) -> Schedule:
        """Applies a change as a new version; a resume, a new expression or a new window fires from now on
        (nothing missed).

        Raises NotFound, InvalidRequest, or Conflict when the schedule changed since it was read.
        """
        current = self._store.get(tenant, schedule_id)
        now_ms = self._clock.now_ms()
        if update.job is not None:
            self._check_url(update.job.url)
            self._check_queue(tenant, update.job.queue)
        changed = current.with_changes(
            expression=update.expression or current.expression,
            timezone=update.timezone or current.timezone,
            job=current.job if update.job is None else update.job.model_dump(mode="json", exclude_none=True),
            catch_up=update.catch_up or current.catch_up,
            paused=current.paused if update.paused is None else update.paused,
            version=current.version + 1,
            updated_ms=now_ms,
            start_ms=_bound(update, "start_at", current.start_ms),
            end_ms=_bound(update, "end_at", current.end_ms),
        )
        if changed.start_ms is not None and changed.end_ms is not None and changed.end_ms <= changed.start_ms:
            raise InvalidRequest("end_at must be after start_at", field="end_at")
        self._check_frequency(changed, now_ms)
        next_fire_ms = changed.next_fire_after(now_ms)
        self._store.replace(changed, current.version, next_fire_ms)
        self._sync(current, changed, next_fire_ms)
        return changed

    def delete(self, tenant: str, schedule_id: str) -> Schedule:
        """Deletes a schedule (its instances stay, as jobs); raises NotFound."""
        deleted = self._store.delete(tenant, schedule_id)
        self._sync(deleted, None, None)
        return deleted

    def _check_frequency(self, schedule: Schedule, now_ms: int) -> None:
        floor_ms = self._floor.for_tenant(schedule.tenant)
        try:
            spec = spec_for(schedule.expression, schedule.timezone)
        except CronError as error:
            raise InvalidRequest(str(error), field="expression") from error
        if floor_ms <= 1000:
            return  # no cron expression fires more often than once a second
        gap_ms = spec.min_gap_ms(now_ms)
        if gap_ms is not None and gap_ms < floor_ms:
            raise ScheduleTooFrequent(
                f"{schedule.expression!r} fires every {gap_ms / 1000:g} s at times; this tenant's schedules "
                f"may fire at most once every {floor_ms / 1000:g} s",
                field="expression",
            )

    def _sync(self, old: Schedule | None, new: Schedule | None, next_fire_ms: int | None) -> None:
        """Mirrors a stored change into the cron ZSET; a failure is repaired by reconciliation."""
        either = new or old
        assert either is not None
        try:
            self._index.set_cron(
                either.shard,
                None if old is None else old.member(),
                None if new is None or new.paused else new.member(),
                next_fire_ms,
            )
        except Exception:
            logger.exception("cron index update failed; reconciliation will repair it")
            self._metrics.count("IndexFailed")


def _ms(value: datetime | None) -> int | None:
    return None if value is None else int(value.timestamp() * 1000)


def _bound(update: ScheduleUpdate, name: str, current_ms: int | None) -> int | None:
    """Returns start_at or end_at after the update: as sent (null removes it), or current_ms if left out."""
    return _ms(getattr(update, name)) if name in update.model_fields_set else current_ms
