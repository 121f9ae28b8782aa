"""The jobs and executions tables in memory, shared by the job and schedule store fakes as in DynamoDB.

Items are held as domain values (a Job, a Schedule) plus the attributes the values do not carry: the live
index's sort key, an idempotency marker's expiry, a listing's fire time. Every store call takes `lock`, so
each conditional write is atomic like DynamoDB's.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from hookline.adapters.dynamo.tables import Keyspace
from hookline.domain.cron.schedule import Schedule
from hookline.domain.models import Execution, Job, JobStatus


@dataclass(frozen=True)
class Marker:
    """An idempotency marker: the job a key created, for which request, until when (s), by which write."""

    job_id: str
    request_hash: str
    expires_at_s: int
    write_token: str = ""


@dataclass(frozen=True)
class Stamp:
    """What the last write of one kind left on a job item (adapters/dynamo/job_store.py CREATE_TOKEN ...):
    its token, and for a claim the status and updated_ms it took the job from."""

    token: str
    claimed_from: JobStatus | None = None
    claimed_from_ms: int | None = None


@dataclass
class JobsTables:
    """The items of the jobs table (jobs, markers, schedules, listings) and of the executions table.

    Items are found by (tenant, id) as the adapters find them by key; `keyspace` says which partition each
    would sit in, and the stores read partition by partition as the adapters query them (a tenant's jobs
    bucket by bucket, a shard's live jobs partition by partition).
    """

    keyspace: Keyspace = field(default_factory=Keyspace)
    lock: threading.RLock = field(default_factory=threading.RLock)
    jobs: dict[tuple[str, str], Job] = field(default_factory=dict)
    # The live GSI: (tenant, job id) -> (live_shard "<shard>#<bucket>", live_due_ms); a job is in it while it
    # holds them.
    live: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)
    markers: dict[tuple[str, str], Marker] = field(default_factory=dict)
    # The write token attributes of the job items: (tenant, job id, kind of write) -> the last such write's.
    stamps: dict[tuple[str, str, str], Stamp] = field(default_factory=dict)
    executions: dict[tuple[str, str], dict[int, Execution]] = field(default_factory=dict)
    schedules: dict[tuple[str, str], Schedule] = field(default_factory=dict)
    # An active schedule's place in the live GSI (partition "cron:<shard>"): (tenant, id) -> next fire.
    live_schedules: dict[tuple[str, str], int] = field(default_factory=dict)
    # Listing items of a schedule's instances: (tenant, schedule id) -> {job id: fire time}.
    listings: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
