"""cron_advance.lua: ends a claim (next fire time or removal) only while the caller's claim still holds."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from hookline.adapters.redis.index import RedisIndex
from hookline.domain.cron.schedule import ScheduleMember
from hookline.domain.delivery import CronClaim
from tests.integration.cron.keys import SHARD, cron_state, read_cron_state, seed_cron

pytestmark = pytest.mark.integration

A, B = "t/A/1", "t/B/1"
FIRE_MS = 100_000
UNTIL_MS = 110_000
NEXT_MS = 160_000


@pytest.mark.parametrize(
    ("given", "next_fire_ms", "want_result", "want"),
    [
        pytest.param(
            cron_state(cron={A: UNTIL_MS, B: 5}, claims={A: FIRE_MS, B: 1}),
            NEXT_MS,
            True,
            cron_state(cron={A: NEXT_MS, B: 5}, claims={B: 1}),
            id="given_claim_held_then_moved_to_next_fire_and_claim_cleared",
        ),
        pytest.param(
            cron_state(cron={A: UNTIL_MS}, claims={A: FIRE_MS}),
            None,
            True,
            cron_state(),
            id="given_claim_held_and_no_next_fire_then_schedule_removed",
        ),
        pytest.param(
            cron_state(cron={A: UNTIL_MS + 7_000}, claims={A: FIRE_MS}),
            NEXT_MS,
            False,
            cron_state(cron={A: UNTIL_MS + 7_000}, claims={A: FIRE_MS}),
            id="given_claim_expired_and_taken_over_then_left_to_the_new_holder",
        ),
        pytest.param(
            cron_state(cron={"t/A/2": 150_000}),
            NEXT_MS,
            False,
            cron_state(cron={"t/A/2": 150_000}),
            id="given_schedule_changed_meanwhile_then_old_version_not_resurrected",
        ),
    ],
)
def test_cron_advance(
    redis_client: redis.Redis,
    redis_index: RedisIndex,
    given: dict[str, Any],
    next_fire_ms: int | None,
    want_result: bool,
    want: dict[str, Any],
) -> None:
    seed_cron(redis_client, given)
    claim = CronClaim(ScheduleMember.decode(A), FIRE_MS, UNTIL_MS)

    result = redis_index.advance_cron(SHARD, claim, next_fire_ms)

    assert result is want_result
    assert read_cron_state(redis_client) == want
