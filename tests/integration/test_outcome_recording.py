"""A cancelled transaction is a lost lease only when the job item's condition failed.

Throttled or conflicting transactions change nothing: the finish is retried, and if DynamoDB keeps refusing
the entry stays pending (never acknowledged with the job still `running`); an idempotent submit answers 503.
A first attempt's finish is one UpdateItem (its record goes into the job item), so the finish cases here
cancel a second attempt's, which writes its record in a transaction with the job.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.api import context
from hookline.domain.models import ExecutionOutcome, JobRequest, JobStatus
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from hookline.usecases.execute import Disposition
from tests.integration.api.conftest import make_key
from tests.support.apigw import ApiClient
from tests.support.dynamo_faults import DynamoFaultProxy, FailingUpdates
from tests.support.receiver import Receiver, Reply

pytestmark = pytest.mark.integration

TENANT = "acme"


def faulty_container(
    settings: Settings, faults: DynamoFaultProxy, reason: str, count: int, at: int = -1
) -> Container:
    """Returns a container behind the fault proxy; its next `count` transactions are cancelled with `reason`.

    The faults are DynamoDB's answers on the wire: the container's own clients (the JSON client on the
    hot path) meet them, retries and all.
    """
    faults.transactions.plan(reason, count, at)
    return Container(dataclasses.replace(settings, aws_endpoint_url=faults.url), consumer="test-executor")


@pytest.fixture
def throttled(settings: Settings, dynamo_faults: DynamoFaultProxy) -> Iterator[Container]:
    """Yields a container whose transactions are all throttled (until the test lifts it)."""
    built = faulty_container(settings, dynamo_faults, "ThrottlingError", count=1_000_000)
    yield built
    built.close()


def pending(container: Container) -> int:
    return int(container.redis.xpending(redis_keys.ready_stream(0), redis_keys.CONSUMER_GROUP)["pending"])


def retried_once(container: Container, receiver: Receiver) -> str:
    """Submits a job whose first attempt answers 503, waits for its retry to be promoted, returns its id."""
    receiver.script("/hook", [Reply(503)])
    request = JobRequest.model_validate(
        {"url": receiver.url(), "body": "x", "timeout_s": 1, "min_backoff_s": 0.05, "max_backoff_s": 0.05}
    )
    job_id = container.submitter.submit(TENANT, request).job.job_id
    assert container.executor.drain() == [Disposition.RETRIED]
    deadline = time.monotonic() + 5
    while container.promoter.tick().moved == 0:
        assert time.monotonic() < deadline, "the retry was never promoted"
        time.sleep(0.02)
    return job_id


TRANSIENT = ["TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "InternalServerError"]


@pytest.mark.parametrize("reason", TRANSIENT)
def test_given_finish_cancelled_twice_for_a_transient_reason_when_delivered_then_retried_and_recorded_once(
    settings: Settings, dynamo_faults: DynamoFaultProxy, receiver: Receiver, reason: str
) -> None:
    container = faulty_container(settings, dynamo_faults, reason, count=0)
    try:
        job_id = retried_once(container, receiver)
        dynamo_faults.transactions.remaining = 2  # the next two transactions (the finish) are cancelled

        (disposition,) = container.executor.drain()

        assert disposition is Disposition.SUCCEEDED
        assert dynamo_faults.transactions.cancelled == 2
        job = container.jobs.get(TENANT, job_id)
        assert (job.status, job.attempt) == (JobStatus.SUCCEEDED, 2)
        assert [e.outcome for e in container.jobs.executions(TENANT, job_id)] == [
            ExecutionOutcome.RETRYABLE,
            ExecutionOutcome.SUCCEEDED,
        ]
        assert len(receiver.requests) == 2
        assert pending(container) == 0
    finally:
        container.close()


def test_given_finish_throttled_throughout_when_delivered_then_entry_left_pending_not_acked_as_lost(
    throttled: Container, dynamo_faults: DynamoFaultProxy, receiver: Receiver
) -> None:
    faults = dynamo_faults.transactions
    faults.remaining = 0
    job_id = retried_once(throttled, receiver)
    faults.remaining = 1_000_000

    (disposition,) = throttled.executor.drain()

    # Before the fix: LOST_HOLD, the entry acknowledged while DynamoDB still said `running`.
    assert disposition is Disposition.LEFT_PENDING
    assert pending(throttled) == 1
    job = throttled.jobs.get(TENANT, job_id)
    assert (job.status, job.attempt) == (JobStatus.RUNNING, 2)
    assert len(receiver.requests) == 2
    assert 2 <= faults.cancelled <= 10  # retried, with a bound


class FailingFinishes(FailingUpdates):
    """Fails (a 500) every UpdateItem that stamps a finish token: a first attempt's finish, alone."""

    def take(self, params: dict[str, Any]) -> bool:
        with self._lock:
            if "#finish_token" not in params.get("UpdateExpression", ""):
                return False
            self.failed += 1
            return True


def test_given_a_first_attempt_s_finish_refused_throughout_when_delivered_then_left_pending_not_lost(
    settings: Settings, dynamo_faults: DynamoFaultProxy, receiver: Receiver
) -> None:
    """A first attempt's finish is one UpdateItem: DynamoDB refusing it (500s, past the client's retries) is
    a dependency down, as a transaction's transient cancellations are, never a lost lease."""
    container = faulty_container(settings, dynamo_faults, "ThrottlingError", count=0)
    try:
        request = JobRequest.model_validate({"url": receiver.url(), "body": "x", "timeout_s": 1})
        job_id = container.submitter.submit(TENANT, request).job.job_id
        failing = dynamo_faults.failing_updates = FailingFinishes()

        (disposition,) = container.executor.drain()

        assert disposition is Disposition.LEFT_PENDING
        assert failing.failed >= 2  # the client's retries, then given up
        assert pending(container) == 1
        job = container.jobs.get(TENANT, job_id)
        assert (job.status, job.attempt) == (JobStatus.RUNNING, 1)
        assert len(receiver.requests) == 1
    finally:
        container.close()


@pytest.fixture
def throttled_api(throttled: Container, dynamo_faults: DynamoFaultProxy) -> Iterator[ApiClient]:
    context.use(throttled)
    faults = dynamo_faults.transactions
    faults.remaining = 0
    client = ApiClient(make_key(throttled))
    faults.remaining = 1_000_000
    yield client


def test_given_idempotent_submit_throttled_throughout_when_posted_then_503_not_409(
    throttled: Container, throttled_api: ApiClient
) -> None:
    answer = throttled_api.post("/v1/jobs", {"url": "http://127.0.0.1:9/hook", "idempotency_key": "k1"})

    assert answer.status == 503, answer.json()
    assert answer.json()["error"]["code"] == "dependency_unavailable"


def test_given_idempotent_submit_throttled_once_when_posted_then_201_and_a_repeat_gets_the_same_job(
    dynamo_faults: DynamoFaultProxy, throttled_api: ApiClient
) -> None:
    dynamo_faults.transactions.remaining = 1
    body = {"url": "http://127.0.0.1:9/hook", "idempotency_key": "k2"}

    first = throttled_api.post("/v1/jobs", body)
    again = throttled_api.post("/v1/jobs", body)

    assert (first.status, again.status) == (201, 200), first.json()
    assert first.json()["id"] == again.json()["id"]
