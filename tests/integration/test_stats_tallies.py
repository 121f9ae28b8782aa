"""RedisStats.record_tallies writes what the same outcomes recorded one by one would have written."""

from __future__ import annotations

import redis

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.stats import RedisStats
from hookline.domain.stats import BUCKET_MS, BUCKET_TTL_S, Outcome, Tally


def test_given_tallies_when_recorded_then_the_buckets_equal_one_by_one_records(
    redis_client: redis.Redis,
) -> None:
    stats = RedisStats(redis_client)
    minute = 29_000_123
    at = minute * BUCKET_MS
    for lag in (10, 20):
        stats.record("one-by-one", Outcome.SUCCEEDED, at, lag_ms=lag)
    stats.record("one-by-one", Outcome.RETRIED, at, lag_ms=5)
    stats.record("one-by-one", Outcome.SUBMITTED, at)

    stats.record_tallies(
        [
            Tally("tallied", minute, Outcome.SUCCEEDED, 2, 30, 2),
            Tally("tallied", minute, Outcome.RETRIED, 1, 5, 1),
            Tally("tallied", minute, Outcome.SUBMITTED, 1),
        ]
    )

    one_by_one = redis_client.hgetall(redis_keys.stats_bucket_key("one-by-one", minute))
    tallied_key = redis_keys.stats_bucket_key("tallied", minute)
    assert redis_client.hgetall(tallied_key) == one_by_one
    assert 0 < redis_client.ttl(tallied_key) <= BUCKET_TTL_S
