"""Idle mode's decisions (hookline.domain.idle) and the promoter's idle exit over a fake index."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from hookline.domain.delivery import PromoteResult
from hookline.domain.idle import IdlePolicy, executor_may_exit, promoter_may_exit
from hookline.ports import NullMetrics
from hookline.usecases.idle import IdleWatch
from hookline.usecases.promote import Promoter
from tests.fakes.clock import FrozenClock

POLICY = IdlePolicy(horizon_ms=75_000, grace_ms=2_000)
NOW = 1_000_000


@pytest.mark.parametrize(
    ("next_due_ms", "empty_since_ms", "want"),
    [
        pytest.param(None, NOW - 2_000, True, id="given_nothing_due_and_streams_empty_for_grace_then_exit"),
        pytest.param(NOW + 75_001, NOW - 5_000, True, id="given_next_due_past_horizon_then_exit"),
        pytest.param(NOW + 75_000, NOW - 5_000, False, id="given_next_due_at_horizon_then_stay"),
        pytest.param(NOW + 10, NOW - 5_000, False, id="given_next_due_soon_then_stay"),
        pytest.param(NOW - 10, NOW - 5_000, False, id="given_something_overdue_then_stay"),
        pytest.param(None, NOW - 1_999, False, id="given_streams_empty_for_less_than_grace_then_stay"),
        pytest.param(None, None, False, id="given_streams_hold_work_then_stay"),
    ],
)
def test_promoter_may_exit(next_due_ms: int | None, empty_since_ms: int | None, want: bool) -> None:
    assert promoter_may_exit(POLICY, NOW, next_due_ms, empty_since_ms) is want


def test_given_horizon_zero_when_idle_then_never_exit() -> None:
    assert promoter_may_exit(IdlePolicy(horizon_ms=0), NOW, None, NOW - 60_000) is False
    assert IdlePolicy(horizon_ms=0).wake() is None


@pytest.mark.parametrize("horizon_ms", [1, 30_000, 60_000])
def test_given_horizon_within_schedule_period_then_refused(horizon_ms: int) -> None:
    with pytest.raises(ValueError, match="must exceed the schedule"):
        IdlePolicy(horizon_ms=horizon_ms)


@pytest.mark.parametrize(
    ("idle_ms", "last_busy_ms", "in_flight", "want"),
    [
        pytest.param(10_000, NOW - 10_000, 0, True, id="given_idle_for_idle_ms_then_exit"),
        pytest.param(10_000, NOW - 9_999, 0, False, id="given_idle_for_less_then_stay"),
        pytest.param(10_000, NOW - 60_000, 1, False, id="given_delivery_in_flight_then_stay"),
        pytest.param(0, NOW - 60_000, 0, False, id="given_idle_exit_off_then_stay"),
    ],
)
def test_executor_may_exit(idle_ms: int, last_busy_ms: int, in_flight: int, want: bool) -> None:
    assert executor_may_exit(idle_ms, NOW, last_busy_ms, in_flight) is want


class IdleIndex:
    """Due times and stream contents of one shard; waits advance the frozen clock; records heartbeats."""

    def __init__(self, clock: FrozenClock, due_ms: list[int], in_flight: int = 0) -> None:
        self.clock = clock
        self.due_ms = sorted(due_ms)
        self.stream = in_flight
        self.alive_set: list[int] = []
        self.stood_down = 0
        self.on_stand_down: list[int] = []  # due times indexed (by a "submit") right after standing down

    def promote(self, shard: int, now_ms: int, batch: int = 500, alive_ms: int = 0) -> PromoteResult:
        ready = [d for d in self.due_ms if d <= now_ms][:batch]
        self.due_ms = self.due_ms[len(ready) :]
        self.stream += len(ready)
        if alive_ms:
            self.alive_set.append(now_ms)
        return PromoteResult(len(ready), self.due_ms[0] if self.due_ms else None)

    def wait_for_wake(self, shards: Sequence[int], timeout_ms: int) -> bool:
        self.clock.advance(timeout_ms)
        return False

    def poll_wake(self, shards: Sequence[int]) -> bool:
        return False

    def in_flight(self, shards: Sequence[int]) -> int:
        return self.stream

    def stand_down(self, shards: Sequence[int]) -> None:
        self.stood_down += 1
        self.due_ms = sorted(self.due_ms + self.on_stand_down)
        self.on_stand_down = []


def idle_promoter(index: IdleIndex, clock: FrozenClock) -> Promoter:
    def sleep(seconds: float) -> None:
        clock.advance(max(1, round(seconds * 1000)))

    watch = IdleWatch(index, clock, [0], NullMetrics(), POLICY)
    return Promoter(index, clock, [0], NullMetrics(), max_sleep_ms=1_000, sleep=sleep, idle=watch)


def test_given_nothing_due_when_running_then_ends_after_the_grace_not_at_the_deadline() -> None:
    clock = FrozenClock(NOW)
    index = IdleIndex(clock, [])

    idle_promoter(index, clock).run(NOW + 87_000)

    assert NOW + POLICY.grace_ms <= clock.now_ms() < NOW + POLICY.grace_ms + 2_000
    assert index.stood_down == 1
    assert index.alive_set  # it marked itself running while it ran


def test_given_job_due_within_horizon_when_running_then_stays_and_promotes_it() -> None:
    clock = FrozenClock(NOW)
    index = IdleIndex(clock, [NOW + 70_000])

    moved = idle_promoter(index, clock).run(NOW + 87_000)

    assert moved == 1
    # it never stood down before the job's time; after, the job's entry keeps it (no executor drains here)
    assert index.stood_down == 0
    assert clock.now_ms() >= NOW + 87_000


def test_given_job_due_after_horizon_when_running_then_ends_and_leaves_it_for_a_later_tick() -> None:
    clock = FrozenClock(NOW)
    index = IdleIndex(clock, [NOW + 80_000])

    moved = idle_promoter(index, clock).run(NOW + 87_000)

    assert moved == 0
    assert clock.now_ms() < NOW + 10_000
    assert index.due_ms == [NOW + 80_000]


def test_given_streams_hold_work_when_running_then_stays_until_they_are_empty_for_the_grace() -> None:
    clock = FrozenClock(NOW)
    index = IdleIndex(clock, [], in_flight=3)
    promoter = idle_promoter(index, clock)

    def drain_at_20s() -> None:
        if clock.now_ms() >= NOW + 20_000:
            index.stream = 0

    promoter.run(NOW + 87_000, between=drain_at_20s)

    assert NOW + 20_000 + POLICY.grace_ms <= clock.now_ms() < NOW + 20_000 + POLICY.grace_ms + 2_000


def test_given_job_indexed_as_it_stands_down_when_last_look_sees_it_then_carries_on_and_promotes() -> None:
    clock = FrozenClock(NOW)
    index = IdleIndex(clock, [])
    # indexed after its decision, before the heartbeat went: no wake came, the last look must see it
    index.on_stand_down = [NOW + 30_000]

    moved = idle_promoter(index, clock).run(NOW + 87_000)

    assert moved == 1
    assert clock.now_ms() >= NOW + 30_000


def test_given_refused_idle_settings_when_wiring_then_the_index_wakes_nothing_and_the_promoter_refuses() -> (
    None
):
    from hookline.plumbing.settings import Settings
    from hookline.plumbing.wiring import Container

    container = Container(Settings(promote_function="hookline-promote", idle_horizon_ms=30_000))
    try:
        assert container.index._wake_policy is None  # the API and executors go on, waking no promoter
        with pytest.raises(ValueError, match="must exceed the schedule"):
            _ = container.idle_policy
    finally:
        container.close()


def test_given_no_promote_function_when_wiring_then_idle_mode_is_off() -> None:
    from hookline.plumbing.settings import Settings
    from hookline.plumbing.wiring import Container

    container = Container(Settings())
    try:
        assert not container.idle_policy.enabled
        assert container.index._wake_policy is None
    finally:
        container.close()


class Notes:
    def __init__(self) -> None:
        self.noted: list[str] = []

    def note_unindexed(self, member: object, shard: int, due_ms: int, now_ms: int) -> None:
        self.noted.append(str(member))

    def unindexed(self, shards: Sequence[int]) -> list[object]:
        return []

    def clear_unindexed(self, shard: int, version: int) -> bool:
        return True


class CountingWaker:
    def __init__(self) -> None:
        self.woken = 0

    def wake(self) -> bool:
        self.woken += 1
        return True


def test_given_jobs_noted_during_an_outage_when_idle_then_one_reaper_start_per_interval() -> None:
    from hookline.domain.models import Member
    from hookline.usecases.idle import REAPER_WAKE_EVERY_MS, WakingUnindexedLog

    clock = FrozenClock(NOW)
    notes, waker = Notes(), CountingWaker()
    log = WakingUnindexedLog(notes, waker, clock, NullMetrics())  # type: ignore[arg-type]
    member = Member.decode("t/a/1")

    for _ in range(5):
        log.note_unindexed(member, 0, NOW, NOW)
    clock.advance(REAPER_WAKE_EVERY_MS)
    log.note_unindexed(member, 0, NOW, NOW)

    assert len(notes.noted) == 6  # every job is noted
    assert waker.woken == 2  # the first note of each interval starts a reaper


def test_given_reap_function_when_wiring_then_notes_wake_a_reaper_and_its_watch_may_end_idle() -> None:
    from hookline.plumbing.settings import Settings
    from hookline.plumbing.wiring import Container
    from hookline.usecases.idle import WakingUnindexedLog

    settings = Settings(promote_function="hookline-promote", reap_function="hookline-reap")
    container = Container(settings)
    bare = Container(Settings(promote_function="hookline-promote"))
    try:
        assert isinstance(container.unindexed, WakingUnindexedLog)
        assert container.reaper_idles
        assert not isinstance(bare.unindexed, WakingUnindexedLog)
        assert not bare.reaper_idles  # no reaper can be started for a note: the watch runs to its deadline
    finally:
        container.close()
        bare.close()
