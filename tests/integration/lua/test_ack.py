"""ack.lua: finishes a delivery (XACK + XDEL) and drops the member from the in-flight index."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import redis

from hookline.adapters.redis.cluster import is_cluster
from hookline.adapters.redis.index import RedisIndex
from hookline.domain.models import Member
from tests.integration.lua.conftest import (
    EXECUTOR,
    READY,
    REAPER,
    SHARD,
    deliver,
    entry,
    seed,
    shard_state,
    state,
    stream_entries,
)

pytestmark = pytest.mark.integration

A, B = "t/a/1", "t/b/1"


@pytest.mark.parametrize(
    ("given", "delivered", "acked_before", "target", "want_acked", "want"),
    [
        pytest.param(
            state(ready=[entry(A), entry(B)], inflight={A: 1_000, B: 2_000}),
            2,
            [],
            A,
            True,
            state(ready=[entry(B)], pending=[(B, EXECUTOR, 1)], inflight={B: 2_000}),
            id="given_two_pending_entries_when_one_acked_then_it_is_deleted_and_leaves_inflight",
        ),
        pytest.param(
            state(ready=[entry(A, 3)], inflight={A: 1_000}),
            1,
            [],
            A,
            True,
            state(),
            id="given_redelivered_entry_pending_when_acked_then_stream_and_inflight_empty",
        ),
        pytest.param(
            state(ready=[entry(A), entry(B)], inflight={A: 1_000, B: 2_000}),
            2,
            [A],
            A,
            False,
            state(ready=[entry(B)], pending=[(B, EXECUTOR, 1)], inflight={B: 2_000}),
            id="given_entry_already_acked_when_acked_again_then_false_and_nothing_changes",
        ),
    ],
)
def test_ack(
    redis_client: redis.Redis,
    redis_index: RedisIndex,
    given: dict[str, Any],
    delivered: int,
    acked_before: list[str],
    target: str,
    want_acked: bool,
    want: dict[str, Any],
) -> None:
    seed(redis_client, due=given["due"], ready=given["ready"], inflight=given["inflight"], wake=given["wake"])
    entries = {e.member.encode(): e for e in deliver(redis_index, delivered)}
    for member in acked_before:
        assert redis_index.ack(entries[member]) is True
    before = shard_state(redis_client)

    acked = redis_index.ack(entries[target])

    assert acked is want_acked
    assert shard_state(redis_client) == want
    if not want_acked:
        assert shard_state(redis_client) == before


def test_given_entry_redelivered_when_stale_ack_of_old_entry_then_false_and_redelivery_still_inflight(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    seed(redis_client, ready=[entry(A)], inflight={A: 1_000})
    (old,) = deliver(redis_index, 1)
    reaper = RedisIndex(redis_client, consumer=REAPER)
    assert reaper.redeliver(SHARD, min_idle_ms=0, now_ms=5_000, max_deliveries=5).redelivered == 1
    ((new_id, _),) = stream_entries(redis_client, READY)
    (new,) = deliver(redis_index, 1)
    assert new.entry_id == new_id
    before = shard_state(redis_client)
    assert before == state(ready=[entry(A, 1)], pending=[(A, EXECUTOR, 1)], inflight={A: 5_000})

    acked = redis_index.ack(old)

    assert acked is False
    assert shard_state(redis_client) == before


def test_given_reader_and_acker_threads_one_after_another_then_each_connection_goes_back_to_the_pool(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    # On one node a reader and the acker keep a connection of their own while their thread lives
    # (RedisBase._own_client); a run's threads end, the next run's start: none may keep one for good.
    if is_cluster(redis_client):
        pytest.skip("a cluster client has no connection of its own per thread")
    redis_index.index(Member.decode("t/a/1"), SHARD, 0, 1)

    def read_and_ack() -> None:
        for taken in redis_index.read_ready([SHARD], 10, 0):
            redis_index.ack_many([taken])

    for _ in range(30):
        thread = threading.Thread(target=read_and_ack)
        thread.start()
        thread.join()

    pool = redis_index.client.connection_pool
    assert pool._in_use_connections == set()  # type: ignore[attr-defined]
    assert len(pool._available_connections) <= 2  # type: ignore[attr-defined]
    assert shard_state(redis_client)["ready"] == []  # read and acknowledged by the first thread
