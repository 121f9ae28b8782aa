"""An executor whose host clock runs 30 s ahead or behind: leases and retry times follow Redis's clock.

Leases, due times and retry times are compared across hosts, so each engine process reads the Redis
server's time (adapters/redis/server_clock.py), never its own host's. Real redis-server (or cluster), moto's
server and a loopback receiver.
"""

from __future__ import annotations

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from hookline.adapters.redis.server_clock import RedisTimeClock
from hookline.domain.clock import SystemClock
from hookline.domain.models import JobRequest, JobStatus
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from hookline.usecases.execute import Disposition
from tests.support.receiver import Receiver, Reply

pytestmark = pytest.mark.integration

TENANT = "acme"
SKEW_MS = 30_000
# Loopback Redis answers in well under this; the offset is off by half a round trip at most.
TOLERANCE_MS = 1_000


class SkewedClock(SystemClock):
    """A host clock running skew_ms ahead (negative: behind) of the true time."""

    def __init__(self, skew_ms: int) -> None:
        self.skew_ms = skew_ms

    def now_ms(self) -> int:
        """Returns the host's (wrong) time."""
        return super().now_ms() + self.skew_ms


def redis_now_ms(client: redis.Redis) -> int:
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


@pytest.mark.parametrize("skew_ms", [SKEW_MS, -SKEW_MS])
def test_given_a_host_clock_off_by_30_s_then_the_server_clock_reads_redis_time(
    redis_client: redis.Redis, skew_ms: int
) -> None:
    host = SkewedClock(skew_ms)
    clock = RedisTimeClock(redis_client, host)

    read_ms = clock.now_ms()
    after_ms = redis_now_ms(redis_client)

    assert after_ms - TOLERANCE_MS < read_ms <= after_ms  # never ahead of Redis's clock
    assert abs(read_ms - host.now_ms() + skew_ms) < TOLERANCE_MS  # the offset corrects the skew


def test_given_redis_unreachable_then_the_server_clock_reads_the_host_clock_and_does_not_retry_at_once() -> (
    None
):
    unreachable = redis.Redis(
        host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0)
    )
    host = SkewedClock(SKEW_MS)
    clock = RedisTimeClock(unreachable, host)

    first = clock.now_ms()
    second = clock.now_ms()

    assert abs(first - host.now_ms()) < TOLERANCE_MS
    assert 0 <= second - first < 100  # the second reading did not try Redis again


@pytest.mark.parametrize("skew_ms", [SKEW_MS, -SKEW_MS])
def test_given_an_executor_host_clock_off_by_30_s_then_its_attempt_and_retry_times_follow_redis_time(
    settings: Settings, container: Container, receiver: Receiver, redis_client: redis.Redis, skew_ms: int
) -> None:
    receiver.script("/hook", [Reply(503, headers={"Retry-After": "5"})])
    request = JobRequest.model_validate({"url": receiver.url("/hook"), "body": "x", "max_attempts": 3})
    job = container.submitter.submit(TENANT, request).job
    skewed = Container(settings, clock=SkewedClock(skew_ms), consumer="skewed-executor")
    try:
        before_ms = redis_now_ms(redis_client)
        (disposition,) = skewed.executor.drain()
        after_ms = redis_now_ms(redis_client)
    finally:
        skewed.close()

    assert disposition is Disposition.RETRIED
    stored = container.jobs.get(TENANT, job.job_id)
    assert stored.status is JobStatus.SCHEDULED
    # The retry is due 5 s (Retry-After) after the attempt on Redis's clock: 30 s behind would fire it
    # early, 30 s ahead late.
    assert before_ms + 5_000 - TOLERANCE_MS <= stored.due_ms <= after_ms + 5_000 + TOLERANCE_MS
    (execution,) = container.jobs.executions(TENANT, job.job_id)
    assert before_ms - TOLERANCE_MS <= execution.started_ms <= after_ms + TOLERANCE_MS


def test_given_an_executor_host_clock_30_s_ahead_then_it_does_not_take_over_a_lease_still_held(
    settings: Settings, container: Container, receiver: Receiver
) -> None:
    request = JobRequest.model_validate({"url": receiver.url("/hook"), "body": "x"})
    job = container.submitter.submit(TENANT, request).job
    claim = container.jobs.claim(job.member(), container.clock.now_ms())  # an attempt holds the job now
    # The job's entry (unread: as after a re-delivery) is read by the skewed executor.
    skewed = Container(settings, clock=SkewedClock(SKEW_MS), consumer="skewed-executor")
    try:
        dispositions = skewed.executor.drain()
    finally:
        skewed.close()

    assert dispositions == [Disposition.DEFERRED]
    assert receiver.requests == []
    held = container.jobs.get(TENANT, job.job_id)
    assert (held.status, held.attempt, held.lease_expires_at_ms) == (
        JobStatus.RUNNING,
        claim.job.attempt,
        claim.job.lease_expires_at_ms,
    )
