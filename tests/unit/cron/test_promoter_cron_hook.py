"""The promoter runs the cron pass in every tick, and the next fire time bounds its sleep."""

from __future__ import annotations

from hookline.domain.delivery import TickResult
from hookline.ports import NullMetrics
from hookline.usecases.promote import Promoter
from tests.fakes.clock import FrozenClock
from tests.unit.core.test_promoter import FakeIndex


class FakeCron:
    def __init__(self, next_fire_ms: int, more: bool = False) -> None:
        self.next_fire_ms = next_fire_ms
        self.more = more
        self.ticks: list[int] = []

    def tick_shard(self, shard: int, now_ms: int) -> TickResult:
        self.ticks.append(now_ms)
        return TickResult(1, self.next_fire_ms, self.more)


def test_given_cron_fires_sooner_than_any_job_then_tick_reports_its_fire_time_as_next_due() -> None:
    clock = FrozenClock(10_000)
    cron = FakeCron(next_fire_ms=10_300)
    promoter = Promoter(FakeIndex(clock, [12_000]), clock, [0], NullMetrics(), cron=cron)

    result = promoter.tick()

    assert cron.ticks == [10_000]
    assert (result.moved, result.next_due_ms, result.more_due) == (0, 10_300, False)


def test_given_cron_has_more_due_then_tick_asks_to_be_called_again() -> None:
    clock = FrozenClock(10_000)
    promoter = Promoter(FakeIndex(clock, []), clock, [0], NullMetrics(), cron=FakeCron(9_000, more=True))

    assert promoter.tick().more_due is True


def test_given_no_cron_then_tick_is_unchanged() -> None:
    clock = FrozenClock(10_000)
    promoter = Promoter(FakeIndex(clock, [12_000]), clock, [0], NullMetrics())

    assert promoter.tick() == TickResult(0, 12_000, False)
