"""The job store's DynamoDB calls, counted: what each operation sends, whatever client carries it.

The store runs over in-process moto through a recording wrapper, as a test that injects faults around the
client runs it: each operation must send the same calls, with the same arguments, as over the JSON client
the wiring builds (a refused conditional write reads nothing more when the refusal carries the item).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from hookline.adapters.dynamo.job_store import DynamoJobStore
from hookline.domain.delivery import Finish
from hookline.domain.errors import NotYet, StaleState
from hookline.domain.models import Execution, ExecutionOutcome, Job, JobStatus
from hookline_local.template import create_tables, load_template
from tests.support.aws import Boto3WithBudget, patch_fake_credentials
from tests.support.jobs import scheduled_job

NOW = 1_700_000_000_000
JOBS = "jobs"
EXECUTIONS = "executions"
TABLES = {"JobsTable": JOBS, "ExecutionsTable": EXECUTIONS, "ApiKeysTable": "keys"}


class Recording:
    """Passes every call to the client it wraps and records (method, timeout_s) for each."""

    def __init__(self, client: Any, keep_refused_item: bool = True) -> None:
        self._client = client
        self._keep_refused_item = keep_refused_item
        self.calls: list[tuple[str, float | None]] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)

        def call(**params: Any) -> Any:
            self.calls.append((name, params.get("timeout_s")))
            try:
                return method(**params)
            except ClientError as error:
                if not self._keep_refused_item:
                    error.response.pop("Item", None)  # as a client or emulator that gives none
                raise

        return call

    def taken(self) -> list[str]:
        """Returns the methods called since the last taken(), and forgets them."""
        names = [name for name, _ in self.calls]
        self.calls.clear()
        return names


@pytest.fixture
def boto3_client(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    patch_fake_credentials(monkeypatch)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_tables(client, load_template(), TABLES)
        yield client


def recorded_store(client: Any, keep_refused_item: bool = True) -> tuple[DynamoJobStore, Recording]:
    recording = Recording(Boto3WithBudget(client), keep_refused_item)
    return DynamoJobStore(recording, JOBS, EXECUTIONS, lease_ms=10_000), recording


def test_given_a_wrapped_client_when_a_lease_is_renewed_with_a_budget_then_the_client_is_given_it(
    boto3_client: Any,
) -> None:
    store, recording = recorded_store(boto3_client)
    job, _ = store.create(scheduled_job(NOW), "", NOW)
    held = store.claim(job.member(), NOW).job
    recording.calls.clear()

    store.renew_lease(held, NOW + 20_000, timeout_ms=2_500)
    store.renew_lease(held, NOW + 30_000)

    assert recording.calls == [("update_item", 2.5), ("update_item", None)]


def test_given_each_operation_when_it_runs_then_it_sends_one_call_and_a_refusal_reads_nothing_more(
    boto3_client: Any,
) -> None:
    store, recording = recorded_store(boto3_client)

    job, created = store.create(scheduled_job(NOW), "", NOW)
    assert created and recording.taken() == ["put_item"]
    keyed, _ = store.create(scheduled_job(NOW, idempotency_key="k1"), "h", NOW)
    assert recording.taken() == ["transact_write_items"]
    again, created = store.create(scheduled_job(NOW, idempotency_key="k1"), "h", NOW)
    # the refused transaction, the key's marker, the earlier job
    assert (again.job_id, created) == (keyed.job_id, False)
    assert recording.taken() == ["transact_write_items", "get_item", "get_item"]

    with pytest.raises(StaleState):
        store.claim(scheduled_job(NOW).member(), NOW)  # no such job
    # A refusal without an item is also what an emulator that returns none gives: one consistent read.
    assert recording.taken() == ["update_item", "get_item"]
    later, _ = store.create(scheduled_job(NOW + 60_000), "", NOW)
    recording.taken()
    with pytest.raises(NotYet):
        store.claim(later.member(), NOW)
    assert recording.taken() == ["update_item"]

    held = store.claim(job.member(), NOW).job
    assert recording.taken() == ["update_item"]
    store.finish(held, Finish(JobStatus.SUCCEEDED, 200, None), [], NOW + 10)
    assert recording.taken() == ["update_item"]
    with pytest.raises(StaleState):
        store.cancel(job.tenant, job.job_id, NOW + 20)
    assert recording.taken() == ["update_item"]
    store.cancel(later.tenant, later.job_id, NOW + 20)
    assert recording.taken() == ["update_item"]
    with pytest.raises(StaleState):
        store.mark_dead(later.member(), "attempts_exhausted", NOW + 30)
    assert recording.taken() == ["update_item"]


def test_given_a_refusal_without_the_item_when_a_claim_is_refused_then_one_consistent_read_tells_why(
    boto3_client: Any,
) -> None:
    store, recording = recorded_store(boto3_client, keep_refused_item=False)
    later, _ = store.create(scheduled_job(NOW + 60_000), "", NOW)
    recording.taken()

    with pytest.raises(NotYet):
        store.claim(later.member(), NOW)

    assert recording.taken() == ["update_item", "get_item"]


def _record(job: Job, attempt: int) -> Execution:
    return Execution(
        job.tenant, job.job_id, attempt, job.generation, NOW, NOW + 20, ExecutionOutcome.SUCCEEDED, 20, 200
    )


def test_given_a_finish_with_later_attempts_when_sent_then_one_transaction_and_a_lost_hold_one_read_more(
    boto3_client: Any,
) -> None:
    store, recording = recorded_store(boto3_client)
    job, _ = store.create(scheduled_job(NOW), "", NOW)
    first = store.claim(job.member(), NOW).job
    second = store.claim(job.member(), NOW + 10_001).job  # the first attempt's lease ran out: taken over
    recording.taken()

    with pytest.raises(StaleState):
        store.finish(first, Finish(JobStatus.SUCCEEDED, 200, None), [_record(first, 2)], NOW + 10_010)
    assert recording.taken() == ["transact_write_items", "get_item"]

    store.finish(second, Finish(JobStatus.SUCCEEDED, 200, None), [_record(second, 2)], NOW + 10_020)
    assert recording.taken() == ["transact_write_items"]
