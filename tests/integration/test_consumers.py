"""Consumer bookkeeping: the reaper deletes consumers of executor processes that are gone."""

from __future__ import annotations

import time

import pytest
import redis

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.index import RedisIndex
from hookline.domain.models import Member

pytestmark = pytest.mark.integration


def consumers(client: redis.Redis) -> dict[str, int]:
    rows = client.xinfo_consumers(redis_keys.ready_stream(0), redis_keys.CONSUMER_GROUP)
    return {row["name"].decode(): int(row["pending"]) for row in rows}


def test_given_idle_consumers_when_pruned_then_only_those_holding_nothing_go(
    redis_client: redis.Redis,
) -> None:
    busy, gone = RedisIndex(redis_client, consumer="busy"), RedisIndex(redis_client, consumer="gone")
    busy.ensure_group(0)
    busy.index(Member("t", "a", 1), 0, 0, 1)
    assert len(busy.read_ready([0], 10, 10)) == 1  # busy now holds one pending entry
    busy.index(Member("t", "b", 1), 0, 0, 1)
    (finished,) = gone.read_ready([0], 10, 10)
    assert gone.ack(finished)  # gone did its work and holds nothing
    time.sleep(0.05)

    assert busy.prune_consumers(0, idle_ms=3_600_000) == 0  # not idle long enough
    assert busy.prune_consumers(0, idle_ms=20) == 1

    assert consumers(redis_client) == {"busy": 1}
