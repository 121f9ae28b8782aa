"""The whole job lifecycle on a real redis-server, moto's server and a real loopback receiver."""

from __future__ import annotations

import pytest
from standardwebhooks import Webhook

from hookline.adapters.redis import keys as redis_keys
from hookline.domain.models import ExecutionOutcome, JobRequest, JobStatus
from hookline.plumbing.wiring import Container
from tests.support.receiver import Receiver, Reply
from tests.support.stack import running_loops, wait_until

pytestmark = pytest.mark.integration

TENANT = "acme"


def submit(container: Container, receiver: Receiver, path: str = "/hook", **fields: object) -> str:
    request = JobRequest.model_validate({"url": receiver.url(path), "body": {"path": path}, **fields})
    return container.submitter.submit(TENANT, request).job.job_id


def test_given_delayed_job_when_due_then_fires_within_a_second_and_never_early(
    container: Container, receiver: Receiver
) -> None:
    job_id = submit(container, receiver, delay_s=1.0)
    due_ms = container.jobs.get(TENANT, job_id).due_ms

    with running_loops(container):
        (request,) = receiver.wait_for(1, timeout_s=5)

    assert due_ms <= request.received_ms < due_ms + 1000
    job = container.jobs.get(TENANT, job_id)
    assert (job.status, job.attempt) == (JobStatus.SUCCEEDED, 1)


def test_given_two_failures_when_retried_then_succeeds_on_third_attempt(
    container: Container, receiver: Receiver
) -> None:
    receiver.script("/flaky", [Reply(500), Reply(503)])
    job_id = submit(container, receiver, "/flaky", min_backoff_s=0.05, max_backoff_s=0.1)

    with running_loops(container):
        receiver.wait_for(3, timeout_s=10)
        wait_until(lambda: container.jobs.get(TENANT, job_id).status is JobStatus.SUCCEEDED, 5)

    job = container.jobs.get(TENANT, job_id)
    assert (job.attempt, job.generation, job.last_status_code) == (3, 3, 200)
    executions = container.jobs.executions(TENANT, job_id)
    assert [(e.attempt, e.outcome, e.status_code) for e in executions] == [
        (1, ExecutionOutcome.RETRYABLE, 500),
        (2, ExecutionOutcome.RETRYABLE, 503),
        (3, ExecutionOutcome.SUCCEEDED, 200),
    ]
    assert [r.headers["hookline-attempt"] for r in receiver.requests] == ["1", "2", "3"]
    assert {r.headers["webhook-id"] for r in receiver.requests} == {job_id}


def test_given_always_failing_receiver_when_attempts_run_out_then_dead(
    container: Container, receiver: Receiver
) -> None:
    receiver.script("/down", [Reply(500)] * 3)
    job_id = submit(container, receiver, "/down", max_attempts=3, min_backoff_s=0.05, max_backoff_s=0.1)

    with running_loops(container):
        wait_until(lambda: container.jobs.get(TENANT, job_id).status is JobStatus.DEAD, 10)

    assert len(receiver.requests) == 3
    assert container.jobs.get(TENANT, job_id).attempt == 3
    dead = container.redis.xrange(redis_keys.dead_stream(0))
    assert [fields[b"m"].decode().split("/")[1] for _, fields in dead] == [job_id]
    assert container.redis.zcard(redis_keys.due_key(0)) == 0
    assert container.redis.zcard(redis_keys.inflight_key(0)) == 0


def test_given_404_when_delivered_then_dead_at_once(container: Container, receiver: Receiver) -> None:
    receiver.script("/gone", [Reply(404)])
    job_id = submit(container, receiver, "/gone", max_attempts=5)

    with running_loops(container):
        wait_until(lambda: container.jobs.get(TENANT, job_id).status is JobStatus.DEAD, 5)

    job = container.jobs.get(TENANT, job_id)
    assert (job.attempt, job.last_status_code, len(receiver.requests)) == (1, 404, 1)
    assert [e.outcome for e in container.jobs.executions(TENANT, job_id)] == [ExecutionOutcome.PERMANENT]


def test_given_every_callback_when_received_then_signature_verifies(
    container: Container, receiver: Receiver
) -> None:
    job_ids = {submit(container, receiver, f"/signed/{i}") for i in range(5)}

    with running_loops(container):
        requests = receiver.wait_for(5, timeout_s=5)

    secrets = container.keys.get_signing_secrets(TENANT)
    assert secrets is not None
    verifier = Webhook(secrets.current)
    for request in requests:
        payload = verifier.verify(request.body, request.headers)
        assert payload == {"path": request.path}
    assert {r.headers["webhook-id"] for r in requests} == job_ids
