"""Poison entries: a ready-stream entry holding no readable delivery is dead-lettered, never fatal."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.domain import constants
from hookline.domain.models import JobRequest, JobStatus
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from hookline.usecases.execute import Disposition
from tests.support.receiver import Receiver

pytestmark = pytest.mark.integration

TENANT = "acme"
READY = redis_keys.ready_stream(0)


class CountingMetrics:
    """Counts what the code under test counts."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def count(self, name: str, value: int = 1) -> None:
        self.counts[name] += value

    def timing_ms(self, name: str, value_ms: float) -> None:
        """Ignores timings."""

    def gauge(self, name: str, value: float) -> None:
        """Ignores levels."""


@pytest.fixture
def counted(settings: Settings) -> Iterator[tuple[Container, CountingMetrics]]:
    metrics = CountingMetrics()
    built = Container(settings, metrics=metrics, consumer="poison-executor")
    yield built, metrics
    built.close()


def dead_reasons(container: Container) -> list[tuple[str, str]]:
    entries = container.redis.xrange(redis_keys.dead_stream(0))
    return [(fields[b"m"].decode(), fields[b"reason"].decode()) for _, fields in entries]


def test_given_malformed_entries_pending_when_reaped_then_dead_lettered_and_the_run_goes_on(
    counted: tuple[Container, CountingMetrics], receiver: Receiver
) -> None:
    container, metrics = counted
    request = JobRequest.model_validate({"url": receiver.url(), "body": "x"})
    job_id = container.submitter.submit(TENANT, request).job.job_id
    container.index.ensure_group(0)
    container.redis.xadd(READY, {"x": "no member"})
    container.redis.xadd(READY, {"m": "not-a-member", "d": "4"})  # out of deliveries, undecodable
    container.redis.xadd(READY, {"m": "t/j/1", "d": "many"})
    container.redis.xadd(READY, {"m": "also/not/a-member", "d": "0"})  # re-added: a reader meets it
    container.redis.xreadgroup(redis_keys.CONSUMER_GROUP, "crashed", {READY: ">"})  # all five now pending
    # Idle past what the reaper waits before re-adding: redeliver_after_ms and the grace its readers get.
    time.sleep((container.settings.redeliver_after_ms + constants.READD_GRACE_MS) / 1000 + 0.1)

    report = container.reaper.run(container.clock.now_ms() + 5_000)

    assert (report.malformed, report.redelivered, report.reconcile_complete) == (3, 2, {0: True})
    assert container.executor.drain() == [Disposition.SUCCEEDED]  # the poison re-added is dropped on read
    assert container.jobs.get(TENANT, job_id).status is JobStatus.SUCCEEDED
    assert sorted(dead_reasons(container)) == [
        ("", "malformed_entry"),
        ("also/not/a-member", "malformed_entry"),
        ("not-a-member", "malformed_entry"),
        ("t/j/1", "malformed_entry"),
    ]
    assert metrics.counts["MalformedEntries"] == 4
    assert container.redis.xpending(READY, redis_keys.CONSUMER_GROUP)["pending"] == 0
