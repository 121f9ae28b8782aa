"""lua/shared/waiter_queue.lua: the queue of refused waiters, in rate_limit.lua and concurrency_acquire.lua.

Every table runs against both scripts, on a key whose only place is free or taken for an hour: a waiter is
queued (queue) and remembered with the turn it was told (told) while refused; it leaves both when admitted
or forgotten, and only the late sweep takes it out of the queue alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
import redis

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.index import RedisIndex
from hookline.adapters.redis.limiters import WAITER_FORGET_MS, WAITER_LATE_MS
from hookline.domain.delivery import LimiterVerdict, Slot
from tests.fakes.clock import FrozenClock
from tests.integration.lua.conftest import zset

pytestmark = pytest.mark.integration

TENANT, NAME = "t", "partner-api"
HOUR_MS = 3_600_000
NOW_MS = 1_000_000_000
ADMIT = LimiterVerdict(True, 0)
TTL_TOLERANCE_MS = 1_000  # PTTL is read a moment after the script set it, on a loaded machine


@dataclass(frozen=True)
class Limiter:
    """One of the two scripts, asked with limit 1 and an hour's period (or typical hold)."""

    queue_key: str
    told_key: str
    places_key: str  # the log of admissions, or the holders: whoever takes the one place is there
    ask: Callable[[RedisIndex, int, str], LimiterVerdict]
    take_place: Callable[[redis.Redis, str, int], None]  # seeds a holder of the place since a time
    last_an_hour: Callable[[redis.Redis], None]  # makes a place last an hour (a period, a typical hold)


def _admit_rate(index: RedisIndex, now_ms: int, waiter: str) -> LimiterVerdict:
    return index.admit_rate(TENANT, NAME, now_ms, 1, HOUR_MS, token=waiter, waiter=waiter)


def _seed_admission(client: redis.Redis, token: str, at_ms: int) -> None:
    client.zadd(redis_keys.rate_key(TENANT, NAME), {token: at_ms})


def _acquire_slot(index: RedisIndex, now_ms: int, waiter: str) -> LimiterVerdict:
    # Leases outlast the test: a place frees when its holder is released, as a finished delivery's is.
    return index.acquire_slot(Slot(TENANT, NAME, waiter), now_ms, 1, now_ms + 10 * HOUR_MS)


def _seed_holder(client: redis.Redis, token: str, at_ms: int) -> None:
    client.zadd(redis_keys.concurrency_key(TENANT, NAME), {token: at_ms + 10 * HOUR_MS})
    client.zadd(redis_keys.concurrency_started_key(TENANT, NAME), {token: at_ms})


def _period_is_an_argument(client: redis.Redis) -> None:
    """The rate window's period is passed on every call (HOUR_MS): nothing to seed."""


def _hold_an_hour(client: redis.Redis) -> None:
    """Seeds the typical hold concurrency_release.lua learns: holders of the key hold an hour."""
    client.set(redis_keys.concurrency_hold_key(TENANT, NAME), HOUR_MS)


RATE = Limiter(
    redis_keys.rate_queue_key(TENANT, NAME),
    redis_keys.rate_told_key(TENANT, NAME),
    redis_keys.rate_key(TENANT, NAME),
    _admit_rate,
    _seed_admission,
    _period_is_an_argument,
)
SLOT = Limiter(
    redis_keys.concurrency_queue_key(TENANT, NAME),
    redis_keys.concurrency_told_key(TENANT, NAME),
    redis_keys.concurrency_key(TENANT, NAME),
    _acquire_slot,
    _seed_holder,
    _hold_an_hour,
)
LIMITERS = [pytest.param(RATE, id="rate_limit"), pytest.param(SLOT, id="concurrency_acquire")]


@pytest.fixture
def index(redis_client: redis.Redis) -> RedisIndex:
    """Yields a RedisIndex whose releases are timed on a frozen clock at NOW_MS."""
    return RedisIndex(redis_client, clock=FrozenClock(NOW_MS))


@pytest.mark.parametrize("limiter", LIMITERS)
def test_given_waiter_that_never_returns_on_an_hour_long_key_when_the_next_comes_at_its_turn_then_admitted(
    redis_client: redis.Redis, limiter: Limiter
) -> None:
    clock = FrozenClock(NOW_MS)
    index = RedisIndex(redis_client, clock=clock)
    limiter.last_an_hour(redis_client)
    assert limiter.ask(index, NOW_MS, "first:1") == ADMIT
    assert limiter.ask(index, NOW_MS, "gone:1") == LimiterVerdict(False, NOW_MS + HOUR_MS)
    assert limiter.ask(index, NOW_MS, "next:1") == LimiterVerdict(False, NOW_MS + 2 * HOUR_MS)
    clock.set(NOW_MS + HOUR_MS)
    index.release_slots([Slot(TENANT, NAME, "first:1")])  # first's hour is up (a rate window just ends)

    # gone:1 (cancelled, dead-lettered) never asks again; next:1 comes back at its turn, an hour after gone's.
    verdict = limiter.ask(index, NOW_MS + 2 * HOUR_MS, "next:1")

    assert verdict == ADMIT
    assert zset(redis_client, limiter.queue_key) == {}
    assert zset(redis_client, limiter.told_key) == {}
    assert set(zset(redis_client, limiter.places_key)) == {"next:1"}


FORGOTTEN_MS = NOW_MS - WAITER_FORGET_MS - 1  # a turn told this long ago is forgotten
LATE_MS = NOW_MS - WAITER_LATE_MS - 1  # a turn told this long ago is late, not yet forgotten
TURN_MS = NOW_MS - 1 + HOUR_MS  # the next turn when the place was taken 1 ms ago for an hour


@pytest.mark.parametrize("limiter", LIMITERS)
@pytest.mark.parametrize(
    ("queue", "told", "place_taken", "waiter", "want_verdict", "want_queue", "want_told"),
    [
        pytest.param(
            {"gone": 1, "next": 2},
            {"gone": FORGOTTEN_MS, "next": NOW_MS},
            False,
            "next",
            ADMIT,
            {},
            {},
            id="given_queued_waiter_long_forgotten_when_the_next_asks_then_gone_from_both_and_next_admitted",
        ),
        pytest.param(
            {"gone": 1, "next": 2},
            {"gone": FORGOTTEN_MS, "next": TURN_MS - HOUR_MS},
            True,
            "new",
            LimiterVerdict(False, TURN_MS + HOUR_MS),
            {"next": 2, "new": 3},
            {"next": TURN_MS - HOUR_MS, "new": TURN_MS + HOUR_MS},
            id="given_queued_waiter_long_forgotten_when_a_newcomer_asks_then_it_counts_nobody_gone",
        ),
        pytest.param(
            {"orphan": 1, "next": 2},
            {"next": NOW_MS},
            False,
            "next",
            ADMIT,
            {},
            {},
            id="given_queue_head_with_no_told_turn_when_the_next_asks_then_head_dropped_and_next_admitted",
        ),
        pytest.param(
            {"me": 1, "next": 2},
            {"next": NOW_MS + 5_000},
            True,
            "me",
            LimiterVerdict(False, TURN_MS),
            {"me": 1, "next": 2},
            {"me": TURN_MS, "next": NOW_MS + 5_000},
            id="given_queue_head_with_no_told_turn_when_it_asks_itself_then_it_keeps_its_place_and_is_told",
        ),
        pytest.param(
            {"late": 1, "next": 2},
            {"late": LATE_MS, "next": NOW_MS},
            False,
            "next",
            ADMIT,
            {},
            {"late": LATE_MS},
            id="given_late_waiter_when_the_next_asks_then_late_leaves_the_queue_but_its_turn_is_remembered",
        ),
        pytest.param(
            {"next": 2},
            {"late": LATE_MS, "next": NOW_MS + 5_000},
            True,
            "late",
            LimiterVerdict(False, TURN_MS),
            {"late": 1, "next": 2},
            {"late": TURN_MS, "next": NOW_MS + 5_000},
            id="given_late_waiter_when_it_comes_back_then_it_goes_first",
        ),
        pytest.param(
            {"next": 2},
            {"gone": FORGOTTEN_MS, "next": NOW_MS + 5_000},
            True,
            "gone",
            LimiterVerdict(False, TURN_MS + HOUR_MS),
            {"next": 2, "gone": 3},
            {"gone": TURN_MS + HOUR_MS, "next": NOW_MS + 5_000},
            id="given_forgotten_waiter_when_it_comes_back_then_it_queues_as_a_newcomer",
        ),
    ],
)
def test_waiter_queue(
    redis_client: redis.Redis,
    index: RedisIndex,
    limiter: Limiter,
    queue: dict[str, float],
    told: dict[str, float],
    place_taken: bool,
    waiter: str,
    want_verdict: LimiterVerdict,
    want_queue: dict[str, float],
    want_told: dict[str, float],
) -> None:
    keep_ms = int(max(told.values())) - NOW_MS + WAITER_FORGET_MS  # as the scripts keep both keys
    for key, members in ((limiter.queue_key, queue), (limiter.told_key, told)):
        redis_client.zadd(key, members)
        redis_client.pexpire(key, keep_ms)
    limiter.last_an_hour(redis_client)
    if place_taken:
        limiter.take_place(redis_client, "holder", NOW_MS - 1)

    verdict = limiter.ask(index, NOW_MS, waiter)

    assert verdict == want_verdict
    assert zset(redis_client, limiter.queue_key) == want_queue
    assert zset(redis_client, limiter.told_key) == want_told
    holders = {"holder"} if place_taken else set()
    assert set(zset(redis_client, limiter.places_key)) == holders | ({waiter} if verdict.admitted else set())
    if not verdict.admitted:  # both keys outlive the turn told by the time a waiter is forgotten
        keep_ms = verdict.retry_at_ms - NOW_MS + WAITER_FORGET_MS
        for key in (limiter.queue_key, limiter.told_key):
            assert keep_ms - TTL_TOLERANCE_MS <= int(redis_client.pttl(key)) <= keep_ms, key
