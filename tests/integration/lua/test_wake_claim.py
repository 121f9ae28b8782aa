"""index.lua's and cron_set.lua's wake claim (lua/shared/wake_claim.lua) and promote.lua's heartbeat: a
member or schedule due within the horizon, set while no promoter runs, makes one caller of a burst start a
promoter; a running promoter's heartbeat stops it."""

from __future__ import annotations

import threading

import pytest
import redis

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.index import RedisIndex
from hookline.domain.cron.schedule import ScheduleMember
from hookline.domain.idle import WakePolicy
from hookline.domain.models import Member
from tests.integration.lua.conftest import SHARD, entry, shard_state, state

pytestmark = pytest.mark.integration

A, B = "t/a/1", "t/b/1"
NOW_MS = 10_000
HORIZON_MS = 75_000
CLAIM_MS = 10_000
ALIVE = redis_keys.promoter_alive_key(SHARD)
CLAIM = redis_keys.wake_claim_key(SHARD)


def woken_index(client: redis.Redis, woken: list[int]) -> RedisIndex:
    index = RedisIndex(client, consumer="submit")
    index.ensure_group(SHARD)
    index.wake_promoters_with(WakePolicy(HORIZON_MS, CLAIM_MS), woken.append)
    return index


@pytest.mark.parametrize(
    ("alive", "claimed", "due_ms", "want_woken", "want_claim"),
    [
        pytest.param(False, False, NOW_MS + 5_000, True, True, id="given_no_promoter_when_soon_then_woken"),
        pytest.param(False, False, NOW_MS, True, True, id="given_no_promoter_when_due_now_then_woken"),
        pytest.param(
            False, False, NOW_MS + HORIZON_MS, True, True, id="given_no_promoter_when_at_horizon_then_woken"
        ),
        pytest.param(
            False,
            False,
            NOW_MS + HORIZON_MS + 1,
            False,
            False,
            id="given_no_promoter_when_due_past_horizon_then_left_to_a_tick",
        ),
        pytest.param(True, False, NOW_MS + 5_000, False, False, id="given_promoter_alive_then_not_woken"),
        pytest.param(False, True, NOW_MS + 5_000, False, True, id="given_claim_held_then_not_woken_again"),
    ],
)
def test_index_wake(
    redis_client: redis.Redis,
    alive: bool,
    claimed: bool,
    due_ms: int,
    want_woken: bool,
    want_claim: bool,
) -> None:
    if alive:
        redis_client.set(ALIVE, "1", px=5_000)
    if claimed:
        redis_client.set(CLAIM, "1", px=CLAIM_MS)
    woken: list[int] = []

    woken_index(redis_client, woken).index(Member.decode(A), SHARD, due_ms, NOW_MS, new_member=True)

    assert woken == ([SHARD] if want_woken else [])
    assert (redis_client.exists(CLAIM) == 1) is want_claim
    if want_woken:
        # the claim lasts claim_ms (relative expiry), long enough for the woken promoter to set its heartbeat
        assert 0 < redis_client.pttl(CLAIM) <= CLAIM_MS


def test_given_wake_claim_when_member_indexed_then_it_lands_as_without_the_claim(
    redis_client: redis.Redis,
) -> None:
    woken: list[int] = []
    index = woken_index(redis_client, woken)

    went_ready = index.index(Member.decode(A), SHARD, NOW_MS, NOW_MS, new_member=True)
    went_due = index.index(Member.decode(B), SHARD, NOW_MS + 1_000, NOW_MS, new_member=True)

    assert (went_ready, went_due) == (True, False)
    assert shard_state(redis_client) == state(
        due={B: NOW_MS + 1_000}, ready=[entry(A)], inflight={A: NOW_MS}, wake=1
    )
    assert woken == [SHARD]  # the first took the claim; the second found it held


def test_given_no_wake_policy_when_indexed_then_no_claim_is_taken(redis_client: redis.Redis) -> None:
    RedisIndex(redis_client).index(Member.decode(A), SHARD, NOW_MS + 1_000, NOW_MS, new_member=True)

    assert redis_client.exists(CLAIM) == 0


def test_given_burst_from_many_threads_when_no_promoter_runs_then_exactly_one_wakes(
    redis_client: redis.Redis,
) -> None:
    woken: list[int] = []
    index = woken_index(redis_client, woken)
    start = threading.Barrier(8)

    def submit(number: int) -> None:
        start.wait()
        for job in range(25):
            index.index(Member.decode(f"t/j{number}-{job}/1"), SHARD, NOW_MS + 2_000, NOW_MS, new_member=True)

    threads = [threading.Thread(target=submit, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert woken == [SHARD]


def test_given_burst_indexed_together_when_no_promoter_runs_then_exactly_one_wakes(
    redis_client: redis.Redis,
) -> None:
    woken: list[int] = []
    entries = [(Member.decode(f"t/j{job}/1"), SHARD, NOW_MS + job) for job in range(50)]

    woken_index(redis_client, woken).index_many(entries, NOW_MS, new_member=True)

    assert woken == [SHARD]


@pytest.mark.parametrize(
    ("alive_ms", "want_ttl"),
    [
        pytest.param(5_000, True, id="given_promoter_visit_then_heartbeat_set_for_alive_ms"),
        pytest.param(0, False, id="given_backstop_visit_then_no_heartbeat"),
    ],
)
def test_promote_heartbeat(redis_client: redis.Redis, alive_ms: int, want_ttl: bool) -> None:
    index = RedisIndex(redis_client)

    index.promote(SHARD, NOW_MS, 10, alive_ms)

    ttl = redis_client.pttl(ALIVE)
    if want_ttl:
        assert 0 < ttl <= alive_ms
    else:
        assert ttl == -2  # no key


def test_given_promoter_stood_down_when_member_indexed_due_soon_then_woken_again(
    redis_client: redis.Redis,
) -> None:
    woken: list[int] = []
    index = woken_index(redis_client, woken)
    index.promote(SHARD, NOW_MS, 10, 5_000)
    index.index(Member.decode(A), SHARD, NOW_MS + 1_000, NOW_MS, new_member=True)
    assert woken == []

    index.stand_down([SHARD])
    index.index(Member.decode(B), SHARD, NOW_MS + 1_000, NOW_MS, new_member=True)

    assert woken == [SHARD]


class FixedClock:
    def __init__(self, now_ms: int) -> None:
        self._now_ms = now_ms

    def now_ms(self) -> int:
        return self._now_ms


@pytest.mark.parametrize(
    ("alive", "new", "next_fire_ms", "want_woken"),
    [
        pytest.param(
            False, "t/S/1", NOW_MS + 5_000, True, id="given_no_promoter_when_schedule_fires_soon_then_woken"
        ),
        pytest.param(
            False,
            "t/S/1",
            NOW_MS + HORIZON_MS + 1,
            False,
            id="given_no_promoter_when_schedule_fires_past_horizon_then_left_to_a_tick",
        ),
        pytest.param(
            True, "t/S/1", NOW_MS + 5_000, False, id="given_promoter_alive_when_schedule_set_then_not_woken"
        ),
        pytest.param(False, None, NOW_MS + 5_000, False, id="given_schedule_removed_then_not_woken"),
    ],
)
def test_cron_set_wake(
    redis_client: redis.Redis, alive: bool, new: str | None, next_fire_ms: int, want_woken: bool
) -> None:
    if alive:
        redis_client.set(ALIVE, "1", px=5_000)
    woken: list[int] = []
    index = RedisIndex(redis_client, clock=FixedClock(NOW_MS))
    index.wake_promoters_with(WakePolicy(HORIZON_MS, CLAIM_MS), woken.append)

    written = index.set_cron(SHARD, None, None if new is None else ScheduleMember.decode(new), next_fire_ms)

    assert written is (new is not None)
    assert woken == ([SHARD] if want_woken else [])


def test_given_burst_over_several_shards_when_no_promoter_runs_then_exactly_one_wakes(
    redis_client: redis.Redis,
) -> None:
    woken: list[int] = []
    index = woken_index(redis_client, woken)

    for shard in range(4):
        for job in range(3):
            index.index(Member.decode(f"t/s{shard}-{job}/1"), shard, NOW_MS + 1_000, NOW_MS, new_member=True)

    # each shard's first call took its shard's claim; only the first of those took the deployment's
    assert woken == [0]
    assert redis_client.exists(redis_keys.global_wake_claim_key()) == 1


def test_given_woken_promoter_ended_idle_when_member_indexed_within_the_claim_time_then_woken_again(
    redis_client: redis.Redis,
) -> None:
    woken: list[int] = []
    index = woken_index(redis_client, woken)
    index.index(Member.decode(A), SHARD, NOW_MS + 1_000, NOW_MS, new_member=True)

    index.stand_down([SHARD])  # the woken promoter ran and ended, well within CLAIM_MS
    index.index(Member.decode(B), SHARD, NOW_MS + 1_000, NOW_MS, new_member=True)

    assert woken == [SHARD, SHARD]
