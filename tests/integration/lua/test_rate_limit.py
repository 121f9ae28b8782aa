"""rate_limit.lua: sliding-window log; admits while under `limit` admissions lie in (now - period, now].

Callers without a waiter (the API) are never queued; deliveries (a waiter each) queue when refused."""

from __future__ import annotations

import random

import pytest
import redis

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.index import RedisIndex
from hookline.adapters.redis.limiters import WAITER_LATE_MS
from hookline.domain.delivery import LimiterVerdict
from tests.integration.lua.conftest import zset

pytestmark = pytest.mark.integration

TENANT, NAME = "t", "partner-api"
KEY = redis_keys.rate_key(TENANT, NAME)
PERIOD_MS = 1_000
NO_TTL = -1


@pytest.mark.parametrize(
    ("log", "now_ms", "limit", "want_verdict", "want_log", "want_ttl_ms"),
    [
        pytest.param(
            {},
            5_000,
            2,
            LimiterVerdict(admitted=True, retry_at_ms=0),
            {"new": 5_000},
            PERIOD_MS,
            id="given_empty_log_when_asked_then_admitted_and_key_expires_after_a_period",
        ),
        pytest.param(
            {"a": 4_500},
            5_000,
            2,
            LimiterVerdict(admitted=True, retry_at_ms=0),
            {"a": 4_500, "new": 5_000},
            PERIOD_MS,
            id="given_one_below_limit_when_asked_then_admitted",
        ),
        pytest.param(
            {"a": 4_200, "b": 4_500},
            5_000,
            2,
            LimiterVerdict(admitted=False, retry_at_ms=5_200),
            {"a": 4_200, "b": 4_500},
            NO_TTL,
            id="given_limit_reached_when_asked_then_refused_until_oldest_plus_period",
        ),
        pytest.param(
            {"a": 4_001, "b": 4_500},
            5_000,
            2,
            LimiterVerdict(admitted=False, retry_at_ms=5_001),
            {"a": 4_001, "b": 4_500},
            NO_TTL,
            id="given_oldest_one_ms_inside_window_when_asked_then_refused_until_next_ms",
        ),
        pytest.param(
            {"a": 4_000, "b": 4_500},
            5_000,
            2,
            LimiterVerdict(admitted=True, retry_at_ms=0),
            {"b": 4_500, "new": 5_000},
            PERIOD_MS,
            id="given_oldest_exactly_now_minus_period_when_asked_then_it_expired_and_admitted",
        ),
        pytest.param(
            {"old1": 1_000, "old2": 3_999, "a": 4_200, "b": 4_500},
            5_000,
            2,
            LimiterVerdict(admitted=False, retry_at_ms=5_200),
            {"a": 4_200, "b": 4_500},
            NO_TTL,
            id="given_expired_and_full_window_when_refused_then_expired_entries_purged",
        ),
        pytest.param(
            {"a": 5_000},
            5_000,
            1,
            LimiterVerdict(admitted=False, retry_at_ms=6_000),
            {"a": 5_000},
            NO_TTL,
            id="given_limit_one_used_this_ms_when_asked_again_then_refused_for_a_full_period",
        ),
    ],
)
def test_rate_limit(
    redis_client: redis.Redis,
    redis_index: RedisIndex,
    log: dict[str, float],
    now_ms: int,
    limit: int,
    want_verdict: LimiterVerdict,
    want_log: dict[str, float],
    want_ttl_ms: int,
) -> None:
    if log:
        redis_client.zadd(KEY, log)  # seeded without TTL: only an admission sets one

    verdict = redis_index.admit_rate(
        "t", "partner-api", now_ms=now_ms, limit=limit, period_ms=PERIOD_MS, token="new"
    )

    assert verdict == want_verdict
    assert zset(redis_client, KEY) == want_log
    ttl_ms = int(redis_client.pttl(KEY))
    if want_ttl_ms == NO_TTL:
        assert ttl_ms == NO_TTL
    else:
        assert want_ttl_ms - 100 < ttl_ms <= want_ttl_ms


def _admitted_in_window(admitted: list[int], end_ms: int, period_ms: int) -> list[int]:
    """Returns the admissions in the window (end - period, end]."""
    return [t for t in admitted if end_ms - period_ms < t <= end_ms]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_given_300_random_requests_over_10_s_then_never_over_limit_and_admitted_as_soon_as_a_slot_frees(
    redis_client: redis.Redis, redis_index: RedisIndex, seed: int
) -> None:
    limit, start_ms = 5, 1_000_000
    rng = random.Random(seed)
    request_times = sorted(start_ms + rng.randrange(10_000) for _ in range(300))
    admitted: list[int] = []
    refusals: list[tuple[int, int]] = []

    for i, now_ms in enumerate(request_times):
        verdict = redis_index.admit_rate(
            "t", "partner-api", now_ms=now_ms, limit=limit, period_ms=PERIOD_MS, token=f"r{i}"
        )
        if verdict.admitted:
            admitted.append(now_ms)
        else:
            refusals.append((now_ms, verdict.retry_at_ms))

    assert admitted and refusals, "the sequence must exercise both answers"
    for t in admitted:
        assert len(_admitted_in_window(admitted, t, PERIOD_MS)) <= limit, f"window ending {t} over limit"
    for now_ms, retry_at_ms in refusals:
        so_far = [t for t in admitted if t <= now_ms]
        window = _admitted_in_window(so_far, now_ms, PERIOD_MS)
        assert len(window) == limit, f"refused at {now_ms} with a free slot"
        assert retry_at_ms == window[0] + PERIOD_MS
        assert len(_admitted_in_window(so_far, retry_at_ms, PERIOD_MS)) < limit, "no slot at retry_at"
        assert len(_admitted_in_window(so_far, retry_at_ms - 1, PERIOD_MS)) == limit, "slot freed earlier"


def test_given_queued_waiter_when_newcomer_finds_slot_free_then_it_queues_behind_and_waiter_gets_it(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    assert redis_index.admit_rate(TENANT, NAME, 5_000, 1, PERIOD_MS, "e1", waiter="first:1").admitted
    told = redis_index.admit_rate(TENANT, NAME, 5_100, 1, PERIOD_MS, "e2", waiter="second:1")
    assert told == LimiterVerdict(False, 6_000)  # the slot comes free when e1 leaves the window

    newcomer = redis_index.admit_rate(TENANT, NAME, 6_000, 1, PERIOD_MS, "e3", waiter="third:1")
    second = redis_index.admit_rate(TENANT, NAME, 6_010, 1, PERIOD_MS, "e4", waiter="second:1")

    assert newcomer == LimiterVerdict(False, 7_000)  # behind second: the turn after second's
    assert second.admitted
    assert zset(redis_client, redis_keys.rate_queue_key(TENANT, NAME)) == {"third:1": 2}
    assert zset(redis_client, redis_keys.rate_told_key(TENANT, NAME)) == {"third:1": 7_000}


def test_given_waiter_long_late_when_others_ask_then_it_holds_nobody_back_and_goes_first_if_it_comes(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    assert redis_index.admit_rate(TENANT, NAME, 5_000, 1, PERIOD_MS, "e1", waiter="first:1").admitted
    assert not redis_index.admit_rate(TENANT, NAME, 5_000, 1, PERIOD_MS, "e2", waiter="gone:1").admitted
    assert not redis_index.admit_rate(TENANT, NAME, 5_000, 1, PERIOD_MS, "e3", waiter="next:1").admitted
    late_ms = 6_000 + WAITER_LATE_MS + 1  # gone:1 was told 6 000 and never came

    assert redis_index.admit_rate(TENANT, NAME, late_ms, 1, PERIOD_MS, "e4", waiter="next:1").admitted
    gone = redis_index.admit_rate(TENANT, NAME, late_ms + 1, 1, PERIOD_MS, "e5", waiter="gone:1")
    newcomer = redis_index.admit_rate(TENANT, NAME, late_ms + 2, 1, PERIOD_MS, "e6", waiter="new:1")

    assert gone == LimiterVerdict(False, late_ms + PERIOD_MS)  # first in line again: the next slot
    assert newcomer == LimiterVerdict(False, late_ms + 2 * PERIOD_MS)
    queue = zset(redis_client, redis_keys.rate_queue_key(TENANT, NAME))
    assert sorted(queue, key=queue.__getitem__) == ["gone:1", "new:1"]
