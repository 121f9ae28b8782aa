"""Many shards on a real redis-server: the promoter's waiter threads, one blocking connection per shard,
all get a connection from the client the composition root builds."""

from __future__ import annotations

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.cluster import is_cluster
from hookline.adapters.redis.index import RedisIndex
from hookline.domain.clock import SystemClock
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import redis_client
from hookline.usecases.wake import ShardWaiters
from tests.fakes.metrics import RecordingMetrics
from tests.support.redis_mode import CLUSTER_MODE

pytestmark = pytest.mark.integration

SHARDS = 160  # past redis-py's default cap of 100 connections


def test_given_more_shards_than_the_default_connection_cap_when_every_waiter_blocks_then_none_fails(
    redis_url: str,
) -> None:
    settings = Settings(redis_url=redis_url, redis_cluster=CLUSTER_MODE, shards=SHARDS)
    client = redis_client(settings)
    clock, metrics = SystemClock(), RecordingMetrics()
    waiters = ShardWaiters(RedisIndex(client), clock, metrics, list(range(SHARDS)), max_block_ms=500)
    waiters.start(clock.now_ms() + 60_000)
    try:
        client.rpush(redis_keys.wake_key(SHARDS - 1), "1")

        assert waiters.wait(30_000)
        assert waiters.take_woken() == {SHARDS - 1}
        assert metrics.counts.get("IndexUnavailable", 0) == 0
    finally:
        waiters.stop()
        client.close()
        if not is_cluster(client):  # a cluster closes its nodes' pools itself
            client.connection_pool.disconnect()
