"""A write whose reply was lost and which the client sent again, fake and moto alike.

The first try is applied; its reply never arrives, so the DynamoDB client (botocore's retries, the JSON
client's) sends the same request again, and that repeat fails the write's own condition. The store must read
its own token in the item and report the first try's success: never "held by another attempt" (a claim), an
error and a second job (a create), a lost hold (a finish), or a conflict (cancel, replay). The replies are
lost on purpose: DynamoBackend.replies.lose(operation); for the real clients the fault proxy resets the
connection once the write was applied, and the repeat is the client's own retry.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from botocore.exceptions import BotoCoreError

from hookline.adapters.dynamo import tables
from hookline.domain.delivery import Claim, Finish
from hookline.domain.errors import NotYet, StaleState
from hookline.domain.models import ExecutionOutcome, JobStatus, Member
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import DynamoBounds, dynamodb_client, dynamodb_json_client
from tests.contract.conftest import LEASE_MS, DynamoBackend
from tests.contract.test_job_store import (
    NOW,
    claimed,
    execution,
    live_ids,
    make_job,
    running,
    stored,
)
from tests.support.dynamo_faults import DynamoFaultProxy


@pytest.mark.integration
@pytest.mark.parametrize("kind", ["boto3", "json"])
def test_given_one_attempt_when_a_write_reply_is_lost_then_a_connection_error_and_the_write_applied(
    contract_tables: tuple[Settings, Any], dynamo_faults: DynamoFaultProxy, kind: str
) -> None:
    """The repeats below are the clients' own retries: without one, the lost reply is a connection error."""
    settings, _ = contract_tables
    bounds = DynamoBounds(max_attempts=1)
    client = dynamodb_client(settings, bounds=bounds)
    sender = dynamodb_json_client(client, bounds) if kind == "json" else client
    item = {tables.JOBS_PK: {"S": f"lost-{uuid.uuid4().hex}"}, tables.JOBS_SK: {"S": "lost"}}
    dynamo_faults.replies.lose("put_item")
    try:
        with pytest.raises(BotoCoreError):
            sender.put_item(TableName=settings.jobs_table, Item=item)
        assert dynamo_faults.replies.lost == 1
        assert client.get_item(TableName=settings.jobs_table, Key=item).get("Item") == item
    finally:
        if sender is not client:
            sender.close()
        client.close()


def test_given_claim_reply_lost_when_the_client_sends_it_again_then_the_attempt_is_ours(
    dynamo_backend: DynamoBackend,
) -> None:
    job = stored(dynamo_backend)
    dynamo_backend.replies.lose("update_item")

    claim = dynamo_backend.jobs.claim(job.member(), NOW + 10)

    assert dynamo_backend.replies.lost == 1
    assert claim == Claim(running(job, NOW + 10))  # one attempt spent, nothing abandoned
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == claim.job


def test_given_take_over_claim_reply_lost_then_the_repeat_reports_the_abandoned_attempt(
    dynamo_backend: DynamoBackend,
) -> None:
    first = claimed(dynamo_backend, NOW)
    now = NOW + LEASE_MS + 1
    dynamo_backend.replies.lose("update_item")

    claim = dynamo_backend.jobs.claim(first.member(), now)

    assert claim == Claim(running(first, now), abandoned_attempt=1, abandoned_since_ms=NOW)
    assert dynamo_backend.jobs.get(first.tenant, first.job_id) == claim.job


def test_given_claim_of_another_attempt_when_claimed_again_then_still_not_yet(
    dynamo_backend: DynamoBackend,
) -> None:
    """The token is this call's: another claim of the same member is refused while the lease holds."""
    first = claimed(dynamo_backend, NOW)

    with pytest.raises(NotYet):
        dynamo_backend.jobs.claim(first.member(), NOW + 1)


def test_given_create_reply_lost_then_created_once(dynamo_backend: DynamoBackend) -> None:
    job = make_job(dynamo_backend)
    dynamo_backend.replies.lose("put_item")

    assert dynamo_backend.jobs.create(job, "", NOW) == (job, True)
    assert dynamo_backend.replies.lost == 1
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == job
    assert live_ids(dynamo_backend) == [job.job_id]


def test_given_create_reply_lost_and_the_job_claimed_before_the_repeat_then_still_created(
    dynamo_backend: DynamoBackend,
) -> None:
    """Another write (the reaper indexed the job from DynamoDB, an executor claimed it) must not hide it."""
    job = make_job(dynamo_backend)
    dynamo_backend.replies.lose("put_item", between=lambda: dynamo_backend.jobs.claim(job.member(), NOW + 1))

    assert dynamo_backend.jobs.create(job, "", NOW) == (job, True)
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == running(job, NOW + 1)


def test_given_idempotent_create_reply_lost_then_created_not_a_repeat(dynamo_backend: DynamoBackend) -> None:
    """Reported as a repeat, the job would never be indexed: the submit indexes only what it created."""
    job = make_job(dynamo_backend, idempotency_key="k")
    dynamo_backend.replies.lose("transact_write_items")

    assert dynamo_backend.jobs.create(job, "h1", NOW) == (job, True)
    assert dynamo_backend.jobs.create(make_job(dynamo_backend, idempotency_key="k"), "h1", NOW) == (
        job,
        False,
    )


@pytest.mark.parametrize(
    "finish",
    [
        pytest.param(Finish(JobStatus.SUCCEEDED, 200, None), id="succeeded"),
        pytest.param(Finish(JobStatus.SCHEDULED, 503, "status 503", NOW + 60_000), id="retried"),
        pytest.param(Finish(JobStatus.DEAD, 410, "status 410"), id="dead"),
    ],
)
@pytest.mark.parametrize(
    ("attempt", "operation"),
    [
        pytest.param(1, "update_item", id="first_attempt_one_update"),
        pytest.param(2, "transact_write_items", id="second_attempt_a_transaction"),
    ],
)
def test_given_finish_reply_lost_then_finished_not_stale(
    dynamo_backend: DynamoBackend, finish: Finish, attempt: int, operation: str
) -> None:
    job = claimed(dynamo_backend)
    earlier = []
    if attempt == 2:
        first = execution(job, ExecutionOutcome.RETRYABLE, 503)
        dynamo_backend.jobs.finish(job, Finish(JobStatus.SCHEDULED, 503, "status 503", NOW), [first], NOW)
        job = dynamo_backend.jobs.claim(Member(job.tenant, job.job_id, job.generation + 1), NOW + 1).job
        earlier = [first]
    outcome = (
        ExecutionOutcome.SUCCEEDED if finish.status is JobStatus.SUCCEEDED else ExecutionOutcome.RETRYABLE
    )
    record = execution(job, outcome, finish.status_code)
    dynamo_backend.replies.lose(operation)

    dynamo_backend.jobs.finish(job, finish, [record], NOW + 5)

    after = dynamo_backend.jobs.get(job.tenant, job.job_id)
    assert (after.status, after.last_status_code, after.lease_expires_at_ms, after.attempt) == (
        finish.status,
        finish.status_code,
        None,
        attempt,
    )
    assert after.generation == job.generation + (finish.status is JobStatus.SCHEDULED)
    assert dynamo_backend.jobs.executions(job.tenant, job.job_id) == [*earlier, record]
    assert dynamo_backend.replies.take(operation) is None  # the planned loss met this write


def test_given_finish_reply_lost_and_the_retry_claimed_before_the_repeat_then_still_finished(
    dynamo_backend: DynamoBackend,
) -> None:
    job = claimed(dynamo_backend)
    retry_due_ms = NOW + 10
    retry = job.with_changes(generation=job.generation + 1)

    dynamo_backend.replies.lose(
        "update_item", between=lambda: dynamo_backend.jobs.claim(retry.member(), retry_due_ms)
    )
    dynamo_backend.jobs.finish(job, Finish(JobStatus.SCHEDULED, 503, "status 503", retry_due_ms), [], NOW + 5)

    after = dynamo_backend.jobs.get(job.tenant, job.job_id)
    assert (after.status, after.generation, after.attempt) == (JobStatus.RUNNING, 2, 2)


def test_given_finish_of_an_attempt_that_lost_the_job_then_still_stale(dynamo_backend: DynamoBackend) -> None:
    first = claimed(dynamo_backend, NOW)
    dynamo_backend.jobs.claim(first.member(), NOW + LEASE_MS + 1)  # taken over

    with pytest.raises(StaleState):
        dynamo_backend.jobs.finish(first, Finish(JobStatus.SUCCEEDED, 200, None), [], NOW + LEASE_MS + 2)


def test_given_cancel_reply_lost_then_cancelled_not_conflict(dynamo_backend: DynamoBackend) -> None:
    job = stored(dynamo_backend)
    dynamo_backend.replies.lose("update_item")

    cancelled = dynamo_backend.jobs.cancel(job.tenant, job.job_id, NOW + 3)

    assert cancelled == job.with_changes(status=JobStatus.CANCELLED, updated_ms=NOW + 3)
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == cancelled
    with pytest.raises(StaleState, match="is cancelled"):  # another cancel is still refused
        dynamo_backend.jobs.cancel(job.tenant, job.job_id, NOW + 4)


def test_given_replay_reply_lost_then_replayed_once_not_conflict(dynamo_backend: DynamoBackend) -> None:
    job = claimed(dynamo_backend)
    dynamo_backend.jobs.finish(job, Finish(JobStatus.DEAD, 410, "status 410"), [], NOW + 1)
    dynamo_backend.replies.lose("update_item")

    replayed = dynamo_backend.jobs.replay(job.tenant, job.job_id, job.shard, NOW + 9)

    assert (replayed.status, replayed.generation, replayed.due_ms) == (JobStatus.SCHEDULED, 2, NOW + 9)
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == replayed
    with pytest.raises(StaleState, match="is scheduled"):
        dynamo_backend.jobs.replay(job.tenant, job.job_id, job.shard, NOW + 10)


def test_given_run_now_reply_lost_then_moved_once_not_conflict(dynamo_backend: DynamoBackend) -> None:
    job = stored(dynamo_backend)
    dynamo_backend.replies.lose("update_item")

    moved = dynamo_backend.jobs.run_now(job.tenant, job.job_id, job.generation, job.shard, NOW + 9)

    assert (moved.generation, moved.due_ms) == (job.generation + 1, NOW + 9)  # one generation, not two
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == moved


def test_given_job_already_dead_for_the_reason_when_marked_dead_again_then_done_not_stale(
    dynamo_backend: DynamoBackend,
) -> None:
    """Its reply lost, or a caller that failed after it: the job is what the call asks for."""
    job = stored(dynamo_backend)
    dynamo_backend.replies.lose("update_item")

    dynamo_backend.jobs.mark_dead(job.member(), "deliveries_exhausted", NOW + 7)
    dynamo_backend.jobs.mark_dead(job.member(), "deliveries_exhausted", NOW + 8)

    after = dynamo_backend.jobs.get(job.tenant, job.job_id)
    assert (after.status, after.last_error, after.updated_ms) == (
        JobStatus.DEAD,
        "deliveries_exhausted",
        NOW + 7,
    )
    with pytest.raises(StaleState):  # another reason, or another generation, is not this call's
        dynamo_backend.jobs.mark_dead(job.member(), "other", NOW + 9)
    with pytest.raises(StaleState):
        dynamo_backend.jobs.mark_dead(Member(job.tenant, job.job_id, 2), "deliveries_exhausted", NOW + 9)
