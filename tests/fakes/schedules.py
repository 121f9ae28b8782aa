"""The schedule store (hookline.ports.ScheduleStore and ScheduleAdminStore) in memory, sharing JobsTables
with the job store fake as the real ones share the jobs table (an instance is a job the job store reads).

Conditions as adapters/dynamo/schedule_store.py: create ITEM_IS_NEW, replace and retire SAME_VERSION
(replace: NotFound when missing, Conflict when changed; retire: a refusal is ignored), delete ITEM_EXISTS
(NotFound), create_instance ITEM_IS_NEW on the job (False when it exists) and the listing item always.
"""

from __future__ import annotations

from typing import Any

from hookline.domain.cron.schedule import Schedule
from hookline.domain.errors import Conflict, NotFound
from hookline.domain.models import Job
from tests.fakes.faults import ConditionFailed, Faults, dynamo_down, port_call
from tests.fakes.tables import JobsTables


class FakeScheduleStore:
    """Schedules, their place in the live GSI, and their instances' listing items."""

    def __init__(self, tables: JobsTables | None = None) -> None:
        self.tables = tables or JobsTables()
        self._faults = Faults(dynamo_down)

    @property
    def faults(self) -> Faults:
        """Returns the fault plan of this fake's calls (default error: DynamoUnavailable)."""
        return self._faults

    def _write(self, schedule: Schedule, next_fire_ms: int | None) -> None:
        key = (schedule.tenant, schedule.schedule_id)
        self.tables.schedules[key] = schedule
        if not schedule.paused and next_fire_ms is not None:
            self.tables.live_schedules[key] = next_fire_ms
        else:
            self.tables.live_schedules.pop(key, None)

    @port_call
    def create(self, schedule: Schedule, next_fire_ms: int | None) -> None:
        """Stores a new schedule (ITEM_IS_NEW)."""
        with self.tables.lock:
            if (schedule.tenant, schedule.schedule_id) in self.tables.schedules:
                raise ConditionFailed("ConditionalCheckFailedException")
            self._write(schedule, next_fire_ms)

    @port_call
    def get(self, tenant: str, schedule_id: str) -> Schedule:
        """Returns the schedule or raises NotFound."""
        with self.tables.lock:
            found = self.tables.schedules.get((tenant, schedule_id))
        if found is None:
            raise NotFound(f"schedule {schedule_id} not found")
        return found

    @port_call
    def replace(self, schedule: Schedule, expected_version: int, next_fire_ms: int | None) -> None:
        """Writes a changed schedule if still at expected_version; NotFound or Conflict otherwise."""
        with self.tables.lock:
            stored = self.tables.schedules.get((schedule.tenant, schedule.schedule_id))
            if stored is None:
                raise NotFound(f"schedule {schedule.schedule_id} not found")
            if stored.version != expected_version:
                raise Conflict(f"schedule {schedule.schedule_id} changed concurrently; read it and retry")
            self._write(schedule, next_fire_ms)

    @port_call
    def delete(self, tenant: str, schedule_id: str) -> Schedule:
        """Deletes a schedule and returns it as it was; NotFound when missing. Its instances stay."""
        with self.tables.lock:
            stored = self.tables.schedules.pop((tenant, schedule_id), None)
            self.tables.live_schedules.pop((tenant, schedule_id), None)
        if stored is None:
            raise NotFound(f"schedule {schedule_id} not found")
        return stored

    @port_call
    def list_page(self, tenant: str, after_id: str | None, limit: int) -> tuple[list[Schedule], str | None]:
        """Returns a page of the tenant's schedules, newest first, and the id to go on after."""
        with self.tables.lock:
            ids = sorted((sid for (t, sid) in self.tables.schedules if t == tenant), reverse=True)
            page, last = _page(ids, after_id, limit)
            return [self.tables.schedules[(tenant, sid)] for sid in page], last

    @port_call
    def active(self, shard: int, start_key: dict[str, Any] | None, limit: int) -> tuple[list[Schedule], Any]:
        """Returns a page of the shard's active schedules in next-fire order, and the key to go on from (a
        full page always has one, as in DynamoDB)."""
        t = self.tables
        with t.lock:
            rows = sorted(
                (fire, tenant, sid)
                for (tenant, sid), fire in t.live_schedules.items()
                if t.schedules[(tenant, sid)].shard == shard
            )
            if start_key is not None:
                rows = [r for r in rows if r > (start_key["fire"], start_key["pk"], start_key["id"])]
            page = rows[:limit]
            schedules = [t.schedules[(tenant, sid)] for _, tenant, sid in page]
            if len(page) < limit:
                return schedules, None
            fire, tenant, sid = page[-1]
            return schedules, {"fire": fire, "pk": tenant, "id": sid}

    @port_call
    def last_fire_ms(self, tenant: str, schedule_id: str) -> int | None:
        """Returns the fire time of the schedule's newest instance (by id), or None."""
        with self.tables.lock:
            listing = self.tables.listings.get((tenant, schedule_id), {})
            return listing[max(listing)] if listing else None

    @port_call
    def retire(self, schedule: Schedule) -> None:
        """Takes an unchanged schedule out of the live GSI; a changed or deleted one is left alone."""
        key = (schedule.tenant, schedule.schedule_id)
        with self.tables.lock:
            stored = self.tables.schedules.get(key)
            if stored is not None and stored.version == schedule.version:
                self.tables.live_schedules.pop(key, None)

    @port_call
    def create_instance(self, job: Job) -> bool:
        """Stores an occurrence's job unless its id exists, then its listing item; True when created."""
        assert job.schedule_id is not None and job.fire_time_ms is not None
        t = self.tables
        with t.lock:
            key = (job.tenant, job.job_id)
            created = key not in t.jobs
            if created:
                t.jobs[key] = job
                if job.status.is_live:
                    t.live[key] = (t.keyspace.live_pk(job.shard, job.job_id), job.due_ms)
            t.listings.setdefault((job.tenant, job.schedule_id), {})[job.job_id] = job.fire_time_ms
            return created

    @port_call
    def instances(
        self, tenant: str, schedule_id: str, after_job_id: str | None, limit: int
    ) -> tuple[list[Job], str | None]:
        """Returns a page of the jobs a schedule created, newest first (gone jobs skipped), and where next."""
        with self.tables.lock:
            ids = sorted(self.tables.listings.get((tenant, schedule_id), {}), reverse=True)
            page, last = _page(ids, after_id=after_job_id, limit=limit)
            jobs = [self.tables.jobs.get((tenant, jid)) for jid in page]
            return [job for job in jobs if job is not None], last


def _page(ids_newest_first: list[str], after_id: str | None, limit: int) -> tuple[list[str], str | None]:
    """Pages a descending key range as the adapter's prefix query does: as in DynamoDB, a full page goes on
    after its last id even when nothing follows (moto only when its partition holds more items)."""
    if after_id is not None:
        ids_newest_first = [i for i in ids_newest_first if i < after_id]
    page = ids_newest_first[:limit]
    return page, (page[-1] if page and len(page) == limit else None)
