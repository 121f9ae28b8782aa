"""cron_claim.lua: claims due schedules until a claim expiry, keeping the occurrence a claim is for."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest
import redis

from hookline.adapters.redis.index import RedisIndex
from hookline.domain.cron.schedule import ScheduleMember
from hookline.domain.delivery import CronClaim, CronClaimResult
from tests.integration.cron.keys import CRON, SHARD, cron_state, read_cron_state, seed_cron
from tests.support.redis_mode import connect, disconnect

pytestmark = pytest.mark.integration

A, B, C = "t/A/1", "t/B/1", "t/C/2"
NOW_MS = 100_000
UNTIL_MS = NOW_MS + 10_000


def claim(member: str, fire_ms: int) -> CronClaim:
    return CronClaim(ScheduleMember.decode(member), fire_ms, UNTIL_MS)


@pytest.mark.parametrize(
    ("given", "batch", "want_result", "want"),
    [
        pytest.param(
            cron_state(),
            10,
            CronClaimResult([], None),
            cron_state(),
            id="given_empty_cron_then_nothing_claimed_and_no_next",
        ),
        pytest.param(
            cron_state(cron={A: NOW_MS + 1}),
            10,
            CronClaimResult([], NOW_MS + 1),
            cron_state(cron={A: NOW_MS + 1}),
            id="given_schedule_due_one_ms_later_then_untouched_and_next",
        ),
        pytest.param(
            cron_state(cron={A: NOW_MS, B: NOW_MS - 5_000, C: NOW_MS + 60_000}),
            10,
            CronClaimResult([claim(B, NOW_MS - 5_000), claim(A, NOW_MS)], UNTIL_MS),
            cron_state(
                cron={A: UNTIL_MS, B: UNTIL_MS, C: NOW_MS + 60_000}, claims={A: NOW_MS, B: NOW_MS - 5_000}
            ),
            id="given_due_schedules_then_claimed_in_fire_order_scored_at_expiry_fire_time_kept",
        ),
        pytest.param(
            cron_state(cron={A: 1_000, B: 2_000, C: 3_000}),
            2,
            CronClaimResult([claim(A, 1_000), claim(B, 2_000)], 3_000),
            cron_state(cron={A: UNTIL_MS, B: UNTIL_MS, C: 3_000}, claims={A: 1_000, B: 2_000}),
            id="given_more_due_than_batch_then_batch_claimed_and_next_is_earliest_left",
        ),
        pytest.param(
            cron_state(cron={A: NOW_MS - 1}, claims={A: 60_000}),
            10,
            CronClaimResult([claim(A, 60_000)], UNTIL_MS),
            cron_state(cron={A: UNTIL_MS}, claims={A: 60_000}),
            id="given_expired_claim_then_reclaimed_for_the_same_occurrence_not_the_expiry",
        ),
        pytest.param(
            cron_state(cron={A: NOW_MS + 5_000}, claims={A: 90_000}),
            10,
            CronClaimResult([], NOW_MS + 5_000),
            cron_state(cron={A: NOW_MS + 5_000}, claims={A: 90_000}),
            id="given_claim_still_held_then_not_claimed_again",
        ),
    ],
)
def test_cron_claim(
    redis_client: redis.Redis,
    redis_index: RedisIndex,
    given: dict[str, Any],
    batch: int,
    want_result: CronClaimResult,
    want: dict[str, Any],
) -> None:
    seed_cron(redis_client, given)

    result = redis_index.claim_cron(SHARD, now_ms=NOW_MS, claim_until_ms=UNTIL_MS, batch=batch)

    assert result == want_result
    assert read_cron_state(redis_client) == want


def test_given_four_claimers_racing_on_500_due_schedules_then_each_claimed_exactly_once(
    redis_client: redis.Redis, redis_index: RedisIndex, redis_url: str
) -> None:
    members = [f"t/S{i:04d}/1" for i in range(500)]
    redis_client.zadd(CRON, {member: i % 37 for i, member in enumerate(members)})
    start = threading.Barrier(4)
    claimed: list[str] = []
    errors: list[BaseException] = []

    def claimer() -> None:
        client = connect(redis_url)
        try:
            index = RedisIndex(client)
            start.wait(timeout=5)
            while result := index.claim_cron(SHARD, NOW_MS, UNTIL_MS, 20).claims:
                claimed.extend(c.member.encode() for c in result)
        except BaseException as error:  # surfaced in the main thread below
            errors.append(error)
        finally:
            disconnect(client)

    threads = [threading.Thread(target=claimer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)

    assert errors == []
    assert Counter(claimed) == Counter(members)
