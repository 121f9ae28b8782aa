"""claim_idle.lua: an executor takes idle deliveries over in place (same id, ahead of unread entries).

Idle time is real: the `old` entries are read, then the test sleeps past MIN_IDLE_MS before the `fresh`
entries are read, so only the old ones have been idle long enough to be taken.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis

from hookline.adapters.redis.index import RedisIndex
from tests.integration.lua.conftest import EXECUTOR, READY, SHARD, deliver, entry, seed, shard_state, state

pytestmark = pytest.mark.integration

A, B, C = "t/a/1", "t/b/1", "t/c/1"
INFLIGHT_BEFORE = {A: 1_000, B: 2_000, C: 3_000}
NOW_MS = 9_000
MIN_IDLE_MS = 50
IDLE_SLEEP_S = 0.1
TAKER = "taker"


@dataclass(frozen=True)
class Case:
    """Given entries read long ago (`old`), just now (`fresh`) and never (`unread`); when claimed; then..."""

    want_claimed: list[tuple[str, int]]
    want: dict[str, Any]
    old: list[dict[str, str]] = field(default_factory=list)
    fresh: list[dict[str, str]] = field(default_factory=list)
    unread: list[dict[str, str]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    count: int = 10
    max_deliveries: int = 5
    want_exhausted: list[str] = field(default_factory=list)


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            Case(
                fresh=[entry(A)],
                want_claimed=[],
                want=state(ready=[entry(A)], pending=[(A, EXECUTOR, 1)], inflight=INFLIGHT_BEFORE),
            ),
            id="given_entry_idle_less_than_min_idle_when_claimed_then_untouched",
        ),
        pytest.param(
            Case(
                old=[entry(A)],
                unread=[entry(B), entry(C)],
                want_claimed=[(A, 1)],
                want=state(
                    ready=[entry(A), entry(B), entry(C)],
                    pending=[(A, TAKER, 2)],
                    inflight={**INFLIGHT_BEFORE, A: NOW_MS},
                ),
            ),
            id="given_idle_entry_and_a_backlog_when_claimed_then_taken_in_place_ahead_of_the_backlog",
        ),
        pytest.param(
            Case(
                old=[entry(A), entry(B)],
                fresh=[entry(C)],
                count=1,
                want_claimed=[(A, 1)],
                want=state(
                    ready=[entry(A), entry(B), entry(C)],
                    pending=[(A, TAKER, 2), (B, EXECUTOR, 1), (C, EXECUTOR, 1)],
                    inflight={**INFLIGHT_BEFORE, A: NOW_MS},
                ),
            ),
            id="given_more_idle_than_count_when_claimed_then_count_taken_oldest_first",
        ),
        pytest.param(
            Case(
                old=[entry(A, 1)],
                max_deliveries=3,
                want_claimed=[(A, 2)],
                want=state(
                    ready=[entry(A, 1)], pending=[(A, TAKER, 2)], inflight={**INFLIGHT_BEFORE, A: NOW_MS}
                ),
            ),
            id="given_entry_one_delivery_short_of_max_when_claimed_then_delivered_a_last_time",
        ),
        pytest.param(
            Case(
                old=[entry(A, 2), entry(B)],
                max_deliveries=3,
                want_claimed=[(B, 1)],
                want_exhausted=[A],
                want=state(
                    ready=[entry(A, 2), entry(B)],
                    pending=[(A, TAKER, 2), (B, TAKER, 2)],
                    inflight={**INFLIGHT_BEFORE, B: NOW_MS},
                ),
            ),
            id="given_exhausted_and_live_idle_entries_when_claimed_then_both_taken_one_exhausted",
        ),
        pytest.param(
            Case(
                old=[entry(A), entry(B)],
                deleted=[A],
                want_claimed=[(B, 1)],
                want=state(
                    ready=[entry(B)], pending=[(B, TAKER, 2)], inflight={**INFLIGHT_BEFORE, B: NOW_MS}
                ),
            ),
            id="given_pending_entry_deleted_from_stream_when_claimed_then_dropped_from_pending",
        ),
    ],
)
def test_claim_idle(redis_client: redis.Redis, redis_index: RedisIndex, case: Case) -> None:
    seed(redis_client, ready=case.old, inflight=INFLIGHT_BEFORE)
    old_ids = {e.member.encode(): e.entry_id for e in deliver(redis_index, len(case.old))}
    if case.old:
        time.sleep(IDLE_SLEEP_S)
    seed(redis_client, ready=case.fresh)
    deliver(redis_index, len(case.fresh))
    seed(redis_client, ready=case.unread)
    for member in case.deleted:
        redis_client.xdel(READY, old_ids[member])
    taker = RedisIndex(redis_client, consumer=TAKER)

    result = taker.claim_idle(
        SHARD, min_idle_ms=MIN_IDLE_MS, now_ms=NOW_MS, max_deliveries=case.max_deliveries, count=case.count
    )

    assert [(e.entry_id, e.member.encode(), e.deliveries) for e in result.claimed] == [
        (old_ids[member], member, deliveries) for member, deliveries in case.want_claimed
    ]
    assert [(e.entry_id, e.member.encode()) for e in result.exhausted] == [
        (old_ids[member], member) for member in case.want_exhausted
    ]
    assert shard_state(redis_client) == case.want


def test_given_a_backlog_when_an_idle_entry_is_claimed_then_the_next_read_gets_the_backlog_not_it(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    seed(redis_client, ready=[entry(A)], inflight=INFLIGHT_BEFORE)
    deliver(redis_index, 1)
    time.sleep(IDLE_SLEEP_S)
    seed(redis_client, ready=[entry(B)])
    taker = RedisIndex(redis_client, consumer=TAKER)

    claimed = taker.claim_idle(SHARD, min_idle_ms=MIN_IDLE_MS, now_ms=NOW_MS, max_deliveries=5, count=5)
    read = taker.read_ready([SHARD], count=5, block_ms=0)

    assert [e.member.encode() for e in claimed.claimed] == [A]
    assert [e.member.encode() for e in read] == [B]  # claimed in place: never delivered twice by a read
