"""promote.lua: moves due members (score <= now), at most `batch` per call, onto the ready stream."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest
import redis

from hookline.adapters.redis.index import RedisIndex
from hookline.domain.delivery import PromoteResult
from tests.integration.lua.conftest import (
    DUE,
    INFLIGHT,
    READY,
    SHARD,
    entry,
    seed,
    shard_state,
    state,
    stream,
    zset,
)
from tests.support.redis_mode import connect, disconnect

pytestmark = pytest.mark.integration

A, B, C, D = "t/a/1", "t/b/1", "t/c/1", "t/d/1"
NOW_MS = 10_000


@pytest.mark.parametrize(
    ("given", "batch", "want_result", "want"),
    [
        pytest.param(
            state(),
            10,
            PromoteResult(moved=0, next_due_ms=None),
            state(),
            id="given_empty_due_then_nothing_moved_and_no_next_due",
        ),
        pytest.param(
            state(due={A: NOW_MS}),
            10,
            PromoteResult(moved=1, next_due_ms=None),
            state(ready=[entry(A)], inflight={A: NOW_MS}),
            id="given_member_due_exactly_now_then_moved",
        ),
        pytest.param(
            state(due={A: NOW_MS + 1}),
            10,
            PromoteResult(moved=0, next_due_ms=NOW_MS + 1),
            state(due={A: NOW_MS + 1}),
            id="given_member_due_one_ms_after_now_then_stays_and_is_next_due",
        ),
        pytest.param(
            state(due={A: NOW_MS - 100, B: NOW_MS, C: NOW_MS + 1}),
            10,
            PromoteResult(moved=2, next_due_ms=NOW_MS + 1),
            state(due={C: NOW_MS + 1}, ready=[entry(A), entry(B)], inflight={A: NOW_MS, B: NOW_MS}),
            id="given_due_and_later_members_then_only_due_ones_moved_in_due_order",
        ),
        pytest.param(
            state(due={A: 100, B: 200, C: 300, D: 50_000}),
            2,
            PromoteResult(moved=2, next_due_ms=300),
            state(due={C: 300, D: 50_000}, ready=[entry(A), entry(B)], inflight={A: NOW_MS, B: NOW_MS}),
            id="given_more_due_than_batch_then_batch_moved_and_next_due_is_earliest_left",
        ),
        pytest.param(
            state(due={A: 100}, ready=[entry(C, 2)], inflight={C: 5_000, D: 6_000}),
            10,
            PromoteResult(moved=1, next_due_ms=None),
            state(ready=[entry(C, 2), entry(A)], inflight={A: NOW_MS, C: 5_000, D: 6_000}),
            id="given_existing_ready_and_inflight_then_appended_and_others_untouched",
        ),
    ],
)
def test_promote(
    redis_client: redis.Redis,
    redis_index: RedisIndex,
    given: dict[str, Any],
    batch: int,
    want_result: PromoteResult,
    want: dict[str, Any],
) -> None:
    seed(redis_client, due=given["due"], ready=given["ready"], inflight=given["inflight"], wake=given["wake"])

    result = redis_index.promote(SHARD, now_ms=NOW_MS, batch=batch)

    assert result == want_result
    assert shard_state(redis_client) == want


def test_given_four_promoters_racing_on_2000_due_members_then_each_member_on_stream_exactly_once(
    redis_client: redis.Redis, redis_index: RedisIndex, redis_url: str
) -> None:
    members = [f"t/job{i:04d}/1" for i in range(2_000)]
    redis_client.zadd(DUE, {member: i % 97 for i, member in enumerate(members)})
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def promoter() -> None:
        client = connect(redis_url)
        try:
            index = RedisIndex(client)
            start.wait(timeout=5)
            while index.promote(SHARD, now_ms=NOW_MS, batch=50).moved > 0:
                pass
        except BaseException as error:  # surfaced in the main thread below
            errors.append(error)
        finally:
            disconnect(client)

    threads = [threading.Thread(target=promoter) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)

    assert errors == []
    on_stream = Counter(fields["m"] for fields in stream(redis_client, READY))
    assert on_stream == Counter(members)
    assert all(fields["d"] == "0" for fields in stream(redis_client, READY))
    assert zset(redis_client, DUE) == {}
    assert zset(redis_client, INFLIGHT) == dict.fromkeys(members, NOW_MS)
