"""Limiters contract (rate_limit.lua sliding windows, concurrency_acquire.lua semaphores), fake and real."""

from __future__ import annotations

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.domain.delivery import LimiterVerdict, Slot
from tests.contract.conftest import RedisBackend

ADMIT = LimiterVerdict(True, 0)


def refused(until_ms: int) -> LimiterVerdict:
    """Returns a refusal until until_ms."""
    return LimiterVerdict(False, until_ms)


@pytest.mark.parametrize(
    ("calls", "want"),
    [
        pytest.param(
            [(1_000, "a"), (1_100, "b"), (1_200, "c")],
            [ADMIT, ADMIT, refused(2_000)],
            id="given_limit_reached_then_refused_until_oldest_leaves_the_window",
        ),
        pytest.param(
            [(1_000, "a"), (1_100, "b"), (2_000, "c"), (2_000, "d")],
            [ADMIT, ADMIT, ADMIT, refused(2_100)],
            id="given_oldest_exactly_one_period_old_then_it_has_left_the_window",
        ),
        pytest.param(
            [(1_000, "a"), (1_999, "b"), (1_999, "c")],
            [ADMIT, ADMIT, refused(2_000)],
            id="given_oldest_one_ms_short_of_a_period_then_still_counted",
        ),
        pytest.param(
            [(1_000, "a"), (1_100, "a"), (1_200, "b"), (1_300, "c")],
            [ADMIT, ADMIT, ADMIT, refused(2_100)],
            id="given_same_token_admitted_twice_then_it_holds_one_place_at_its_latest_time",
        ),
    ],
)
def test_rate_window(
    redis_backend: RedisBackend, calls: list[tuple[int, str]], want: list[LimiterVerdict]
) -> None:
    limiters = redis_backend.executor

    verdicts = [limiters.admit_rate("t", "partner", now, 2, 1_000, token) for now, token in calls]

    assert verdicts == want


def test_given_full_window_then_other_names_tenants_and_api_keys_are_separate(
    redis_backend: RedisBackend,
) -> None:
    limiters = redis_backend.executor
    assert limiters.admit_rate("t", "partner", 1_000, 1, 1_000, "a") == ADMIT

    assert limiters.admit_rate("t", "partner", 1_001, 1, 1_000, "b") == refused(2_000)
    assert limiters.admit_rate("t", "other", 1_001, 1, 1_000, "b") == ADMIT
    assert limiters.admit_rate("u", "partner", 1_001, 1, 1_000, "b") == ADMIT
    assert limiters.admit_api_call("partner", 1_001, 1, 1_000, "b") == ADMIT
    assert limiters.admit_api_call("partner", 1_002, 1, 1_000, "c") == refused(2_001)
    assert redis_backend.probe.zset(redis_keys.rate_key("t", "partner")) == {"a": 1_000}


def slot(token: str, name: str = "pool", tenant: str = "t") -> Slot:
    """Returns a holder of the tenant's semaphore called name."""
    return Slot(tenant, name, token)


def test_given_semaphore_full_then_refused_until_earliest_lease_and_holder_may_ask_again(
    redis_backend: RedisBackend,
) -> None:
    limiters = redis_backend.executor
    assert limiters.acquire_slot(slot("a"), 1_000, 2, 9_000) == ADMIT
    assert limiters.acquire_slot(slot("b"), 1_000, 2, 7_000) == ADMIT

    assert limiters.acquire_slot(slot("c"), 1_500, 2, 9_500) == refused(7_000)
    assert limiters.acquire_slot(slot("a"), 1_500, 2, 9_900) == ADMIT  # already holding: renewed
    assert redis_backend.probe.zset(redis_keys.concurrency_key("t", "pool")) == {"a": 9_900, "b": 7_000}


def test_given_holder_released_then_its_place_is_free(redis_backend: RedisBackend) -> None:
    limiters = redis_backend.executor
    limiters.acquire_slot(slot("a"), 1_000, 1, 9_000)

    limiters.release_slots([slot("a"), slot("never-held"), slot("a", name="elsewhere")])

    assert limiters.acquire_slot(slot("b"), 1_001, 1, 9_000) == ADMIT
    limiters.release_slots([])


@pytest.mark.parametrize(
    ("now", "want"),
    [
        pytest.param(6_999, refused(7_000), id="given_lease_one_ms_from_expiry_then_still_held"),
        pytest.param(7_000, ADMIT, id="given_lease_expiring_now_then_its_place_is_free"),
    ],
)
def test_lease_expiry(redis_backend: RedisBackend, now: int, want: LimiterVerdict) -> None:
    limiters = redis_backend.executor
    limiters.acquire_slot(slot("crashed"), 1_000, 1, 7_000)

    assert limiters.acquire_slot(slot("b"), now, 1, now + 5_000) == want


def test_given_full_semaphore_then_other_names_and_tenants_are_separate(redis_backend: RedisBackend) -> None:
    limiters = redis_backend.executor
    limiters.acquire_slot(slot("a"), 1_000, 1, 9_000)

    assert limiters.acquire_slot(slot("b", name="other"), 1_000, 1, 9_000) == ADMIT
    assert limiters.acquire_slot(slot("b", tenant="u"), 1_000, 1, 9_000) == ADMIT
