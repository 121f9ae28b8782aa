"""defer.lua: puts a pending delivery back into the due ZSET (no attempt spent) and finishes its entry."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from hookline.adapters.redis.index import RedisIndex
from tests.integration.lua.conftest import EXECUTOR, deliver, entry, seed, shard_state, state

pytestmark = pytest.mark.integration

A, B, X = "t/a/1", "t/b/1", "t/x/1"
DUE_MS = 50_000


def _pending_a_and_b(**given: Any) -> dict[str, Any]:
    return state(ready=[entry(A), entry(B)], inflight={A: 1_000, B: 2_000}, **given)


@pytest.mark.parametrize(
    ("given", "acked_before", "want_deferred", "want"),
    [
        pytest.param(
            _pending_a_and_b(),
            False,
            True,
            state(due={A: DUE_MS}, ready=[entry(B)], pending=[(B, EXECUTOR, 1)], inflight={B: 2_000}, wake=1),
            id="given_pending_entry_and_empty_due_when_deferred_then_due_and_wake",
        ),
        pytest.param(
            _pending_a_and_b(due={X: DUE_MS + 1}),
            False,
            True,
            state(
                due={A: DUE_MS, X: DUE_MS + 1},
                ready=[entry(B)],
                pending=[(B, EXECUTOR, 1)],
                inflight={B: 2_000},
                wake=1,
            ),
            id="given_later_member_due_when_deferred_before_it_then_wake",
        ),
        pytest.param(
            _pending_a_and_b(due={X: DUE_MS}),
            False,
            True,
            state(
                due={A: DUE_MS, X: DUE_MS}, ready=[entry(B)], pending=[(B, EXECUTOR, 1)], inflight={B: 2_000}
            ),
            id="given_member_due_same_time_when_deferred_then_no_wake",
        ),
        pytest.param(
            _pending_a_and_b(due={X: DUE_MS - 1}),
            False,
            True,
            state(
                due={A: DUE_MS, X: DUE_MS - 1},
                ready=[entry(B)],
                pending=[(B, EXECUTOR, 1)],
                inflight={B: 2_000},
            ),
            id="given_earlier_member_due_when_deferred_then_no_wake",
        ),
        pytest.param(
            _pending_a_and_b(wake=1),
            False,
            True,
            state(due={A: DUE_MS}, ready=[entry(B)], pending=[(B, EXECUTOR, 1)], inflight={B: 2_000}, wake=1),
            id="given_wake_token_present_when_deferred_as_earliest_then_token_not_duplicated",
        ),
        pytest.param(
            _pending_a_and_b(),
            True,
            False,
            state(ready=[entry(B)], pending=[(B, EXECUTOR, 1)], inflight={B: 2_000}),
            id="given_entry_already_acked_when_deferred_then_false_and_no_due_member",
        ),
    ],
)
def test_defer(
    redis_client: redis.Redis,
    redis_index: RedisIndex,
    given: dict[str, Any],
    acked_before: bool,
    want_deferred: bool,
    want: dict[str, Any],
) -> None:
    seed(redis_client, due=given["due"], ready=given["ready"], inflight=given["inflight"], wake=given["wake"])
    target = deliver(redis_index, 2)[0]
    if acked_before:
        assert redis_index.ack(target) is True

    deferred = redis_index.defer(target, due_ms=DUE_MS)

    assert deferred is want_deferred
    assert shard_state(redis_client) == want
