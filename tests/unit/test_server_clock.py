"""The server clock's offset: measured at the first reading, again every recalibrate_ms, kept when Redis
fails or answers too slowly (adapters/redis/server_clock.py). A frozen host clock and a scripted TIME."""

from __future__ import annotations

from typing import Any, cast

import redis

from hookline.adapters.redis.server_clock import MAX_ROUND_TRIP_MS, RECALIBRATE_MS, RETRY_MS, RedisTimeClock
from tests.fakes.clock import FrozenClock

HOST_MS = 1_767_225_600_000


class ScriptedTime:
    """Answers TIME with the host clock plus `ahead_ms`, taking round_trip_ms of the host clock; or fails."""

    def __init__(self, host: FrozenClock, ahead_ms: int) -> None:
        self.host = host
        self.ahead_ms = ahead_ms
        self.round_trip_ms = 0
        self.failing = False
        self.calls = 0

    def time(self) -> tuple[int, int]:
        self.calls += 1
        if self.failing:
            raise redis.ConnectionError("down")
        self.host.advance(self.round_trip_ms // 2)
        server_ms = self.host.now_ms() + self.ahead_ms
        self.host.advance(self.round_trip_ms - self.round_trip_ms // 2)
        return server_ms // 1000, server_ms % 1000 * 1000


def clock_with(ahead_ms: int) -> tuple[RedisTimeClock, FrozenClock, ScriptedTime]:
    host = FrozenClock(HOST_MS)
    server = ScriptedTime(host, ahead_ms)
    return RedisTimeClock(cast(Any, server), host, spawn=lambda work: work()), host, server


def test_given_redis_30_s_ahead_then_readings_follow_redis_and_time_is_asked_once_per_interval() -> None:
    clock, host, server = clock_with(30_000)

    first = clock.now_ms()
    host.advance(RECALIBRATE_MS - 1)
    second = clock.now_ms()

    assert (first, second) == (HOST_MS + 30_000 - 1, HOST_MS + RECALIBRATE_MS - 1 + 30_000 - 1)
    assert server.calls == 1


def test_given_the_offset_changes_then_the_next_interval_measures_it_again() -> None:
    clock, host, server = clock_with(30_000)
    clock.now_ms()
    server.ahead_ms = -5_000
    host.advance(RECALIBRATE_MS)

    assert clock.now_ms() == host.now_ms() - 5_000 - 1
    assert server.calls == 2


def test_given_redis_fails_then_the_last_offset_stays_and_it_is_asked_again_after_retry_ms() -> None:
    clock, host, server = clock_with(30_000)
    clock.now_ms()
    server.failing = True
    host.advance(RECALIBRATE_MS)

    assert clock.now_ms() == host.now_ms() + 30_000 - 1  # kept
    host.advance(RETRY_MS - 1)
    clock.now_ms()
    assert server.calls == 2  # not asked again before retry_ms
    server.failing, server.ahead_ms = False, 1_000
    host.advance(1)
    assert clock.now_ms() == host.now_ms() + 1_000 - 1
    assert server.calls == 3


def test_given_a_round_trip_too_slow_then_its_measurement_is_not_kept() -> None:
    clock, host, server = clock_with(30_000)
    server.round_trip_ms = MAX_ROUND_TRIP_MS + 2

    reading = clock.now_ms()

    assert reading == host.now_ms()  # no offset measured yet: the host clock


def test_given_a_round_trip_then_the_clock_reads_behind_redis_never_ahead() -> None:
    clock, host, server = clock_with(30_000)
    server.round_trip_ms = 40  # Redis read its clock 20 ms before its reply arrived

    reading = clock.now_ms()

    assert reading == host.now_ms() + 30_000 - 21  # 21 ms behind Redis's clock, not ahead
