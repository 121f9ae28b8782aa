"""heartbeat.lua: resets the idle time of this consumer's pending entries, and of no one else's."""

from __future__ import annotations

import time

import pytest
import redis

from hookline.adapters.redis.index import RedisIndex
from tests.integration.lua.conftest import (
    EXECUTOR,
    GROUP,
    READY,
    REAPER,
    SHARD,
    deliver,
    entry,
    seed,
    shard_state,
    state,
)

pytestmark = pytest.mark.integration

A, B, C = "t/a/1", "t/b/1", "t/c/1"
IDLE_MS = 150


def idle_ms(client: redis.Redis) -> dict[str, int]:
    """Returns each pending entry's idle time by entry id."""
    rows = client.xpending_range(READY, GROUP, min="-", max="+", count=100)
    return {row["message_id"].decode(): int(row["time_since_delivered"]) for row in rows}


def test_given_own_pending_entries_when_beaten_then_idle_reset_and_nothing_else_changes(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    seed(redis_client, ready=[entry(A), entry(B), entry(C)], inflight={A: 1, B: 2, C: 3})
    a, b, c = deliver(redis_index, 3)
    time.sleep(IDLE_MS / 1000)
    before = shard_state(redis_client)

    held = redis_index.heartbeat([a, b])

    assert held == {a.entry_id, b.entry_id}
    idle = idle_ms(redis_client)
    assert idle[a.entry_id] < IDLE_MS and idle[b.entry_id] < IDLE_MS
    assert idle[c.entry_id] >= IDLE_MS  # not beaten: it still ages towards re-delivery
    # Same entries, same owner, same delivery counts (JUSTID does not count a delivery).
    assert shard_state(redis_client) == before


def test_given_entry_taken_over_or_acked_when_beaten_then_left_alone_and_not_returned(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    seed(redis_client, ready=[entry(A), entry(B)], inflight={A: 1, B: 2})
    a, b = deliver(redis_index, 2)
    assert redis_index.ack(b)
    reaper = RedisIndex(redis_client, consumer=REAPER)
    redis_client.xclaim(READY, GROUP, REAPER, 0, [a.entry_id], justid=True)  # another consumer owns it now
    time.sleep(IDLE_MS / 1000)

    held = redis_index.heartbeat([a, b])

    assert held == set()
    assert idle_ms(redis_client)[a.entry_id] >= IDLE_MS
    assert shard_state(redis_client) == state(ready=[entry(A)], pending=[(A, REAPER, 1)], inflight={A: 1})
    assert reaper.heartbeat([a]) == {a.entry_id}


def test_given_beaten_entry_when_recovery_runs_then_only_the_unbeaten_one_is_redelivered(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    seed(redis_client, ready=[entry(A), entry(B)], inflight={A: 1, B: 2})
    a, _ = deliver(redis_index, 2)
    time.sleep(IDLE_MS / 1000)
    redis_index.heartbeat([a])

    result = RedisIndex(redis_client, consumer=REAPER).redeliver(
        SHARD, min_idle_ms=IDLE_MS, now_ms=5_000, max_deliveries=5
    )

    assert result.redelivered == 1
    assert shard_state(redis_client) == state(
        ready=[entry(A), entry(B, 1)], pending=[(A, EXECUTOR, 1)], inflight={A: 1, B: 5_000}
    )


def test_given_redis_lost_the_stream_when_beaten_then_nothing_is_held_and_nothing_raised(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    seed(redis_client, ready=[entry(A)], inflight={A: 1})
    (a,) = deliver(redis_index, 1)
    redis_client.flushall()

    assert redis_index.heartbeat([a]) == set()
    assert shard_state(redis_client) == state()
