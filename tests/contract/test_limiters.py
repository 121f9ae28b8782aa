"""Limiters contract (rate_limit.lua sliding windows, concurrency_acquire.lua and concurrency_release.lua
semaphores, both with queues of refused waiters), fake and real alike.

Times are small numbers (ms); a release is timed on the backend's role clock, set by the tests that read
the typical hold time it teaches.
"""

from __future__ import annotations

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.domain.delivery import LimiterVerdict, Slot
from tests.contract.conftest import RedisBackend

ADMIT = LimiterVerdict(True, 0)
HELD = LimiterVerdict(True, 0, already_held=True)


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


def test_given_semaphore_full_then_refused_until_a_holders_expected_end_and_holder_asking_again_already_holds(
    redis_backend: RedisBackend,
) -> None:
    limiters = redis_backend.executor
    assert limiters.acquire_slot(slot("a"), 1_000, 2, 9_000) == ADMIT
    assert limiters.acquire_slot(slot("b"), 1_000, 2, 7_000) == ADMIT

    # Both started at 1 000 with the default 200 ms hold: overrunning, so expected as long again (300 ms).
    assert limiters.acquire_slot(slot("c"), 1_500, 2, 9_500) == refused(1_800)
    assert limiters.acquire_slot(slot("a"), 1_500, 2, 9_900) == HELD  # only its lease is extended
    assert redis_backend.probe.zset(redis_keys.concurrency_key("t", "pool")) == {"a": 9_900, "b": 7_000}
    assert redis_backend.probe.zset(redis_keys.concurrency_queue_key("t", "pool")) == {"c": 1.0}


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


def test_given_semaphore_waiters_queued_then_each_told_its_turn_and_later_callers_wait_behind(
    redis_backend: RedisBackend,
) -> None:
    limiters = redis_backend.executor
    assert limiters.acquire_slot(slot("a"), 1_000, 1, 60_000) == ADMIT

    # The holder is expected to end at 1 000 + 200 (default hold); each place further one more hold.
    assert limiters.acquire_slot(slot("w1"), 1_100, 1, 60_100) == refused(1_200)
    assert limiters.acquire_slot(slot("w2"), 1_100, 1, 60_100) == refused(1_400)
    redis_backend.clock.set(1_150)
    limiters.release_slots([slot("a")])
    assert redis_backend.probe.string(redis_keys.concurrency_hold_key("t", "pool")) == "150"
    # w2 comes before its turn: refused again behind w1, who is owed the free slot (one hold after now).
    assert limiters.acquire_slot(slot("w2"), 1_160, 1, 60_160) == refused(1_311)
    assert limiters.acquire_slot(slot("w1"), 1_200, 1, 60_200) == ADMIT
    assert limiters.acquire_slot(slot("w2"), 1_210, 1, 60_210) == refused(1_350)  # w1 started 1 200 + 150
    assert redis_backend.probe.zset(redis_keys.concurrency_queue_key("t", "pool")) == {"w2": 2.0}
    redis_backend.clock.set(1_300)
    limiters.release_slots([slot("w1"), slot("never-held")])
    assert (
        redis_backend.probe.string(redis_keys.concurrency_hold_key("t", "pool")) == "138"
    )  # 150 * .75 + 100 * .25
    assert limiters.acquire_slot(slot("w2"), 1_350, 1, 60_350) == ADMIT
    assert redis_backend.probe.zset(redis_keys.concurrency_queue_key("t", "pool")) == {}
    assert redis_backend.probe.zset(redis_keys.concurrency_told_key("t", "pool")) == {}


@pytest.mark.parametrize(
    ("holder_lease", "now", "want"),
    [
        pytest.param(60_000, 5_000, refused(8_800), id="given_overrunning_holder_then_as_long_again"),
        pytest.param(
            1_100, 1_050, refused(1_100), id="given_lease_ending_before_the_expected_end_then_lease"
        ),
        pytest.param(60_000, 1_199, refused(1_200), id="given_holder_within_its_hold_then_its_expected_end"),
    ],
)
def test_given_one_holder_when_a_waiter_is_refused_then_its_turn_is_bounded_by_the_holders_lease(
    redis_backend: RedisBackend, holder_lease: int, now: int, want: LimiterVerdict
) -> None:
    limiters = redis_backend.executor
    limiters.acquire_slot(slot("a"), 1_000, 1, holder_lease)

    assert limiters.acquire_slot(slot("w"), now, 1, now + 60_000) == want


def test_given_waiter_late_for_its_turn_then_it_stops_holding_back_others_but_goes_first_when_back(
    redis_backend: RedisBackend,
) -> None:
    limiters = redis_backend.executor
    limiters.acquire_slot(slot("a"), 1_000, 1, 60_000)
    assert limiters.acquire_slot(slot("late"), 1_100, 1, 60_100) == refused(1_200)
    assert limiters.acquire_slot(slot("w"), 1_100, 1, 60_100) == refused(1_400)
    redis_backend.clock.set(1_150)
    limiters.release_slots([slot("a")])  # a typical hold of 150 ms

    # "late" was told 1 200 and has not come by 3 201 (2 s late): "w" no longer waits for it.
    assert limiters.acquire_slot(slot("w"), 3_201, 1, 63_201) == ADMIT
    assert limiters.acquire_slot(slot("late"), 3_202, 1, 63_202) == refused(3_351)
    assert limiters.acquire_slot(slot("new"), 3_203, 1, 63_203) == refused(3_501)  # behind "late"
    assert redis_backend.probe.zset(redis_keys.concurrency_queue_key("t", "pool")) == {
        "late": -1.0,
        "new": 0.0,
    }


def test_given_rate_waiters_queued_then_each_told_the_slot_that_frees_for_it(
    redis_backend: RedisBackend,
) -> None:
    limiters = redis_backend.executor
    window = ("t", "partner")
    assert limiters.admit_rate(*window, 1_000, 2, 1_000, "e1", waiter="a") == ADMIT
    assert limiters.admit_rate(*window, 1_100, 2, 1_000, "e2", waiter="b") == ADMIT

    assert limiters.admit_rate(*window, 1_200, 2, 1_000, "e3", waiter="w1") == refused(2_000)
    assert limiters.admit_rate(*window, 1_200, 2, 1_000, "e4", waiter="w2") == refused(2_100)
    assert limiters.admit_rate(*window, 1_200, 2, 1_000, "e5", waiter="w3") == refused(3_000)
    # w2 comes early at 2 000: one place is free, but it is w1's.
    assert limiters.admit_rate(*window, 2_000, 2, 1_000, "e6", waiter="w2") == refused(2_100)
    assert limiters.admit_rate(*window, 2_000, 2, 1_000, "e7", waiter="w1") == ADMIT
    assert limiters.admit_rate(*window, 2_100, 2, 1_000, "e8", waiter="w2") == ADMIT
    assert redis_backend.probe.zset(redis_keys.rate_queue_key(*window)) == {"w3": 3.0}
    assert redis_backend.probe.zset(redis_keys.rate_key(*window)) == {"e7": 2_000, "e8": 2_100}
    # A caller that does not come back (no waiter) is not queued, and not held back by the queue.
    assert limiters.admit_rate(*window, 2_100, 3, 1_000, "e9") == ADMIT
    assert redis_backend.probe.zset(redis_keys.rate_told_key(*window)) == {"w3": 3_000}


def test_given_rate_waiter_late_for_its_turn_then_it_goes_first_when_it_comes(
    redis_backend: RedisBackend,
) -> None:
    limiters = redis_backend.executor
    window = ("t", "partner")
    assert limiters.admit_rate(*window, 1_000, 1, 1_000, "x") == ADMIT
    assert limiters.admit_rate(*window, 1_100, 1, 1_000, "e1", waiter="late") == refused(2_000)
    assert limiters.admit_rate(*window, 1_100, 1, 1_000, "e2", waiter="w") == refused(3_000)

    assert limiters.admit_rate(*window, 4_001, 1, 1_000, "e3", waiter="w") == ADMIT
    assert limiters.admit_rate(*window, 4_002, 1, 1_000, "e4", waiter="late") == refused(5_001)
    assert limiters.admit_rate(*window, 4_003, 1, 1_000, "e5", waiter="new") == refused(6_001)
    assert redis_backend.probe.zset(redis_keys.rate_queue_key(*window)) == {"late": -1.0, "new": 0.0}


HOUR_MS = 3_600_000


def test_given_rate_waiter_that_never_returns_on_an_hour_long_window_then_the_next_is_admitted_at_its_turn(
    redis_backend: RedisBackend,
) -> None:
    limiters = redis_backend.executor
    window = ("t", "partner")
    assert limiters.admit_rate(*window, 1_000, 1, HOUR_MS, "e1", waiter="first") == ADMIT
    assert limiters.admit_rate(*window, 1_000, 1, HOUR_MS, "e2", waiter="gone") == refused(1_000 + HOUR_MS)
    assert limiters.admit_rate(*window, 1_000, 1, HOUR_MS, "e3", waiter="next") == refused(
        1_000 + 2 * HOUR_MS
    )

    # "gone" never asks again (cancelled): by next's turn it is forgotten from the queue and its turn alike.
    assert limiters.admit_rate(*window, 1_000 + 2 * HOUR_MS, 1, HOUR_MS, "e4", waiter="next") == ADMIT
    assert redis_backend.probe.zset(redis_keys.rate_queue_key(*window)) == {}
    assert redis_backend.probe.zset(redis_keys.rate_told_key(*window)) == {}


def test_given_semaphore_waiter_that_never_returns_on_hour_long_holds_then_the_next_is_admitted_at_its_turn(
    redis_backend: RedisBackend,
) -> None:
    limiters = redis_backend.executor
    lease = 10 * HOUR_MS
    assert limiters.acquire_slot(slot("first"), 1_000, 1, lease) == ADMIT
    redis_backend.clock.set(1_000 + HOUR_MS)
    limiters.release_slots([slot("first")])  # holders of this key hold an hour
    assert limiters.acquire_slot(slot("again"), 1_000 + HOUR_MS, 1, lease) == ADMIT
    turn = 1_000 + 2 * HOUR_MS
    assert limiters.acquire_slot(slot("gone"), 1_000 + HOUR_MS, 1, lease) == refused(turn)
    assert limiters.acquire_slot(slot("next"), 1_000 + HOUR_MS, 1, lease) == refused(turn + HOUR_MS)
    redis_backend.clock.set(turn)
    limiters.release_slots([slot("again")])

    # "gone" never asks again (dead-lettered): by next's turn it is forgotten from the queue and told alike.
    assert limiters.acquire_slot(slot("next"), turn + HOUR_MS, 1, lease) == ADMIT
    assert redis_backend.probe.zset(redis_keys.concurrency_queue_key("t", "pool")) == {}
    assert redis_backend.probe.zset(redis_keys.concurrency_told_key("t", "pool")) == {}
