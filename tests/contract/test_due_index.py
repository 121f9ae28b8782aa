"""DueIndex contract (index.lua, promote.lua, wake lists, in-flight membership), fake and real alike."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.domain.delivery import PromoteResult
from hookline.domain.models import Member
from tests.contract.conftest import RedisBackend
from tests.contract.redis_cases import NOW, A, B, C, F, entry, state


def index_all(backend: RedisBackend, calls: Sequence[tuple[Member, int, int]]) -> list[bool]:
    """Indexes (member, due_ms, now_ms) in order on shard 0; returns each call's answer."""
    return [backend.executor.index(member, 0, due, now) for member, due, now in calls]


@pytest.mark.parametrize(
    ("calls", "want_answers", "want"),
    [
        pytest.param(
            [(A, NOW, NOW)],
            [True],
            state(ready=[entry(A)], inflight={A: NOW}),
            id="given_member_due_exactly_now_then_ready_entry_and_inflight_at_now",
        ),
        pytest.param(
            [(F, NOW - 1, NOW)],
            [True],
            state(ready=[entry(F)], inflight={F: NOW}),
            id="given_member_with_flow_control_overdue_then_ready_with_its_whole_encoding",
        ),
        pytest.param(
            [(A, NOW + 5_000, NOW), (A, NOW - 500, NOW + 1)],
            [False, True],
            state(ready=[entry(A)], inflight={A: NOW + 1}, wake=1),
            id="given_member_waiting_in_due_when_indexed_overdue_then_moved_from_due_to_ready",
        ),
        pytest.param(
            [(A, NOW + 1, NOW)],
            [False],
            state(due={A: NOW + 1}, wake=1),
            id="given_empty_due_when_member_due_one_ms_later_then_due_and_wake",
        ),
        pytest.param(
            [(B, NOW + 5_000, NOW), (A, NOW + 9_000, NOW)],
            [False, False],
            state(due={A: NOW + 9_000, B: NOW + 5_000}, wake=1),
            id="given_member_later_than_earliest_then_no_second_wake",
        ),
        pytest.param(
            [(B, NOW + 5_000, NOW), (A, NOW + 5_000, NOW)],
            [False, False],
            state(due={A: NOW + 5_000, B: NOW + 5_000}, wake=1),
            id="given_member_as_early_as_earliest_then_no_second_wake",
        ),
        pytest.param(
            [(B, NOW + 5_000, NOW), (A, NOW + 1_000, NOW)],
            [False, False],
            state(due={A: NOW + 1_000, B: NOW + 5_000}, wake=1),
            id="given_member_earlier_than_earliest_while_token_waits_then_still_one_token",
        ),
        pytest.param(
            [(A, NOW + 5_000, NOW), (A, NOW + 7_000, NOW)],
            [False, False],
            state(due={A: NOW + 7_000}, wake=1),
            id="given_member_indexed_again_later_then_one_member_at_the_new_time",
        ),
    ],
)
def test_index(
    redis_backend: RedisBackend,
    calls: list[tuple[Member, int, int]],
    want_answers: list[bool],
    want: dict[str, object],
) -> None:
    assert index_all(redis_backend, calls) == want_answers
    assert redis_backend.state() == want


def test_given_earlier_member_after_wake_token_was_taken_when_indexed_then_wakes_again(
    redis_backend: RedisBackend,
) -> None:
    index = redis_backend.executor
    index.index(B, 0, NOW + 5_000, NOW)
    assert index.poll_wake([0]) is True

    index.index(A, 0, NOW + 1_000, NOW)

    assert redis_backend.state() == state(due={A: NOW + 1_000, B: NOW + 5_000}, wake=1)


@pytest.mark.parametrize(
    ("due", "now", "batch", "want_result", "want"),
    [
        pytest.param(
            {A: NOW + 1},
            NOW,
            10,
            PromoteResult(0, NOW + 1),
            state(due={A: NOW + 1}),
            id="given_member_due_one_ms_later_then_not_promoted_early",
        ),
        pytest.param(
            {A: NOW, B: NOW - 5, C: NOW + 100},
            NOW,
            10,
            PromoteResult(2, NOW + 100),
            state(due={C: NOW + 100}, ready=[entry(B), entry(A)], inflight={A: NOW, B: NOW}),
            id="given_due_members_then_promoted_in_due_order_and_next_due_is_earliest_left",
        ),
        pytest.param(
            {A: NOW - 3, B: NOW - 2, C: NOW - 1},
            NOW,
            2,
            PromoteResult(2, NOW - 1),
            state(due={C: NOW - 1}, ready=[entry(A), entry(B)], inflight={A: NOW, B: NOW}),
            id="given_more_due_than_batch_then_batch_moved_and_next_is_already_due",
        ),
        pytest.param(
            {},
            NOW,
            10,
            PromoteResult(0, None),
            state(),
            id="given_nothing_indexed_then_nothing_moved_and_no_next",
        ),
    ],
)
def test_promote(
    redis_backend: RedisBackend,
    due: dict[Member, int],
    now: int,
    batch: int,
    want_result: PromoteResult,
    want: dict[str, object],
) -> None:
    index = redis_backend.executor
    for member, due_ms in due.items():
        index.index(member, 0, due_ms, 0)
    while index.poll_wake([0]):  # the seeding's wake tokens are not what this test looks at
        pass

    assert index.promote(0, now, batch) == want_result
    assert redis_backend.state() == want


def test_given_member_due_and_another_promoted_when_unindexed_then_only_due_one_removed(
    redis_backend: RedisBackend,
) -> None:
    index = redis_backend.executor
    index.index(A, 0, NOW + 1_000, NOW)
    index.index(B, 0, NOW, NOW)

    assert index.unindex(A, 0) is True
    assert index.unindex(A, 0) is False
    assert index.unindex(B, 0) is False  # promoted: the executor's claim drops it later
    assert redis_backend.state() == state(ready=[entry(B)], inflight={B: NOW}, wake=1)


def test_given_members_due_inflight_and_neither_when_asked_then_indexed_and_depth_tell_them_apart(
    redis_backend: RedisBackend,
) -> None:
    index = redis_backend.executor
    index.index(A, 0, NOW + 1_000, NOW)
    index.index(B, 0, NOW, NOW)

    assert index.indexed_members(0, [A, B, C]) == [True, True, False]
    assert index.indexed_members(0, []) == []
    assert index.depth(0) == (1, 1)
    assert index.depth(1) == (0, 0)


def test_given_tokens_on_two_shards_when_polled_then_both_taken(redis_backend: RedisBackend) -> None:
    index = redis_backend.executor
    index.index(A, 0, NOW + 1_000, NOW)
    index.index(B, 1, NOW + 1_000, NOW)

    assert index.poll_wake([0, 1]) is True
    assert index.poll_wake([0, 1]) is False
    assert [redis_backend.probe.list_length(redis_keys.wake_key(s)) for s in (0, 1)] == [0, 0]


def test_given_tokens_on_two_shards_when_waited_then_one_taken_per_wait(redis_backend: RedisBackend) -> None:
    index = redis_backend.executor
    index.index(A, 0, NOW + 1_000, NOW)
    index.index(B, 1, NOW + 1_000, NOW)

    assert index.wait_for_wake([0, 1], 1_000) is True
    assert [redis_backend.probe.list_length(redis_keys.wake_key(s)) for s in (0, 1)] == [0, 1]
    assert index.wait_for_wake([0, 1], 1_000) is True
    assert index.wait_for_wake([0, 1], 20) is False
