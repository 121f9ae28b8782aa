"""Fixtures for cron tests on real Redis and moto: containers on one frozen clock, and a tick driver."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from hookline.domain.cron.schedule import ScheduleRequest
from hookline.domain.models import Job
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from tests.fakes.clock import FrozenClock

TENANT = "acme"
T0_MS = int(datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC).timestamp() * 1000)  # 00:00:30Z


def minute(n: int, second: int = 0) -> int:
    """Returns 2026-01-01T00:00:00Z plus n minutes (and seconds), in ms."""
    return T0_MS - 30_000 + n * 60_000 + second * 1000


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(T0_MS)


@pytest.fixture
def frozen(settings: Settings, clock: FrozenClock) -> Iterator[Container]:
    """Yields a container on the frozen clock, wired to the test's Redis and tables."""
    built = Container(settings, clock=clock, consumer="cron-test")
    for shard in built.shards:
        built.index.ensure_group(shard)
    yield built
    built.close()


def request(expression: str = "* * * * *", **fields: object) -> ScheduleRequest:
    """Returns a schedule request calling a public URL (creation checks it; delivery is not run here)."""
    return ScheduleRequest.model_validate(
        {"expression": expression, "job": {"url": "http://127.0.0.1:9/tick", "body": {"n": 1}}, **fields}
    )


def run_until(container: Container, clock: FrozenClock, until_ms: int, step_ms: int = 10_000) -> None:
    """Advances the clock in steps up to until_ms, letting the promoter finish every tick's work."""
    while clock.now_ms() < until_ms:
        clock.advance(min(step_ms, until_ms - clock.now_ms()))
        while container.promoter.tick().more_due:
            pass


def instances(container: Container, schedule_id: str, tenant: str = TENANT) -> list[Job]:
    """Returns every instance the schedule created, oldest first."""
    jobs: list[Job] = []
    after = None
    while True:
        page, after = container.schedule_store.instances(tenant, schedule_id, after, 100)
        jobs += page
        if after is None:
            return sorted(jobs, key=lambda job: job.fire_time_ms or 0)
