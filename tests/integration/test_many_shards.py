"""Many shards on a real redis-server: the promoter's waiter threads, one blocking connection per shard,
all get a connection from the client the composition root builds; between its sweeps the promoter visits
the shards whose wake list had a token."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
import redis

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.cluster import is_cluster
from hookline.adapters.redis.index import RedisIndex
from hookline.domain.clock import SystemClock
from hookline.domain.models import Member
from hookline.plumbing import wiring
from hookline.plumbing.settings import Settings
from hookline.ports import NullMetrics
from hookline.usecases.promote import Promoter
from hookline.usecases.wake import ShardWaiters
from tests.fakes.metrics import RecordingMetrics
from tests.support.redis_mode import CLUSTER_MODE

pytestmark = pytest.mark.integration

SHARDS = 160  # past redis-py's default cap of 100 connections


@pytest.mark.usefixtures("redis_client")  # an empty Redis: a wake token left by an earlier test would wake
def test_given_more_shards_than_the_default_connection_cap_when_every_waiter_blocks_then_none_fails(
    redis_url: str,
) -> None:
    settings = Settings(redis_url=redis_url, redis_cluster=CLUSTER_MODE, shards=SHARDS)
    client = wiring.redis_client(settings)
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


def test_given_a_sleeping_promoter_over_many_shards_when_jobs_fall_due_sooner_then_their_shards_are_visited(
    redis_client: redis.Redis,
) -> None:
    shards = 8
    index, clock = RedisIndex(redis_client, consumer="submitter"), SystemClock()
    start = clock.now_ms()
    index.index(Member("t", "later", 1), 2, start + 60_000, start)  # shard 2's earliest: a minute away
    # The longest sleep (and so the sweep of every shard) outlasts the run: only the first tick sweeps.
    promoter = Promoter(
        RedisIndex(redis_client, consumer="promoter"),
        clock,
        list(range(shards)),
        NullMetrics(),
        max_sleep_ms=RUN_MS * 2,
    )
    runner = threading.Thread(target=promoter.run, args=(start + RUN_MS,))
    runner.start()
    try:
        time.sleep(0.5)  # the first tick (the sweep) is over; the promoter sleeps until the run's end
        now = clock.now_ms()
        soon = {3: Member("t", "fresh", 1), 2: Member("t", "sooner", 1)}  # an empty shard, and a known one
        for shard, member in soon.items():
            index.index(member, shard, now + 200, now)  # each its shard's earliest: a wake token

        promoted = wait_until(
            lambda: all(
                redis_client.zscore(redis_keys.inflight_key(shard), member.encode()) is not None
                for shard, member in soon.items()
            ),
            timeout_s=RUN_MS / 1000 - 1.5,
        )

        assert promoted, "woken shards were not visited before the run's end"
        assert redis_client.zscore(redis_keys.due_key(2), Member("t", "later", 1).encode()) is not None
    finally:
        runner.join()


def wait_until(check: Callable[[], bool], timeout_s: float) -> bool:
    """Polls check every 10 ms until it holds or timeout_s passed; returns whether it held."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return check()


RUN_MS = 6_000
