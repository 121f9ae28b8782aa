"""concurrency_acquire.lua: lease-expiring semaphore; release is RedisIndex.release_slots.

A refusal's retry_at is when the refused waiter's turn is expected (tests/integration/lua/test_limiter_herd.py
drives the queue); with no holder ever released, a holder is expected to hold DEFAULT_HOLD_MS.

The script sets the key's expiry with PEXPIREAT, which Redis reads on its own clock, so these tables run on
the real wall clock: every time in a row is an offset (ms) from the wall-clock now read as the test starts.
"""

from __future__ import annotations

import time

import pytest
import redis

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.index import RedisIndex
from hookline.adapters.redis.limiters import DEFAULT_HOLD_MS
from hookline.domain.delivery import LimiterVerdict, Slot
from tests.fakes.clock import FrozenClock
from tests.integration.lua.conftest import zset

pytestmark = pytest.mark.integration

TENANT, NAME = "t", "partner-api"
KEY = redis_keys.concurrency_key(TENANT, NAME)


def _slot(token: str) -> Slot:
    return Slot(TENANT, NAME, token)


ADMITTED = (True, 0, False)
RENEWED = (True, 0, True)  # the token already held a slot: admitted, lease extended, not a new slot
CLOCK_TOLERANCE_MS = 2  # PTTL and the wall clock are read a moment apart, each rounded down to the ms


def refused_until(offset_ms: int) -> tuple[bool, int, bool]:
    """Returns the expected verdict: refused until now + offset_ms."""
    return (False, offset_ms, False)


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


def _seed_holders(client: redis.Redis, holders: dict[str, int]) -> None:
    """Writes holders with the key expiring at the longest lease, as the script itself keeps it."""
    if not holders:
        return
    client.zadd(KEY, holders)
    client.pexpireat(KEY, max(holders.values()))


def _key_expiry_ms(client: redis.Redis) -> int:
    """Returns when the key expires on the wall clock, within a ms or two (PTTL works on Redis 6.2 too)."""
    ttl_ms = int(client.pttl(KEY))
    assert ttl_ms > 0, "the holders key must carry an expiry"
    return _wall_clock_ms() + ttl_ms + CLOCK_TOLERANCE_MS


@pytest.mark.parametrize(
    ("holders", "limit", "token", "lease_ms", "want_verdict", "want_holders"),
    [
        pytest.param(
            {},
            2,
            "c",
            30_000,
            ADMITTED,
            {"c": 30_000},
            id="given_no_holders_when_acquiring_then_admitted",
        ),
        pytest.param(
            {"a": 5_000},
            2,
            "c",
            30_000,
            ADMITTED,
            {"a": 5_000, "c": 30_000},
            id="given_one_below_limit_when_acquiring_then_admitted_and_key_outlives_new_lease",
        ),
        pytest.param(
            {"a": 50_000},
            2,
            "c",
            30_000,
            ADMITTED,
            {"a": 50_000, "c": 30_000},
            id="given_holder_with_longer_lease_when_acquiring_then_key_still_outlives_it",
        ),
        pytest.param(
            {"a": 8_000, "b": 3_000},
            2,
            "c",
            30_000,
            refused_until(DEFAULT_HOLD_MS),
            {"a": 8_000, "b": 3_000},
            id="given_limit_reached_and_no_hold_known_when_acquiring_then_refused_for_a_default_hold",
        ),
        pytest.param(
            {"a": -1, "b": 3_000},
            2,
            "c",
            30_000,
            ADMITTED,
            {"b": 3_000, "c": 30_000},
            id="given_expired_holder_at_limit_when_acquiring_then_purged_and_admitted",
        ),
        pytest.param(
            {"a": 0, "b": 3_000},
            2,
            "c",
            30_000,
            ADMITTED,
            {"b": 3_000, "c": 30_000},
            id="given_holder_expiring_exactly_now_when_acquiring_then_purged_and_admitted",
        ),
        pytest.param(
            {"a": -5, "b": -1, "x": 3_000},
            1,
            "c",
            30_000,
            refused_until(DEFAULT_HOLD_MS),
            {"x": 3_000},
            id="given_expired_holders_and_full_when_refused_then_expired_purged_anyway",
        ),
        pytest.param(
            {"x": 100},
            1,
            "c",
            30_000,
            refused_until(100),
            {"x": 100},
            id="given_holder_lease_ending_before_a_typical_hold_when_refused_then_until_that_lease",
        ),
        pytest.param(
            {"a": 1_000, "b": 3_000},
            2,
            "a",
            40_000,
            RENEWED,
            {"a": 40_000, "b": 3_000},
            id="given_same_token_at_limit_when_reacquiring_then_admitted_as_already_held_and_lease_refreshed",
        ),
    ],
)
def test_acquire_slot(
    redis_client: redis.Redis,
    redis_index: RedisIndex,
    holders: dict[str, int],
    limit: int,
    token: str,
    lease_ms: int,
    want_verdict: tuple[bool, int, bool],
    want_holders: dict[str, int],
) -> None:
    now_ms = _wall_clock_ms()
    _seed_holders(redis_client, {t: now_ms + offset for t, offset in holders.items()})

    verdict = redis_index.acquire_slot(
        _slot(token), now_ms=now_ms, limit=limit, lease_expires_ms=now_ms + lease_ms
    )

    admitted, retry_at_offset_ms, held = want_verdict
    assert verdict == LimiterVerdict(admitted, now_ms + retry_at_offset_ms if not admitted else 0, held)
    final = zset(redis_client, KEY)
    assert final == {t: now_ms + offset for t, offset in want_holders.items()}
    assert _key_expiry_ms(redis_client) >= max(final.values()), "the key must outlive the longest lease"


def test_given_slot_released_when_acquiring_at_limit_then_admitted(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    now_ms = _wall_clock_ms()
    lease = now_ms + 30_000
    assert redis_index.acquire_slot(_slot("a"), now_ms, 2, lease).admitted
    assert redis_index.acquire_slot(_slot("b"), now_ms, 2, lease + 1).admitted
    assert redis_index.acquire_slot(_slot("c"), now_ms, 2, lease) == LimiterVerdict(
        False, now_ms + DEFAULT_HOLD_MS
    )

    redis_index.release_slots([_slot("a"), _slot("never-held")])

    assert zset(redis_client, KEY) == {"b": lease + 1}
    assert redis_index.acquire_slot(_slot("c"), now_ms, 2, lease + 2).admitted
    assert zset(redis_client, KEY) == {"b": lease + 1, "c": lease + 2}
    assert _key_expiry_ms(redis_client) >= lease + 2


def test_given_no_slots_when_releasing_then_nothing_happens(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    keys_before = redis_client.keys("*")

    redis_index.release_slots([])

    assert redis_client.keys("*") == keys_before


def test_given_caller_clock_behind_redis_when_second_holder_asks_at_limit_one_then_refused(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    now_ms = _wall_clock_ms() - 60_000  # caller's clock one minute behind Redis's
    lease_ms = now_ms + 30_000

    assert redis_index.acquire_slot(_slot("a"), now_ms, 1, lease_ms).admitted
    verdict = redis_index.acquire_slot(_slot("b"), now_ms + 1, 1, lease_ms + 1)

    assert verdict == LimiterVerdict(False, now_ms + DEFAULT_HOLD_MS)
    assert zset(redis_client, KEY) == {"a": lease_ms}
    assert int(redis_client.pttl(KEY)) > 29_000


def test_given_releases_when_waiters_are_refused_then_their_turn_follows_the_typical_hold(
    redis_client: redis.Redis,
) -> None:
    clock = FrozenClock(_wall_clock_ms())
    index = RedisIndex(redis_client, clock=clock)
    start = clock.now_ms()
    for held_ms in (1_000, 2_000):  # two holders, one after the other: typical hold 1 000 * 3/4 + 2 000 / 4
        assert index.acquire_slot(_slot("h"), clock.now_ms(), 1, clock.now_ms() + 30_000).admitted
        clock.advance(held_ms)
        index.release_slots([_slot("h"), _slot("never-held")])
    assert redis_client.get(redis_keys.concurrency_hold_key(TENANT, NAME)) == b"1250"

    now_ms = clock.now_ms()
    assert index.acquire_slot(_slot("a"), now_ms, 1, now_ms + 30_000).admitted
    first = index.acquire_slot(_slot("b"), now_ms + 100, 1, now_ms + 30_100)
    second = index.acquire_slot(_slot("c"), now_ms + 100, 1, now_ms + 30_100)

    assert first == LimiterVerdict(False, now_ms + 1_250)  # when a is expected to end
    assert second == LimiterVerdict(False, now_ms + 2_500)  # a typical hold after that
    assert now_ms == start + 3_000
