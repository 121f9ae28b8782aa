"""park.lua and unpark.lua: a paused queue's deliveries set aside per shard (no attempt spent), then released
onto the ready stream; every shard key and the parked keys asserted."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.index import RedisIndex
from hookline.domain.idle import WakePolicy
from tests.integration.lua.conftest import EXECUTOR, SHARD, deliver, entry, seed, shard_state, state, zset

pytestmark = pytest.mark.integration

FLOW = '[null,0,0,null,0,"mail"]'  # FlowControl(queue="mail").encode()
A, B = f"t/a/1/{FLOW}", f"t/b/1/{FLOW}"
PARKED = redis_keys.parked_key(SHARD, "t", "mail")
QUEUES = redis_keys.parked_queues_key(SHARD)
NOW_MS = 70_000


def _parked(client: redis.Redis) -> dict[str, Any]:
    return {"parked": zset(client, PARKED), "queues": sorted(m.decode() for m in client.smembers(QUEUES))}


@pytest.mark.parametrize(
    ("acked_before", "want_parked", "want_shard", "want_keys"),
    [
        pytest.param(
            False,
            True,
            state(ready=[entry(B)], pending=[(B, EXECUTOR, 1)], inflight={B: 2_000}),
            {"parked": {A: NOW_MS}, "queues": ["t/mail"]},
            id="given_pending_entry_when_parked_then_entry_finished_member_parked_queue_listed",
        ),
        pytest.param(
            True,
            False,
            state(ready=[entry(B)], pending=[(B, EXECUTOR, 1)], inflight={B: 2_000}),
            {"parked": {}, "queues": []},
            id="given_entry_already_acked_when_parked_then_false_and_nothing_parked",
        ),
    ],
)
def test_park(
    redis_client: redis.Redis,
    redis_index: RedisIndex,
    acked_before: bool,
    want_parked: bool,
    want_shard: dict[str, Any],
    want_keys: dict[str, Any],
) -> None:
    seed(redis_client, ready=[entry(A), entry(B)], inflight={A: 1_000, B: 2_000})
    target = deliver(redis_index, 2)[0]
    if acked_before:
        assert redis_index.ack(target) is True

    assert redis_index.park(target, "mail", NOW_MS) is want_parked

    assert shard_state(redis_client) == want_shard
    assert _parked(redis_client) == want_keys


def test_given_member_parked_twice_then_its_first_parking_time_is_kept(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    redis_client.zadd(PARKED, {A: 1_000})
    seed(redis_client, ready=[entry(A)], inflight={A: 1_000})
    target = deliver(redis_index, 1)[0]

    assert redis_index.park(target, "mail", NOW_MS) is True

    assert zset(redis_client, PARKED) == {A: 1_000}


@pytest.mark.parametrize(
    ("parked", "batch", "want_moved", "want_ready", "want_keys"),
    [
        pytest.param(
            {A: 1_000, B: 2_000},
            10,
            (2, 0),
            [A, B],
            {"parked": {}, "queues": []},
            id="given_two_parked_when_unparked_then_both_ready_oldest_first_and_queue_unlisted",
        ),
        pytest.param(
            {A: 1_000, B: 2_000},
            1,
            (1, 1),
            [A],
            {"parked": {B: 2_000}, "queues": ["t/mail"]},
            id="given_more_than_batch_when_unparked_then_batch_moved_rest_left_and_still_listed",
        ),
        pytest.param(
            {},
            10,
            (0, 0),
            [],
            {"parked": {}, "queues": []},
            id="given_nothing_parked_when_unparked_then_nothing_moves_and_queue_unlisted",
        ),
    ],
)
def test_unpark(
    redis_client: redis.Redis,
    redis_index: RedisIndex,
    parked: dict[str, float],
    batch: int,
    want_moved: tuple[int, int],
    want_ready: list[str],
    want_keys: dict[str, Any],
) -> None:
    if parked:
        redis_client.zadd(PARKED, parked)
    redis_client.sadd(QUEUES, "t/mail")

    assert redis_index.unpark(SHARD, "t", "mail", NOW_MS, batch) == want_moved

    assert shard_state(redis_client) == state(
        ready=[entry(m) for m in want_ready], inflight=dict.fromkeys(want_ready, NOW_MS)
    )
    assert _parked(redis_client) == want_keys
    assert redis_index.parked_queues(SHARD) == [("t", "mail")] * len(want_keys["queues"])


@pytest.mark.parametrize(
    ("parked", "alive", "want_woken"),
    [
        pytest.param({A: 1_000}, False, [SHARD], id="given_no_promoter_when_unparked_then_one_woken"),
        pytest.param({A: 1_000}, True, [], id="given_promoter_alive_when_unparked_then_none_woken"),
        pytest.param({}, False, [], id="given_nothing_parked_when_unparked_then_none_woken"),
    ],
)
def test_given_idle_mode_when_unparked_then_a_promoter_is_woken_only_when_needed(
    redis_client: redis.Redis, parked: dict[str, float], alive: bool, want_woken: list[int]
) -> None:
    woken: list[int] = []
    index = RedisIndex(redis_client, consumer="api")
    index.ensure_group(SHARD)
    index.wake_promoters_with(WakePolicy(75_000, 10_000), woken.append)
    if parked:
        redis_client.zadd(PARKED, parked)
    if alive:
        redis_client.set(redis_keys.promoter_alive_key(SHARD), "1")

    index.unpark(SHARD, "t", "mail", NOW_MS, 10)
    index.unpark(SHARD, "t", "mail", NOW_MS, 10)  # a second call in the burst: the claim is held

    assert woken == want_woken
    assert redis_client.exists(redis_keys.wake_claim_key(SHARD)) == len(want_woken)
