"""Cancelled DynamoDB transactions (finish, an idempotent create), fake and moto alike.

A cancellation is a refused condition only when a reason is ConditionalCheckFailed, and for finish only at
the job item (StaleState: the attempt lost the job). Transient reasons (a conflicting transaction, throttling,
an internal error) change nothing: the transaction is sent again up to ATTEMPTS times, then DependencyDown,
never StaleState. Any other reason is an error that is neither. The cancellations are injected:
DynamoBackend.transactions.plan(reason, count, at).

A finish is a transaction only when it records an attempt after the first (the executions table's items):
these tests finish a job's second attempt. A first attempt's finish is one UpdateItem, never cancelled so.
"""

from __future__ import annotations

import pytest

from hookline.adapters.dynamo.transactions import ATTEMPTS, CONDITION_FAILED
from hookline.domain.delivery import Finish
from hookline.domain.errors import DependencyDown, HooklineError, NotFound, StaleState
from hookline.domain.models import ExecutionOutcome, Job, JobStatus, Member
from tests.contract.conftest import DynamoBackend
from tests.contract.test_job_store import NOW, claimed, execution, make_job

TRANSIENT = ["TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "InternalServerError"]
SUCCESS = Finish(JobStatus.SUCCEEDED, 200, None)


def second_attempt(backend: DynamoBackend) -> Job:
    """Returns a job running its second attempt (the first retried), whose finish is a transaction."""
    job = claimed(backend)
    backend.jobs.finish(job, Finish(JobStatus.SCHEDULED, 503, "status 503", NOW), [], NOW)
    return backend.jobs.claim(Member(job.tenant, job.job_id, job.generation + 1), NOW + 1).job


def test_given_a_first_attempt_when_finished_then_one_write_that_no_transaction_cancellation_reaches(
    dynamo_backend: DynamoBackend,
) -> None:
    job = claimed(dynamo_backend)
    record = execution(job, ExecutionOutcome.SUCCEEDED, 200)
    dynamo_backend.transactions.plan("ThrottlingError", count=1)

    dynamo_backend.jobs.finish(job, SUCCESS, [record], NOW + 5)

    assert (dynamo_backend.transactions.cancelled, dynamo_backend.transactions.remaining) == (0, 1)
    assert dynamo_backend.jobs.get(job.tenant, job.job_id).status is JobStatus.SUCCEEDED
    assert dynamo_backend.jobs.executions(job.tenant, job.job_id) == [record]
    dynamo_backend.transactions.plan("ThrottlingError", count=0)


@pytest.mark.parametrize("reason", TRANSIENT)
def test_given_finish_cancelled_for_a_transient_reason_fewer_times_than_the_attempts_then_written_once(
    dynamo_backend: DynamoBackend, reason: str
) -> None:
    job = second_attempt(dynamo_backend)
    record = execution(job, ExecutionOutcome.SUCCEEDED, 200)
    dynamo_backend.transactions.plan(reason, count=ATTEMPTS - 1)

    dynamo_backend.jobs.finish(job, SUCCESS, [record], NOW + 5)

    assert (dynamo_backend.transactions.cancelled, dynamo_backend.transactions.remaining) == (ATTEMPTS - 1, 0)
    after = dynamo_backend.jobs.get(job.tenant, job.job_id)
    assert (after.status, after.attempt, after.lease_expires_at_ms) == (JobStatus.SUCCEEDED, 2, None)
    assert dynamo_backend.jobs.executions(job.tenant, job.job_id) == [record]


def test_given_finish_cancelled_transiently_on_every_attempt_then_dependency_down_and_nothing_written(
    dynamo_backend: DynamoBackend,
) -> None:
    job = second_attempt(dynamo_backend)
    dynamo_backend.transactions.plan("ThrottlingError", count=ATTEMPTS + 1)

    with pytest.raises(DependencyDown) as raised:
        dynamo_backend.jobs.finish(job, SUCCESS, [execution(job, ExecutionOutcome.SUCCEEDED, 200)], NOW + 5)

    assert not isinstance(raised.value, StaleState)
    assert (dynamo_backend.transactions.cancelled, dynamo_backend.transactions.remaining) == (ATTEMPTS, 1)
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == job  # still held by this attempt
    assert dynamo_backend.jobs.executions(job.tenant, job.job_id) == []


@pytest.mark.parametrize(
    ("at", "raised"),
    [
        pytest.param(-1, StaleState, id="given_the_job_items_condition_then_stale"),
        pytest.param(0, DependencyDown, id="given_an_execution_record_then_dependency_down_not_stale"),
    ],
)
def test_given_finish_cancelled_with_a_failed_condition_then_only_the_job_item_means_stale(
    dynamo_backend: DynamoBackend, at: int, raised: type[Exception]
) -> None:
    job = second_attempt(dynamo_backend)
    dynamo_backend.transactions.plan(CONDITION_FAILED, count=1, at=at)

    with pytest.raises(raised) as caught:
        dynamo_backend.jobs.finish(job, SUCCESS, [execution(job, ExecutionOutcome.SUCCEEDED, 200)], NOW + 5)

    assert type(caught.value) is raised  # not a subclass: StaleState and DependencyDown are apart
    assert dynamo_backend.transactions.cancelled == 1  # a failed condition is never sent again
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == job
    assert dynamo_backend.jobs.executions(job.tenant, job.job_id) == []


def test_given_finish_cancelled_for_a_reason_waiting_cannot_heal_then_neither_stale_nor_dependency_down(
    dynamo_backend: DynamoBackend,
) -> None:
    job = second_attempt(dynamo_backend)
    dynamo_backend.transactions.plan("ValidationError", count=ATTEMPTS)

    with pytest.raises(Exception) as raised:  # botocore's ClientError, re-raised (the fake's stand-in)
        dynamo_backend.jobs.finish(job, SUCCESS, [execution(job, ExecutionOutcome.SUCCEEDED, 200)], NOW + 5)

    assert not isinstance(raised.value, HooklineError)
    assert dynamo_backend.transactions.cancelled == 1
    assert dynamo_backend.jobs.get(job.tenant, job.job_id) == job


@pytest.mark.parametrize("reason", TRANSIENT)
def test_given_idempotent_create_cancelled_transiently_a_few_times_then_created(
    dynamo_backend: DynamoBackend, reason: str
) -> None:
    job = make_job(dynamo_backend, idempotency_key="k")
    dynamo_backend.transactions.plan(reason, count=2)

    assert dynamo_backend.jobs.create(job, "h1", NOW) == (job, True)
    assert dynamo_backend.transactions.cancelled == 2
    assert dynamo_backend.jobs.create(make_job(dynamo_backend, idempotency_key="k"), "h1", NOW) == (
        job,
        False,
    )


def test_given_idempotent_create_cancelled_transiently_throughout_then_dependency_down_not_a_conflict(
    dynamo_backend: DynamoBackend,
) -> None:
    job = make_job(dynamo_backend, idempotency_key="k")
    dynamo_backend.transactions.plan("TransactionConflict", count=ATTEMPTS)

    with pytest.raises(DependencyDown):
        dynamo_backend.jobs.create(job, "h1", NOW)

    with pytest.raises(NotFound):
        dynamo_backend.jobs.get(job.tenant, job.job_id)
    assert dynamo_backend.jobs.create(job, "h1", NOW) == (job, True)  # nothing was taken: a retry works


def test_given_create_refused_by_a_condition_then_the_marker_decides(dynamo_backend: DynamoBackend) -> None:
    first = make_job(dynamo_backend, idempotency_key="k")
    dynamo_backend.jobs.create(first, "h1", NOW)
    dynamo_backend.transactions.plan(CONDITION_FAILED, count=2, at=0)

    # The key's marker names the earlier job of the same request: that job, not created.
    assert dynamo_backend.jobs.create(make_job(dynamo_backend, idempotency_key="k"), "h1", NOW) == (
        first,
        False,
    )
    # No marker for the key (the refusal came from elsewhere): the caller is asked to retry.
    fresh = make_job(dynamo_backend, idempotency_key="other")
    with pytest.raises(StaleState):
        dynamo_backend.jobs.create(fresh, "h1", NOW)
    with pytest.raises(NotFound):
        dynamo_backend.jobs.get(fresh.tenant, fresh.job_id)
