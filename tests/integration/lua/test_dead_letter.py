"""dead_letter.lua: records the job on the dead stream and finishes its ready-stream entry."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from hookline.adapters.redis.index import RedisIndex
from tests.integration.lua.conftest import (
    DEAD,
    EXECUTOR,
    GROUP,
    READY,
    REAPER,
    deliver,
    entry,
    seed,
    shard_state,
    state,
    stream_entries,
)

pytestmark = pytest.mark.integration

A, B, Z = "t/a/1", "t/b/1", "t/z/1"
NOW_MS = 1_700_000_000_123


def dead(member: str, reason: str, at_ms: int) -> dict[str, str]:
    return {"m": member, "reason": reason, "at": str(at_ms)}


@pytest.mark.parametrize(
    ("earlier_dead", "claimed_by_reaper", "reason", "want"),
    [
        pytest.param(
            [],
            False,
            "status 500",
            state(
                ready=[entry(B)],
                pending=[(B, EXECUTOR, 1)],
                inflight={B: 2_000},
                dead=[dead(A, "status 500", NOW_MS)],
            ),
            id="given_pending_entry_when_dead_lettered_then_dead_entry_and_ready_entry_finished",
        ),
        pytest.param(
            [dead(Z, "ConnectError", 5)],
            False,
            "ReadTimeout",
            state(
                ready=[entry(B)],
                pending=[(B, EXECUTOR, 1)],
                inflight={B: 2_000},
                dead=[dead(Z, "ConnectError", 5), dead(A, "ReadTimeout", NOW_MS)],
            ),
            id="given_dead_stream_with_entries_when_dead_lettered_then_appended_last",
        ),
        pytest.param(
            [],
            True,
            "exhausted 5 deliveries",
            state(
                ready=[entry(B)],
                pending=[(B, EXECUTOR, 1)],
                inflight={B: 2_000},
                dead=[dead(A, "exhausted 5 deliveries", NOW_MS)],
            ),
            id="given_entry_pending_under_reaper_when_dead_lettered_then_acked_and_deleted",
        ),
    ],
)
def test_dead_letter(
    redis_client: redis.Redis,
    redis_index: RedisIndex,
    earlier_dead: list[dict[str, str]],
    claimed_by_reaper: bool,
    reason: str,
    want: dict[str, Any],
) -> None:
    seed(redis_client, ready=[entry(A), entry(B)], inflight={A: 1_000, B: 2_000})
    for fields in earlier_dead:
        redis_client.xadd(DEAD, fields)
    target = deliver(redis_index, 2)[0]
    if claimed_by_reaper:
        redis_client.xclaim(READY, GROUP, REAPER, min_idle_time=0, message_ids=[target.entry_id])

    dead_id = redis_index.dead_letter(target, reason=reason, now_ms=NOW_MS)

    assert shard_state(redis_client) == want
    assert stream_entries(redis_client, DEAD)[-1][0] == dead_id


def test_given_entry_already_dead_lettered_when_called_again_then_none_and_nothing_changes(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    seed(redis_client, ready=[entry(A), entry(B)], inflight={A: 1_000, B: 2_000})
    target = deliver(redis_index, 2)[0]
    assert redis_index.dead_letter(target, reason="status 500", now_ms=NOW_MS) is not None
    before = shard_state(redis_client)

    assert redis_index.dead_letter(target, reason="status 500", now_ms=NOW_MS + 1) is None

    assert shard_state(redis_client) == before
