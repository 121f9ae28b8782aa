"""Items the previous version of the job store wrote, read, claimed and finished by this one (on moto).

The previous version kept a running job's lease end as its live index sort key (live_due_ms; a claim and a
renewal moved it), and recorded every attempt, the first included, as an item of the executions table.
This version leaves live_due_ms at the due time and keeps attempt 1's record in the job item. The items an
older version left must still be found by the reaper's due scan when their lease can have ended, taken over,
finished, and listed with every attempt.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hookline.adapters.dynamo import codec, tables
from hookline.adapters.dynamo.job_store import DynamoJobStore
from hookline.domain.delivery import Finish
from hookline.domain.models import Execution, ExecutionOutcome, Job, JobStatus, Member
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import dynamodb_client
from tests.support.aws import Boto3WithBudget
from tests.support.jobs import scheduled_job

pytestmark = pytest.mark.integration

NOW = 1_767_225_600_000
LEASE_MS = 2_000


@pytest.fixture
def client(settings: Settings) -> Iterator[Any]:
    made = dynamodb_client(settings, max_connections=2)
    yield made
    made.close()


@pytest.fixture
def store(client: Any, settings: Settings) -> DynamoJobStore:
    return DynamoJobStore(
        Boto3WithBudget(client), settings.jobs_table, settings.executions_table, lease_ms=LEASE_MS
    )


def _record(job: Job, attempt: int, outcome: ExecutionOutcome, code: int | None) -> Execution:
    return Execution(job.tenant, job.job_id, attempt, job.generation, NOW, NOW + 20, outcome, 20, code)


def _old_claim(client: Any, settings: Settings, job: Job, now_ms: int) -> Job:
    """Leaves the job as the previous version's claim did: running, live_due_ms at the lease's end."""
    lease = now_ms + LEASE_MS
    client.update_item(
        TableName=settings.jobs_table,
        Key=codec.job_key(tables.Keyspace(), job.tenant, job.job_id),
        UpdateExpression="SET #s = :running, attempt = attempt + :one, lease_expires_at_ms = :lease, "
        "live_due_ms = :lease, updated_ms = :now",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues=codec.to_attribute_values(
            {":running": "running", ":one": 1, ":lease": lease, ":now": now_ms}
        ),
    )
    return job.with_changes(
        status=JobStatus.RUNNING, attempt=job.attempt + 1, lease_expires_at_ms=lease, updated_ms=now_ms
    )


def _old_record(client: Any, settings: Settings, execution: Execution) -> None:
    """Writes an attempt's record where the previous version kept every attempt's: the executions table."""
    client.put_item(TableName=settings.executions_table, Item=codec.execution_to_item(execution))


def _due_scan(store: DynamoJobStore, shard: int, horizon_ms: int) -> list[str]:
    found: list[str] = []
    cursor = None
    while True:
        jobs, cursor = store.live_jobs(shard, cursor, 100, horizon_ms)
        found += [job.job_id for job in jobs]
        if cursor is None:
            return found


def test_given_a_job_claimed_by_the_previous_version_then_scanned_at_its_lease_taken_over_and_listed(
    client: Any, settings: Settings, store: DynamoJobStore
) -> None:
    job, _ = store.create(scheduled_job(NOW, tenant="up"), "", NOW)
    held = _old_claim(client, settings, job, NOW)  # live_due_ms = NOW + LEASE_MS
    assert held.lease_expires_at_ms == NOW + LEASE_MS

    # A renewal by this version moves the lease, not the sort key: the old key is still at most the lease.
    store.renew_lease(held, NOW + 10_000)
    assert _due_scan(store, job.shard, NOW + 5_000) == []  # its lease runs past the horizon
    assert _due_scan(store, job.shard, NOW + 10_000) == [job.job_id]

    taken = store.claim(job.member(), NOW + 10_001)
    assert (taken.job.attempt, taken.abandoned_attempt, taken.abandoned_since_ms) == (2, 1, NOW)
    abandoned = _record(job, 1, ExecutionOutcome.LEASE_EXPIRED, None)
    second = _record(job, 2, ExecutionOutcome.SUCCEEDED, 200)
    store.finish(taken.job, Finish(JobStatus.SUCCEEDED, 200, None), [abandoned, second], NOW + 10_050)

    assert store.get(job.tenant, job.job_id).status is JobStatus.SUCCEEDED
    assert store.executions(job.tenant, job.job_id) == [abandoned, second]
    assert _due_scan(store, job.shard, NOW + 60_000) == []


def test_given_a_job_retried_by_the_previous_version_then_its_next_attempt_finishes_and_both_are_listed(
    client: Any, settings: Settings, store: DynamoJobStore
) -> None:
    job, _ = store.create(scheduled_job(NOW, tenant="up"), "", NOW)
    held = _old_claim(client, settings, job, NOW)
    first = _record(held, 1, ExecutionOutcome.RETRYABLE, 503)
    # The previous version's finish: the record in the executions table, the job item without it.
    _old_record(client, settings, first)
    store.finish(held, Finish(JobStatus.SCHEDULED, 503, "status 503", NOW + 1_000), [], NOW + 20)
    assert store.executions(job.tenant, job.job_id) == [first]

    again = store.claim(Member(job.tenant, job.job_id, 2), NOW + 1_000).job
    second = _record(again, 2, ExecutionOutcome.SUCCEEDED, 200)
    store.finish(again, Finish(JobStatus.SUCCEEDED, 200, None), [second], NOW + 1_050)

    assert store.executions(job.tenant, job.job_id) == [first, second]


def test_given_a_job_finished_by_the_previous_version_then_its_attempt_is_listed_from_the_executions_table(
    client: Any, settings: Settings, store: DynamoJobStore
) -> None:
    job, _ = store.create(scheduled_job(NOW, tenant="up"), "", NOW)
    held = _old_claim(client, settings, job, NOW)
    only = _record(held, 1, ExecutionOutcome.SUCCEEDED, 200)
    _old_record(client, settings, only)
    store.finish(held, Finish(JobStatus.SUCCEEDED, 200, None), [], NOW + 20)

    assert store.executions(job.tenant, job.job_id) == [only]


def test_given_a_first_attempt_finished_by_this_version_then_its_record_is_in_the_job_item_alone(
    client: Any, settings: Settings, store: DynamoJobStore
) -> None:
    job, _ = store.create(scheduled_job(NOW, tenant="up"), "", NOW)
    held = store.claim(job.member(), NOW).job
    only = _record(held, 1, ExecutionOutcome.SUCCEEDED, 200)
    store.finish(held, Finish(JobStatus.SUCCEEDED, 200, None), [only], NOW + 20)

    item = client.get_item(
        TableName=settings.jobs_table, Key=codec.job_key(tables.Keyspace(), job.tenant, job.job_id)
    )["Item"]
    table = client.query(
        TableName=settings.executions_table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": tables.execution_pk(job.tenant, job.job_id)}},
    )
    assert codec.first_execution(job.tenant, item) == only
    assert table["Items"] == []
    assert store.executions(job.tenant, job.job_id) == [only]
