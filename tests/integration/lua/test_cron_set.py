"""cron_set.lua: replaces a schedule version in the cron ZSET; wakes the promoter when it became earliest."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from hookline.adapters.redis.index import RedisIndex
from hookline.domain.cron.schedule import ScheduleMember
from tests.integration.cron.keys import SHARD, cron_state, read_cron_state, seed_cron

pytestmark = pytest.mark.integration

V1, V2, OTHER = "t/A/1", "t/A/2", "t/B/1"


def member(text: str | None) -> ScheduleMember | None:
    return None if text is None else ScheduleMember.decode(text)


@pytest.mark.parametrize(
    ("given", "old", "new", "next_fire_ms", "only_if_absent", "want_result", "want"),
    [
        pytest.param(
            cron_state(),
            None,
            V1,
            5_000,
            False,
            True,
            cron_state(cron={V1: 5_000}, wake=1),
            id="given_empty_cron_when_created_then_added_and_promoter_woken",
        ),
        pytest.param(
            cron_state(cron={OTHER: 1_000}),
            None,
            V1,
            5_000,
            False,
            True,
            cron_state(cron={OTHER: 1_000, V1: 5_000}),
            id="given_earlier_schedule_when_created_later_then_added_without_wake",
        ),
        pytest.param(
            cron_state(cron={V1: 99_000, OTHER: 50_000}, claims={V1: 40_000}, wake=1),
            V1,
            V2,
            45_000,
            False,
            True,
            cron_state(cron={V2: 45_000, OTHER: 50_000}, wake=1),
            id="given_claimed_old_version_when_changed_then_replaced_claim_dropped_one_wake_token",
        ),
        pytest.param(
            cron_state(cron={V1: 9_000, OTHER: 1}),
            V1,
            None,
            None,
            False,
            False,
            cron_state(cron={OTHER: 1}),
            id="given_schedule_when_paused_or_deleted_then_removed",
        ),
        pytest.param(
            cron_state(cron={V1: 120_000}, claims={V1: 60_000}),
            None,
            V1,
            61_000,
            True,
            False,
            cron_state(cron={V1: 120_000}, claims={V1: 60_000}),
            id="given_claimed_member_when_reconciled_then_left_alone",
        ),
        pytest.param(
            cron_state(cron={OTHER: 90_000}),
            None,
            V1,
            61_000,
            True,
            True,
            cron_state(cron={OTHER: 90_000, V1: 61_000}, wake=1),
            id="given_lost_member_when_reconciled_then_restored_and_promoter_woken",
        ),
    ],
)
def test_cron_set(
    redis_client: redis.Redis,
    redis_index: RedisIndex,
    given: dict[str, Any],
    old: str | None,
    new: str | None,
    next_fire_ms: int | None,
    only_if_absent: bool,
    want_result: bool,
    want: dict[str, Any],
) -> None:
    seed_cron(redis_client, given)

    result = redis_index.set_cron(SHARD, member(old), member(new), next_fire_ms, only_if_absent)

    assert result is want_result
    assert read_cron_state(redis_client) == want
