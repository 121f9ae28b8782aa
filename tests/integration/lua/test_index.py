"""index.lua: a member goes onto the ready stream when due, else into the due ZSET (waking the promoter)."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from hookline.adapters.redis.cluster import is_cluster
from hookline.adapters.redis.index import RedisIndex
from hookline.domain.models import Member
from tests.integration.lua.conftest import SHARD, entry, seed, shard_state, state

pytestmark = pytest.mark.integration

A, B, C = "t/a/1", "t/b/1", "t/c/1"
NOW_MS = 10_000


@pytest.mark.parametrize(
    ("given", "member", "due_ms", "want_ready", "want"),
    [
        pytest.param(
            state(),
            A,
            NOW_MS,
            True,
            state(ready=[entry(A)], inflight={A: NOW_MS}),
            id="given_empty_shard_when_member_due_exactly_now_then_ready_entry_and_inflight_now",
        ),
        pytest.param(
            state(due={A: 50_000, B: 60_000}, inflight={C: 1_000}),
            A,
            NOW_MS - 500,
            True,
            state(due={B: 60_000}, ready=[entry(A)], inflight={A: NOW_MS, C: 1_000}),
            id="given_member_in_due_when_indexed_overdue_then_moved_from_due_to_ready",
        ),
        pytest.param(
            state(ready=[entry(B)]),
            A,
            NOW_MS,
            True,
            state(ready=[entry(B), entry(A)], inflight={A: NOW_MS}),
            id="given_ready_entries_when_member_due_then_appended_after_them",
        ),
        pytest.param(
            state(),
            A,
            NOW_MS + 1,
            False,
            state(due={A: NOW_MS + 1}, wake=1),
            id="given_empty_due_when_member_due_one_ms_later_then_zadd_and_wake",
        ),
        pytest.param(
            state(due={B: 15_000}),
            A,
            20_000,
            False,
            state(due={A: 20_000, B: 15_000}),
            id="given_member_due_later_than_earliest_then_no_wake",
        ),
        pytest.param(
            state(due={B: 20_000}),
            A,
            20_000,
            False,
            state(due={A: 20_000, B: 20_000}),
            id="given_member_due_same_time_as_earliest_then_no_wake",
        ),
        pytest.param(
            state(due={B: 30_000}),
            A,
            20_000,
            False,
            state(due={A: 20_000, B: 30_000}, wake=1),
            id="given_member_due_before_earliest_then_wake",
        ),
        pytest.param(
            state(due={B: 30_000}, wake=1),
            A,
            20_000,
            False,
            state(due={A: 20_000, B: 30_000}, wake=1),
            id="given_wake_token_present_when_member_becomes_earliest_then_token_not_duplicated",
        ),
        pytest.param(
            state(due={A: 30_000, B: 40_000}),
            A,
            20_000,
            False,
            state(due={A: 20_000, B: 40_000}, wake=1),
            id="given_member_is_earliest_when_reindexed_earlier_then_rescored_and_wake",
        ),
    ],
)
def test_index(
    redis_client: redis.Redis,
    redis_index: RedisIndex,
    given: dict[str, Any],
    member: str,
    due_ms: int,
    want_ready: bool,
    want: dict[str, Any],
) -> None:
    seed(redis_client, due=given["due"], ready=given["ready"], inflight=given["inflight"], wake=given["wake"])

    went_ready = redis_index.index(Member.decode(member), SHARD, due_ms=due_ms, now_ms=NOW_MS)

    assert went_ready is want_ready
    assert shard_state(redis_client) == want


@pytest.mark.parametrize(
    ("given", "want"),
    [
        pytest.param(
            state(ready=[entry(B)], inflight={B: 1_000}),
            state(ready=[entry(B), entry(A)], inflight={A: NOW_MS, B: 1_000}),
            id="given_new_member_when_due_now_then_ready_entry_and_inflight_without_zrem",
        ),
        pytest.param(
            state(due={A: 50_000}),
            state(due={A: 50_000}, ready=[entry(A)], inflight={A: NOW_MS}),
            id="given_member_wrongly_called_new_while_due_later_then_it_stays_due_too_a_second_delivery",
        ),
    ],
)
def test_index_new_member(
    redis_client: redis.Redis, redis_index: RedisIndex, given: dict[str, Any], want: dict[str, Any]
) -> None:
    seed(redis_client, due=given["due"], ready=given["ready"], inflight=given["inflight"], wake=given["wake"])
    redis_client.config_resetstat()

    went_ready = redis_index.index(Member.decode(A), SHARD, due_ms=NOW_MS, now_ms=NOW_MS, new_member=True)

    assert went_ready is True
    assert shard_state(redis_client) == want
    if not is_cluster(redis_client):  # a cluster's commands are counted per node
        assert "cmdstat_zrem" not in redis_client.info("commandstats")


def test_given_members_of_every_kind_when_indexed_together_then_each_lands_as_index_puts_it(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    entries = [
        (Member.decode(A), SHARD, NOW_MS),
        (Member.decode(B), SHARD, 30_000),
        (Member.decode(C), SHARD, 20_000),
    ]

    redis_index.index_many(entries, NOW_MS, new_member=True)

    # as the table above has index() put each: A due now onto the ready stream, B and C into the due ZSET
    # with one wake (for B, the first into an empty ZSET; C, earlier, finds the token there)
    assert shard_state(redis_client) == state(
        due={B: 30_000, C: 20_000}, ready=[entry(A)], inflight={A: NOW_MS}, wake=1
    )


def test_given_scripts_flushed_when_indexed_together_then_each_is_indexed_once_through_the_script(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    redis_client.script_flush()  # a restarted or failed-over node: EVALSHA meets NOSCRIPT
    redis_client.config_resetstat()

    redis_index.index_many([(Member.decode(A), SHARD, NOW_MS), (Member.decode(B), SHARD, 30_000)], NOW_MS)

    assert shard_state(redis_client) == state(due={B: 30_000}, ready=[entry(A)], inflight={A: NOW_MS}, wake=1)


def test_given_one_node_when_indexed_together_then_one_evalsha_each_and_no_script_check(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    if is_cluster(redis_client):
        pytest.skip("a cluster's commands are counted per node, and it indexes one call each")
    redis_index.index(Member.decode(C), SHARD, 20_000, NOW_MS)  # the script is loaded
    redis_client.config_resetstat()

    redis_index.index_many([(Member.decode(A), SHARD, NOW_MS), (Member.decode(B), SHARD, 30_000)], NOW_MS)

    commands = redis_client.info("commandstats")
    assert commands["cmdstat_evalsha"]["calls"] == 2
    assert not any(name.startswith("cmdstat_script") for name in commands)
