"""Fan-out starts executors when the ready streams back up, bounded per check and cooled down after."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hookline.adapters.lambda_launcher import FAN_OUT_EVENT, LambdaLauncher
from hookline.domain.clock import FrozenClock
from hookline.ports import NullMetrics
from hookline.usecases.scale import ExecutorScaler, FanOutPolicy

POLICY = FanOutPolicy(
    backlog_per_executor=10, max_launch_per_check=3, check_interval_ms=1_000, cooldown_ms=5_000
)


class FakeStream:
    """Answers undelivered() with a settable count of unread entries per shard."""

    def __init__(self, unread: dict[int, int]) -> None:
        self.unread = unread

    def undelivered(self, shard: int) -> int:
        return self.unread.get(shard, 0)


class FakeLauncher:
    def __init__(self, accept: int = 100) -> None:
        self.requests: list[int] = []
        self._accept = accept

    def launch(self, count: int) -> int:
        self.requests.append(count)
        return min(count, self._accept)


def _scaler(index: FakeStream, launcher: Any, clock: FrozenClock) -> ExecutorScaler:
    return ExecutorScaler(index, clock, [0, 1], launcher, NullMetrics(), POLICY)  # type: ignore[arg-type]


def test_given_small_backlog_when_checking_then_nothing_is_launched() -> None:
    launcher = FakeLauncher()

    started = _scaler(FakeStream({0: 5, 1: 4}), launcher, FrozenClock(0)).check()

    assert started == 0
    assert launcher.requests == []


def test_given_backlog_over_all_shards_when_checking_then_one_executor_per_threshold_is_launched() -> None:
    launcher = FakeLauncher()

    started = _scaler(FakeStream({0: 15, 1: 10}), launcher, FrozenClock(0)).check()

    assert started == 2
    assert launcher.requests == [2]


def test_given_huge_backlog_when_checking_then_launches_are_capped_per_check() -> None:
    launcher = FakeLauncher()

    assert _scaler(FakeStream({0: 10_000}), launcher, FrozenClock(0)).check() == 3


def test_given_a_launch_when_checking_again_then_it_waits_for_the_cooldown() -> None:
    clock, launcher = FrozenClock(0), FakeLauncher()
    scaler = _scaler(FakeStream({0: 100}), launcher, clock)
    scaler.check()

    clock.advance(4_999)
    during = scaler.check()
    clock.advance(1)
    after = scaler.check()

    assert (during, after) == (0, 3)
    assert launcher.requests == [3, 3]


def test_given_no_launch_when_checking_again_then_it_waits_only_the_check_interval() -> None:
    clock, index, launcher = FrozenClock(0), FakeStream({0: 0}), FakeLauncher()
    scaler = _scaler(index, launcher, clock)
    scaler.check()
    index.unread[0] = 50

    clock.advance(999)
    early = scaler.check()
    clock.advance(1)
    due = scaler.check()

    assert (early, due) == (0, 3)


def test_given_launcher_refusing_when_checking_then_only_started_ones_are_counted() -> None:
    assert _scaler(FakeStream({0: 100}), FakeLauncher(accept=1), FrozenClock(0)).check() == 1


class FakePromoter:
    """Ticks every 250 ms of the frozen clock until its deadline, calling `between` after each tick."""

    def __init__(self, clock: FrozenClock) -> None:
        self.clock = clock
        self.runs: list[int] = []

    def run(self, deadline_ms: int, between: Callable[[], object] | None = None) -> int:
        self.runs.append(deadline_ms)
        ticks = 0
        while self.clock.now_ms() < deadline_ms:
            ticks += 1
            if between is not None:
                between()
            self.clock.advance(250)
        return ticks


class CountingStream(FakeStream):
    """Counts the backlog reads (one per shard per check)."""

    def __init__(self, unread: dict[int, int]) -> None:
        super().__init__(unread)
        self.reads_at: list[int] = []
        self.clock: FrozenClock | None = None

    def undelivered(self, shard: int) -> int:
        assert self.clock is not None
        self.reads_at.append(self.clock.now_ms())
        return super().undelivered(shard)


def test_given_deadline_when_promoting_then_one_run_to_it_reads_the_backlog_once_per_check_interval() -> None:
    clock, launcher = FrozenClock(0), FakeLauncher()
    stream = CountingStream({0: 0})
    stream.clock = clock
    promoter = FakePromoter(clock)

    moved = _scaler(stream, launcher, clock).promote_until(promoter, 2_500)  # type: ignore[arg-type]

    # One run to the deadline (its per-shard waiters start once), the backlog of both shards read at
    # 0, 1000 and 2000 ms although the promoter ticked every 250 ms.
    assert promoter.runs == [2_500]
    assert moved == 10
    assert stream.reads_at == [0, 0, 1_000, 1_000, 2_000, 2_000]


class FakeLambda:
    def __init__(self, fail_after: int | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self._fail_after = fail_after

    def invoke(self, **kwargs: Any) -> dict[str, Any]:
        if self._fail_after is not None and len(self.calls) >= self._fail_after:
            raise RuntimeError("TooManyRequestsException")
        self.calls.append(kwargs)
        return {"StatusCode": 202}


def test_given_lambda_launcher_when_launching_then_it_invokes_asynchronously_by_name() -> None:
    client = FakeLambda()
    launcher = LambdaLauncher(lambda: client, "hookline-execute")

    started = launcher.launch(2)

    assert started == 2
    assert [call["FunctionName"] for call in client.calls] == ["hookline-execute"] * 2
    assert {call["InvocationType"] for call in client.calls} == {"Event"}
    assert client.calls[0]["Payload"] == b'{"source": "hookline.fan-out"}'
    assert FAN_OUT_EVENT == {"source": "hookline.fan-out"}


def test_given_throttled_lambda_when_launching_then_it_stops_and_reports_what_started(
    caplog: Any,
) -> None:
    launcher = LambdaLauncher(lambda: FakeLambda(fail_after=1), "hookline-execute")

    assert launcher.launch(3) == 1
    assert "fan-out invoke failed" in caplog.text
