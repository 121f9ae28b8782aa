"""An in-memory schedule store with DynamoDB's conditional-create semantics, and a no-op job index."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from hookline.domain.cron.schedule import Schedule
from hookline.domain.errors import NotFound
from hookline.domain.models import Job, Member


class MemoryScheduleStore:
    """Holds schedules and instances; create_instance is atomic per id like a conditional put."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.schedules: dict[tuple[str, str], Schedule] = {}
        self.instances: dict[str, Job] = {}
        self.create_attempts = 0
        self.before_create: Callable[[Job], None] | None = None  # to interleave a second promoter

    def put(self, schedule: Schedule) -> None:
        self.schedules[(schedule.tenant, schedule.schedule_id)] = schedule

    def get(self, tenant: str, schedule_id: str) -> Schedule:
        try:
            return self.schedules[(tenant, schedule_id)]
        except KeyError:
            raise NotFound(f"schedule {schedule_id} not found") from None

    def create_instance(self, job: Job) -> bool:
        if self.before_create is not None:
            hook, self.before_create = self.before_create, None
            hook(job)
        with self._lock:
            self.create_attempts += 1
            if job.job_id in self.instances:
                return False
            self.instances[job.job_id] = job
            return True

    def active(self, shard: int, start_key: dict[str, Any] | None, limit: int) -> tuple[list[Schedule], Any]:
        return [s for s in self.schedules.values() if not s.paused], None

    def retire(self, schedule: Schedule) -> None:
        self.schedules[(schedule.tenant, schedule.schedule_id)] = schedule.with_changes(paused=True)

    def last_fire_ms(self, tenant: str, schedule_id: str) -> int | None:
        fires = [j.fire_time_ms or 0 for j in self.instances.values() if j.schedule_id == schedule_id]
        return max(fires) if fires else None


class NullJobIndex:
    """Accepts index calls (the instances' own indexing is covered by the moto tests)."""

    def __init__(self) -> None:
        self.indexed = 0

    def index(self, member: Member, shard: int, due_ms: int, now_ms: int, new_member: bool = False) -> bool:
        self.indexed += 1
        return True
