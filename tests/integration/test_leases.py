"""Leases and heartbeats: never early, never two live attempts, a dead executor's jobs back within seconds.

Real redis-server, moto's server and loopback receivers; the test settings'
short timings (tests/conftest.py) unless a test says otherwise.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.index import RedisIndex
from hookline.domain import constants
from hookline.domain.callbacks import CallbackRequest, CallbackResult
from hookline.domain.errors import NotYet
from hookline.domain.models import JobRequest, JobStatus, Member
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container, dynamodb_client
from hookline.usecases.execute import Disposition
from hookline.usecases.recover import Recovered, Recoverer
from tests.fakes.clock import FrozenClock
from tests.support.dynamo_faults import DynamoFaultProxy, FailingUpdates
from tests.support.receiver import Receiver, Reply
from tests.support.stack import running_loops, wait_until

pytestmark = pytest.mark.integration

TENANT = "acme"
RENEWAL = "SET #lease = :lease"  # the heartbeat's lease renewal (job_store.renew_lease)


def submit(container: Container, receiver: Receiver, path: str = "/hook", **fields: object) -> str:
    request = JobRequest.model_validate({"url": receiver.url(path), "body": "x", **fields})
    return container.submitter.submit(TENANT, request).job.job_id


class TakeOverDuringCall:
    """A callback client that lets another executor take the job over while the callback runs."""

    def __init__(self, inner: Any, take_over: Any) -> None:
        self._inner = inner
        self._take_over = take_over

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def deliver(self, request: CallbackRequest) -> CallbackResult:
        self._take_over()
        result: CallbackResult = self._inner.deliver(request)
        return result


def test_given_attempt_taken_over_during_its_callback_when_it_schedules_a_retry_then_nothing_is_indexed(
    settings: Settings, container: Container, receiver: Receiver
) -> None:
    receiver.script("/busy", [Reply(503, headers={"Retry-After": "45"})])
    job_id = submit(container, receiver, "/busy")
    start_ms = container.clock.now_ms()
    stalled = Container(settings, clock=FrozenClock(start_ms), consumer="stalled-executor")
    member = container.jobs.get(TENANT, job_id).member()

    def take_over() -> None:
        # For everyone else the stalled executor's lease (claimed at start_ms) has long run out.
        container.jobs.claim(member, start_ms + 600_000)

    stalled.__dict__["callbacks"] = TakeOverDuringCall(stalled.callbacks, take_over)
    try:
        (disposition,) = stalled.executor.drain()
    finally:
        stalled.close()

    # Before the fix the stale attempt wrote its retry (due in 45 s) into the due index first, over the
    # new owner's: the job would have fired when the stale executor said, not when DynamoDB says.
    assert disposition is Disposition.LOST_HOLD
    assert container.redis.zcard(redis_keys.due_key(0)) == 0
    job = container.jobs.get(TENANT, job_id)
    assert (job.status, job.attempt, job.generation) == (JobStatus.RUNNING, 2, 1)


def test_given_entry_on_the_stream_before_its_due_time_when_read_then_it_fires_at_the_due_time(
    container: Container, receiver: Receiver
) -> None:
    job_id = submit(container, receiver, delay_s=1.5)
    job = container.jobs.get(TENANT, job_id)
    # A copy of the member on the ready stream now (as a stale executor's early index would put it).
    container.index.index(job.member(), job.shard, container.clock.now_ms(), container.clock.now_ms())

    with running_loops(container):
        receiver.wait_for(1, timeout_s=6)
        wait_until(lambda: container.jobs.get(TENANT, job_id).status is JobStatus.SUCCEEDED, timeout_s=3)
        time.sleep(0.3)  # room for a second delivery, were the due copy delivered as well

    (request,) = receiver.requests
    assert request.received_ms >= job.due_ms


def test_given_scheduled_job_when_claimed_before_due_then_not_yet_until_the_due_time(
    container: Container, receiver: Receiver
) -> None:
    job = container.jobs.get(TENANT, submit(container, receiver, delay_s=60))

    with pytest.raises(NotYet) as refused:
        container.jobs.claim(job.member(), job.due_ms - 1)

    assert refused.value.retry_at_ms == job.due_ms
    assert container.jobs.claim(job.member(), job.due_ms).job.attempt == 1


class RecordingCallbacks:
    """Records each request and when it was sent, then delivers it for real."""

    def __init__(self, inner: Any, clock: Any) -> None:
        self._inner = inner
        self._clock = clock
        self.sent: list[tuple[int, CallbackRequest]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def deliver(self, request: CallbackRequest) -> CallbackResult:
        self.sent.append((self._clock.now_ms(), request))
        result: CallbackResult = self._inner.deliver(request)
        return result


class SlowSigningSecrets:
    """The keys table with a signing-secret read that takes delay_s (a slow DynamoDB read)."""

    def __init__(self, inner: Any, delay_s: float) -> None:
        self._inner = inner
        self._delay_s = delay_s

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def get_signing_secrets(self, tenant: str) -> Any:
        time.sleep(self._delay_s)
        return self._inner.get_signing_secrets(tenant)


def test_given_slow_secret_lookup_and_no_renewal_when_callback_starts_then_its_timeout_fits_the_lease(
    settings: Settings, receiver: Receiver
) -> None:
    three_s_lease = dataclasses.replace(settings, lease_ms=3_000)
    container = Container(three_s_lease, consumer="test-executor")
    try:
        job_id = submit(container, receiver, timeout_s=5)
        recording = RecordingCallbacks(container.callbacks, container.clock)
        container.__dict__["callbacks"] = recording
        container.__dict__["keys"] = SlowSigningSecrets(container.keys, 0.5)
        executor = container.executor
        (entry,) = container.index.read_ready([0], 10, 100)

        disposition = executor.process(entry)  # alone: no heartbeat renews the lease

        assert disposition is Disposition.SUCCEEDED
        lease_ms = container.jobs.executions(TENANT, job_id)[0].started_ms + three_s_lease.lease_ms
        ((sent_ms, request),) = recording.sent
        # Before the fix: the job's 5 s, counted from after the lookups, past the end of the 3 s lease.
        assert request.timeout_s * 1000 <= lease_ms - sent_ms - three_s_lease.lease_margin_ms + 5
    finally:
        container.close()


def test_given_lease_used_up_before_the_call_when_renewals_fail_then_no_callback_and_entry_left_pending(
    receiver: Receiver, settings: Settings, dynamo_faults: DynamoFaultProxy
) -> None:
    renewals = dynamo_faults.failing_updates = FailingUpdates(RENEWAL)  # DynamoDB answers every renewal 500
    container = Container(dataclasses.replace(settings, aws_endpoint_url=dynamo_faults.url), consumer="test")
    try:
        job_id = submit(container, receiver, timeout_s=5)
        lookup_s = (settings.lease_ms - settings.lease_margin_ms) / 1000
        container.__dict__["keys"] = SlowSigningSecrets(container.keys, lookup_s)

        (disposition,) = container.executor.drain()

        # Before the fix the callback started anyway, after its lease: another executor could be delivering
        # it.
        assert receiver.requests == []
        assert disposition is Disposition.LEFT_PENDING
        assert renewals.failed >= 1
        stream = redis_keys.ready_stream(0)
        assert container.redis.xpending(stream, redis_keys.CONSUMER_GROUP)["pending"] == 1
        assert container.jobs.get(TENANT, job_id).status is JobStatus.RUNNING
    finally:
        container.close()


def test_given_dynamodb_client_then_calls_time_out_in_seconds_with_few_retries(settings: Settings) -> None:
    client = dynamodb_client(settings)
    try:
        config = client.meta.config
        # botocore's defaults are 60 s each: a brownout would hold a thread far past a 10 s lease.
        assert (config.connect_timeout, config.read_timeout) == (2.0, 5.0)
        assert config.retries == {"mode": "standard", "total_max_attempts": 3}  # retries included
    finally:
        client.close()


def test_given_callback_longer_than_lease_and_idle_time_when_recoveries_run_then_delivered_once(
    container: Container, receiver: Receiver, settings: Settings
) -> None:
    # Six times the idle time after which an entry is re-delivered, and one and a half leases.
    callback_s = 6 * settings.redeliver_after_ms / 1000
    assert callback_s * 1000 >= 1.5 * settings.lease_ms
    receiver.script("/slow", [Reply(200, delay_s=callback_s)])
    job_id = submit(container, receiver, "/slow", timeout_s=10)
    # The reaper's recovery step alone, run far more often than the reaper would run it.
    recoverer = Recoverer(
        container.jobs,
        container.index,
        container.engine_clock,
        container.shards,
        container.metrics,
        settings.redeliver_after_ms,
        settings.max_deliveries,
        readd_grace_ms=constants.READD_GRACE_MS,
    )
    recovered = Recovered()
    stop = threading.Event()

    def reap_often() -> None:
        while not stop.wait(0.1):
            recoverer.recover_shard(0, recovered)

    with running_loops(container):
        receiver.wait_for(1, timeout_s=5)
        member = container.jobs.get(TENANT, job_id).member()
        reaper = threading.Thread(target=reap_often, daemon=True)
        reaper.start()
        time.sleep(callback_s / 2)
        # A second copy of the entry meanwhile (as a re-index would make): its claim must wait.
        container.index.index(member, 0, container.clock.now_ms(), container.clock.now_ms())
        wait_until(lambda: container.jobs.get(TENANT, job_id).status is JobStatus.SUCCEEDED, timeout_s=10)
        # The copy comes back when the (renewed) lease it saw ends, finds the job done and is dropped.
        wait_until(lambda: container.redis.xlen(redis_keys.ready_stream(0)) == 0, timeout_s=5)
        wait_until(lambda: container.redis.zcard(redis_keys.due_key(0)) == 0, timeout_s=5)
        stop.set()
        reaper.join(timeout=5)

    assert len(receiver.requests) == 1, [r.path for r in receiver.requests]
    assert recovered.redelivered == 0  # the live attempt's entry was never idle long enough
    job = container.jobs.get(TENANT, job_id)
    assert (job.attempt, job.status) == (1, JobStatus.SUCCEEDED)


def test_given_entries_pending_under_a_gone_executor_when_fan_out_counts_backlog_then_only_unread_ones(
    container: Container,
) -> None:
    container.executor  # noqa: B018 - building it creates the consumer groups
    for i in range(5):
        container.index.index(Member(TENANT, f"job{i}", 1), 0, 0, 1)
    taken = RedisIndex(container.redis, consumer="gone-executor").read_ready([0], 3, 100)
    assert len(taken) == 3  # pending under an executor that will never ack them

    # Before the fix: 5 (the in-flight index), so a crashed executor's entries started more executors.
    assert container.fan_out.backlog() == 2


def test_given_redis_cannot_tell_the_lag_when_counting_unread_entries_then_length_less_pending(
    container: Container,
) -> None:
    container.executor  # noqa: B018 - building it creates the consumer groups
    for i in range(5):
        container.index.index(Member(TENANT, f"job{i}", 1), 0, 0, 1)
    RedisIndex(container.redis, consumer="gone-executor").read_ready([0], 2, 100)
    stream = redis_keys.ready_stream(0)
    ((newest, _),) = container.redis.xrevrange(stream, count=1)
    container.redis.xdel(stream, newest)  # a deleted unread entry: Redis reports the lag as unknown
    (group,) = container.redis.xinfo_groups(stream)
    assert group["lag"] is None

    assert container.index.undelivered(0) == 2
