"""redeliver.lua: re-adds deliveries idle past the lease with d+1; exhausted ones stay pending for the reaper.

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
    stream_entries,
)

pytestmark = pytest.mark.integration

A, B, C = "t/a/1", "t/b/1", "t/c/1"
INFLIGHT_BEFORE = {A: 1_000, B: 2_000, C: 3_000}
NOW_MS = 9_000
MIN_IDLE_MS = 50
IDLE_SLEEP_S = 0.1


@dataclass(frozen=True)
class Case:
    """Given entries read long ago (`old`) and just now (`fresh`), some deleted; when reaped; then..."""

    want_redelivered: int
    want: dict[str, Any]
    old: list[dict[str, str]] = field(default_factory=list)
    fresh: list[dict[str, str]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    min_idle_ms: int = MIN_IDLE_MS
    batch: int = 10
    max_deliveries: int = 5
    want_exhausted: list[str] = field(default_factory=list)


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            Case(
                fresh=[entry(A), entry(B, 1)],
                want_redelivered=0,
                want=state(
                    ready=[entry(A), entry(B, 1)],
                    pending=[(A, EXECUTOR, 1), (B, EXECUTOR, 1)],
                    inflight=INFLIGHT_BEFORE,
                ),
            ),
            id="given_entries_idle_less_than_min_idle_when_reaped_then_untouched",
        ),
        pytest.param(
            Case(
                old=[entry(A)],
                min_idle_ms=60_000,
                want_redelivered=0,
                want=state(ready=[entry(A)], pending=[(A, EXECUTOR, 1)], inflight=INFLIGHT_BEFORE),
            ),
            id="given_entry_idle_below_a_long_lease_when_reaped_then_untouched",
        ),
        pytest.param(
            Case(
                old=[entry(A)],
                want_redelivered=1,
                want=state(ready=[entry(A, 1)], inflight={**INFLIGHT_BEFORE, A: NOW_MS}),
            ),
            id="given_idle_entry_when_reaped_then_readded_as_new_entry_with_d_plus_one_and_inflight_now",
        ),
        pytest.param(
            Case(
                old=[entry(A)],
                fresh=[entry(B)],
                want_redelivered=1,
                want=state(
                    ready=[entry(B), entry(A, 1)],
                    pending=[(B, EXECUTOR, 1)],
                    inflight={**INFLIGHT_BEFORE, A: NOW_MS},
                ),
            ),
            id="given_idle_and_fresh_entries_when_reaped_then_only_idle_one_redelivered",
        ),
        pytest.param(
            Case(
                old=[entry(A, 1)],
                max_deliveries=3,
                want_redelivered=1,
                want=state(ready=[entry(A, 2)], inflight={**INFLIGHT_BEFORE, A: NOW_MS}),
            ),
            id="given_entry_one_delivery_short_of_max_when_reaped_then_redelivered_a_last_time",
        ),
        pytest.param(
            Case(
                old=[entry(A, 2)],
                max_deliveries=3,
                want_redelivered=0,
                want_exhausted=[A],
                want=state(ready=[entry(A, 2)], pending=[(A, REAPER, 2)], inflight=INFLIGHT_BEFORE),
            ),
            id="given_entry_reaching_max_deliveries_when_reaped_then_exhausted_and_pending_under_reaper",
        ),
        pytest.param(
            Case(
                old=[entry(A, 2), entry(B)],
                max_deliveries=3,
                want_redelivered=1,
                want_exhausted=[A],
                want=state(
                    ready=[entry(A, 2), entry(B, 1)],
                    pending=[(A, REAPER, 2)],
                    inflight={**INFLIGHT_BEFORE, B: NOW_MS},
                ),
            ),
            id="given_exhausted_and_live_idle_entries_when_reaped_then_one_exhausted_one_redelivered",
        ),
        pytest.param(
            Case(
                old=[entry(A), entry(B), entry(C)],
                batch=2,
                want_redelivered=2,
                want=state(
                    ready=[entry(C), entry(A, 1), entry(B, 1)],
                    pending=[(C, EXECUTOR, 1)],
                    inflight={**INFLIGHT_BEFORE, A: NOW_MS, B: NOW_MS},
                ),
            ),
            id="given_more_idle_entries_than_batch_when_reaped_then_batch_taken_oldest_first",
        ),
        pytest.param(
            Case(
                old=[entry(A), entry(B)],
                deleted=[A],
                want_redelivered=1,
                want=state(ready=[entry(B, 1)], inflight={**INFLIGHT_BEFORE, B: NOW_MS}),
            ),
            id="given_pending_entry_deleted_from_stream_when_reaped_then_dropped_from_pending",
        ),
    ],
)
def test_redeliver(redis_client: redis.Redis, redis_index: RedisIndex, case: Case) -> None:
    seed(redis_client, ready=case.old, inflight=INFLIGHT_BEFORE)
    old_ids = {e.member.encode(): e.entry_id for e in deliver(redis_index, len(case.old))}
    if case.old:
        time.sleep(IDLE_SLEEP_S)
    seed(redis_client, ready=case.fresh)
    deliver(redis_index, len(case.fresh))
    for member in case.deleted:
        redis_client.xdel(READY, old_ids[member])
    reaper = RedisIndex(redis_client, consumer=REAPER)

    result = reaper.redeliver(
        SHARD,
        min_idle_ms=case.min_idle_ms,
        now_ms=NOW_MS,
        max_deliveries=case.max_deliveries,
        batch=case.batch,
    )

    assert result.redelivered == case.want_redelivered
    assert [(e.shard, e.entry_id, e.member.encode(), e.deliveries) for e in result.exhausted] == [
        (SHARD, old_ids[member], member, case.max_deliveries) for member in case.want_exhausted
    ]
    assert shard_state(redis_client) == case.want
    ids_now = {entry_id for entry_id, _ in stream_entries(redis_client, READY)}
    redelivered = {m for m, score in case.want["inflight"].items() if score == NOW_MS}
    assert {old_ids[m] for m in redelivered}.isdisjoint(ids_now), "a re-added entry must get a new id"


def test_given_deleted_pending_entries_fill_a_batch_when_scanning_then_cursor_leads_to_the_live_one(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    seed(redis_client, ready=[entry(A), entry(B), entry(C)], inflight=INFLIGHT_BEFORE)
    delivered = deliver(redis_index, 3)
    time.sleep(IDLE_SLEEP_S)
    for gone in delivered[:2]:
        redis_client.xdel(READY, gone.entry_id)  # pending, but deleted: XAUTOCLAIM still counts them
    reaper = RedisIndex(redis_client, consumer=REAPER)

    first = reaper.redeliver(SHARD, min_idle_ms=MIN_IDLE_MS, now_ms=NOW_MS, max_deliveries=5, batch=2)
    second = reaper.redeliver(
        SHARD, min_idle_ms=MIN_IDLE_MS, now_ms=NOW_MS, max_deliveries=5, cursor=first.next_cursor, batch=2
    )

    assert (first.redelivered, first.scan_finished) == (0, False)
    assert (second.redelivered, second.scan_finished) == (1, True)
    assert [fields["m"] for _, fields in stream_entries(redis_client, READY)] == [C]


def test_given_malformed_pending_entries_when_reaped_then_dead_lettered_and_the_good_one_re_added(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    seed(redis_client, ready=[{"x": "no member"}, {"m": B, "d": "many"}, entry(A)], inflight=INFLIGHT_BEFORE)
    redis_client.xreadgroup(GROUP, EXECUTOR, {READY: ">"})  # read raw: read_ready would drop the poison
    time.sleep(IDLE_SLEEP_S)
    reaper = RedisIndex(redis_client, consumer=REAPER)

    result = reaper.redeliver(SHARD, min_idle_ms=MIN_IDLE_MS, now_ms=NOW_MS, max_deliveries=5)

    assert (result.redelivered, result.exhausted, result.malformed) == (1, [], 2)
    final = shard_state(redis_client)
    assert [{k: v for k, v in d.items() if k != "at"} for d in final.pop("dead")] == [
        {"m": "", "reason": "malformed_entry"},
        {"m": B, "reason": "malformed_entry"},
    ]
    expected = state(ready=[entry(A, 1)], inflight={A: NOW_MS, C: INFLIGHT_BEFORE[C]})
    expected.pop("dead")
    assert final == expected  # B's inflight member goes with its dead entry; A's is re-added
