"""JobStore.live_jobs contract: the live index as reconciliation reads it, fake and moto alike.

A shard's live jobs, each once per scan and as the index projects it (LiveJob, never a body), optionally only
those that can be overdue by a horizon, in pages whose cursor is an opaque string a caller may keep between
invocations. A shard's live jobs spread over one partition per bucket (tables.Keyspace); within one, they
come in live_due_ms order (a job's due time, which a claim and a renewal leave; a due scan drops a running
job whose lease ends after its horizon), so the order tests put their jobs in one bucket. Each page reads
limit // buckets of every partition not at its end.
"""

from __future__ import annotations

import json
from typing import Any

from hookline.adapters.dynamo.tables import Keyspace
from hookline.domain.delivery import Finish
from hookline.domain.ids import new_id
from hookline.domain.models import FlowControl, Job, JobStatus
from hookline.domain.reconcile import LiveJob
from tests.contract.conftest import LEASE_MS, DynamoBackend
from tests.contract.test_job_store import NOW
from tests.contract.test_job_store import stored as stored_anywhere

KEYSPACE = Keyspace()  # both backends' default
BUCKET = 3
# A page size that reads this many items of every partition.
PER_PARTITION = KEYSPACE.buckets


def id_in_bucket(bucket: int = BUCKET) -> str:
    """Returns a new job id whose bucket is bucket."""
    while True:
        job_id = new_id(NOW)
        if KEYSPACE.bucket_of(job_id) == bucket:
            return job_id


def stored(backend: DynamoBackend, due_ms: int = NOW, bucket: int = BUCKET, **changes: Any) -> Job:
    """Creates a new job in bucket (so in one live partition of the shard) and returns it."""
    return stored_anywhere(backend, due_ms, job_id=id_in_bucket(bucket), **changes)


def live(job: Job) -> LiveJob:
    """Returns what the live index says of job."""
    return LiveJob(
        job.tenant,
        job.job_id,
        job.status,
        job.generation,
        job.due_ms,
        job.shard,
        job.flow,
        job.lease_expires_at_ms,
    )


def read_all(backend: DynamoBackend, page: int, due_before_ms: int | None = None) -> list[LiveJob]:
    """Pages through the shard's live jobs (up to the horizon) until the cursor runs out."""
    found: list[LiveJob] = []
    cursor = None
    for _ in range(100):
        jobs, cursor = backend.jobs.live_jobs(backend.shard, cursor, page, due_before_ms)
        assert cursor is None or isinstance(cursor, str)
        found += jobs
        if cursor is None:
            return found
    raise AssertionError("live_jobs did not end")


def test_given_live_and_finished_jobs_when_paged_then_live_ones_in_due_order_as_projected(
    dynamo_backend: DynamoBackend,
) -> None:
    due_order = [stored(dynamo_backend, due_ms=NOW + offset) for offset in (500, 100, 300, 200, 400)]
    stored(dynamo_backend, status=JobStatus.SUCCEEDED)
    plain = stored(dynamo_backend, due_ms=NOW + 450, flow=FlowControl())
    dynamo_backend.jobs.cancel(due_order[0].tenant, due_order[0].job_id, NOW)

    first, cursor = dynamo_backend.jobs.live_jobs(dynamo_backend.shard, None, 3 * PER_PARTITION)
    second, end = dynamo_backend.jobs.live_jobs(dynamo_backend.shard, cursor, 3 * PER_PARTITION)

    by_due = sorted([*due_order[1:], plain], key=lambda job: job.due_ms)
    assert first == [live(job) for job in by_due[:3]]
    assert second == [live(job) for job in by_due[3:]]
    assert isinstance(cursor, str) and end is None


def test_given_live_jobs_in_every_bucket_when_paged_then_each_once_and_every_partition_advances(
    dynamo_backend: DynamoBackend,
) -> None:
    jobs = [
        stored(dynamo_backend, due_ms=NOW + 10 * n + bucket, bucket=bucket)
        for bucket in range(KEYSPACE.buckets)
        for n in range(3)
    ]

    first, cursor = dynamo_backend.jobs.live_jobs(dynamo_backend.shard, None, PER_PARTITION)
    found = read_all(dynamo_backend, PER_PARTITION)

    # One page reads the head of every partition: no partition waits for another's end.
    assert first == [live(job) for job in sorted(jobs[::3], key=lambda job: KEYSPACE.bucket_of(job.job_id))]
    assert cursor is not None
    assert sorted(found, key=lambda job: job.job_id) == sorted(map(live, jobs), key=lambda job: job.job_id)


def test_given_a_cursor_of_another_form_then_the_scan_starts_over(dynamo_backend: DynamoBackend) -> None:
    job = stored(dynamo_backend, due_ms=NOW + 100)
    # What an older version kept in Redis: one partition's last key, not a position per partition.
    old_key = json.dumps({"pk": {"S": job.tenant}, "sk": {"S": "job#x"}, "live_shard": {"S": "1"}})

    for cursor in (old_key, "not json", json.dumps({"v": 2, "open": {"elsewhere#0": None}})):
        jobs, _ = dynamo_backend.jobs.live_jobs(dynamo_backend.shard, cursor, PER_PARTITION)
        assert jobs == [live(job)]


def test_given_running_job_then_listed_at_its_due_time_and_neither_claim_nor_renewal_moves_it(
    dynamo_backend: DynamoBackend,
) -> None:
    """A claim and a renewal change only projected attributes, never the index key (one index write each)."""
    early, late = (
        stored(dynamo_backend, due_ms=NOW + 1_000),
        stored(dynamo_backend, due_ms=NOW + LEASE_MS + 500),
    )
    job = dynamo_backend.jobs.claim(stored(dynamo_backend, due_ms=NOW + 1_500).member(), NOW + 1_500).job

    assert read_all(dynamo_backend, 10) == [live(early), live(job), live(late)]
    dynamo_backend.jobs.renew_lease(job, NOW + LEASE_MS + 9_000)
    renewed = job.with_changes(lease_expires_at_ms=NOW + LEASE_MS + 9_000)
    assert read_all(dynamo_backend, 10) == [live(early), live(renewed), live(late)]
    dynamo_backend.jobs.finish(renewed, Finish(JobStatus.SCHEDULED, 503, "status 503", NOW + 5), [], NOW + 1)
    retry = dynamo_backend.jobs.get(job.tenant, job.job_id)
    assert read_all(dynamo_backend, 10) == [live(retry), live(early), live(late)]


def test_given_running_jobs_when_scanned_up_to_a_horizon_then_only_those_whose_lease_can_have_ended(
    dynamo_backend: DynamoBackend,
) -> None:
    """The due scan keeps a running job (whatever its due time) only when its lease ends by the horizon;
    the running ones it drops still take their place in a page's Limit, so pages can come short."""
    held = [dynamo_backend.jobs.claim(stored(dynamo_backend).member(), NOW).job for _ in range(3)]
    waiting = stored(dynamo_backend, due_ms=NOW + 100)
    dynamo_backend.jobs.renew_lease(held[0], NOW + 60_000)
    renewed = held[0].with_changes(lease_expires_at_ms=NOW + 60_000)

    assert read_all(dynamo_backend, 1 * PER_PARTITION, due_before_ms=NOW + 1_000) == [live(waiting)]
    soon = sorted(held[1:], key=lambda job: (job.due_ms, job.job_id))
    assert read_all(dynamo_backend, 1 * PER_PARTITION, due_before_ms=NOW + LEASE_MS) == [
        *(live(job) for job in soon),
        live(waiting),
    ]
    assert live(renewed) in read_all(dynamo_backend, 100, due_before_ms=NOW + 60_000)
    assert live(renewed) in read_all(dynamo_backend, 100)  # the full scan filters nothing


def test_given_a_horizon_then_only_jobs_that_can_be_overdue_by_then_inclusive(
    dynamo_backend: DynamoBackend,
) -> None:
    jobs = [stored(dynamo_backend, due_ms=NOW + offset) for offset in (0, 999, 1_000, 1_001, 60_000)]
    held = dynamo_backend.jobs.claim(stored(dynamo_backend).member(), NOW).job  # lease ends after the horizon

    assert read_all(dynamo_backend, 2, due_before_ms=NOW + 1_000) == [live(job) for job in jobs[:3]]
    assert read_all(dynamo_backend, 100, due_before_ms=NOW - 1) == []
    # held keeps its due time (NOW) as its place, and is listed once its lease can have ended by the horizon
    by_id = sorted(read_all(dynamo_backend, 100, due_before_ms=NOW + LEASE_MS), key=lambda job: job.job_id)
    assert by_id == sorted([*map(live, jobs[:4]), live(held)], key=lambda job: job.job_id)


def test_given_a_kept_cursor_when_jobs_arrive_then_the_scan_goes_on_after_its_position(
    dynamo_backend: DynamoBackend,
) -> None:
    jobs = [stored(dynamo_backend, due_ms=NOW + offset) for offset in (100, 200, 300)]
    first, cursor = dynamo_backend.jobs.live_jobs(dynamo_backend.shard, None, 2 * PER_PARTITION, NOW + 10_000)
    before = stored(dynamo_backend, due_ms=NOW + 150)  # behind the cursor: the next scan finds it
    after = stored(dynamo_backend, due_ms=NOW + 250)

    rest, end = dynamo_backend.jobs.live_jobs(dynamo_backend.shard, cursor, 10 * PER_PARTITION, NOW + 10_000)

    assert first == [live(job) for job in jobs[:2]]
    assert rest == [live(after), live(jobs[2])]
    assert end is None
    assert live(before) in read_all(dynamo_backend, 10, NOW + 10_000)
