"""Per-tenant statistics in Redis: the writer the use cases call and the reader behind GET /v1/stats.

See hookline/stats.py for the structures and docs/operating.md ("Statistics") for what each number means.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import redis
from redis.exceptions import RedisClusterException

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.errors import translating
from hookline.domain import constants
from hookline.domain.stats import (
    BUCKET_MS,
    BUCKET_TTL_S,
    LAG_COUNT,
    LAG_SUM,
    WINDOW_MINUTES,
    MinuteStats,
    Outcome,
    Tally,
    TenantStats,
)

logger = logging.getLogger(__name__)


class RedisStats:
    """Records and reads per-tenant statistics in Redis."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client
        # tenant -> the minute whose bucket this writer has given its TTL (an EXPIRE per minute and tenant,
        # not per outcome: the submit path records one outcome per job). Bounded by the tenants writing.
        self._expiring: dict[str, int] = {}

    def record(
        self, tenant: str, outcome: Outcome, now_ms: int, job_id: str | None = None, lag_ms: int | None = None
    ) -> None:
        """Counts one outcome in the current minute; keeps the dead-letter set in step (one round trip).

        The bucket's TTL is set by this writer's first record of the minute, in one MULTI with the count, so
        no crash between the two can leave a bucket that never expires. Later records send the count alone,
        unless it shows the field new (a writer's first count of that outcome, or a bucket Redis lost and the
        count just re-created): an EXPIRE then follows in a second round trip. Should it fail, the count
        stays without a TTL only if Redis had lost the bucket, and the next writer's first record of the
        minute sets it.
        """
        minute = now_ms // BUCKET_MS
        key = redis_keys.stats_bucket_key(tenant, minute)
        first = self._expiring.get(tenant) != minute
        # Every key here carries the tenant's hash tag {hl:st:<tenant>}: one slot, so a cluster can MULTI.
        pipe = self._redis.pipeline(transaction=first)
        pipe.hincrby(key, outcome.value, 1)
        if lag_ms is not None:
            pipe.hincrby(key, LAG_SUM, max(lag_ms, 0))
            pipe.hincrby(key, LAG_COUNT, 1)
        if first:
            pipe.expire(key, BUCKET_TTL_S)
        dead_key = redis_keys.stats_dead_key(tenant)
        if job_id is not None and outcome is Outcome.DEAD:
            now_s = now_ms // 1000
            # Scored by when the table's TTL removes the record, so an expired dead job stops counting.
            pipe.zadd(dead_key, {job_id: now_s + constants.TERMINAL_JOB_RETENTION_S})
            pipe.zremrangebyscore(dead_key, "-inf", now_s)  # amortised clean-up of expired ones
        elif job_id is not None and outcome is Outcome.REPLAYED:
            pipe.zrem(dead_key, job_id)
        try:
            count = int(pipe.execute()[0])
            if first:
                self._expiring[tenant] = minute
            elif count == 1:
                self._redis.expire(key, BUCKET_TTL_S)
        except (redis.RedisError, RedisClusterException):
            # Statistics are a view, not the record: losing a count must not fail the work it counts.
            # (A cluster client raises RedisClusterException, outside RedisError, when it cannot reach
            # any node.) The bucket's TTL is sent again by the next record (`first` is still true).
            logger.warning("could not record statistics", extra={"tenant": tenant}, exc_info=True)

    def record_tallies(self, tallies: Sequence[Tally]) -> None:
        """Adds outcomes counted together: a HINCRBY per counter, an EXPIRE per minute, one round trip."""
        if not tallies:
            return
        pipe = self._redis.pipeline(transaction=False)
        keys: set[str] = set()
        for tally in tallies:
            key = redis_keys.stats_bucket_key(tally.tenant, tally.minute)
            keys.add(key)
            pipe.hincrby(key, tally.outcome.value, tally.count)
            if tally.lag_count:
                pipe.hincrby(key, LAG_SUM, tally.lag_ms_sum)
                pipe.hincrby(key, LAG_COUNT, tally.lag_count)
        for key in sorted(keys):
            pipe.expire(key, BUCKET_TTL_S)
        try:
            pipe.execute()
        except (redis.RedisError, RedisClusterException):
            # As in record(): a view, not the record; these counts are lost, the work they count is not.
            logger.warning("could not record statistics", extra={"tallies": len(tallies)}, exc_info=True)

    @translating
    def read(self, tenant: str, now_ms: int, shards: Sequence[int]) -> TenantStats:
        """Returns the last WINDOW_MINUTES minutes (oldest first, the current one last) and the counts.

        The backlog is read from the shards' live indexes, which every tenant shares: it is the
        deployment's, not the tenant's. Ready: due now and not yet acknowledged (waiting in the due ZSET
        for the promoter, or in the ready stream for an executor, or being delivered). Due: waiting for a
        later time (first run, retry or limiter delay).
        """
        current = now_ms // BUCKET_MS
        minutes = list(range(current - WINDOW_MINUTES + 1, current + 1))
        pipe = self._redis.pipeline(transaction=False)
        for minute in minutes:
            pipe.hgetall(redis_keys.stats_bucket_key(tenant, minute))
        pipe.zcount(redis_keys.stats_dead_key(tenant), now_ms // 1000, "+inf")
        for shard in shards:
            pipe.zcount(redis_keys.due_key(shard), "-inf", now_ms)
            pipe.zcount(redis_keys.due_key(shard), f"({now_ms}", "+inf")
            pipe.zcard(redis_keys.inflight_key(shard))
        replies = pipe.execute()
        buckets, dead, depths = replies[: len(minutes)], replies[len(minutes)], replies[len(minutes) + 1 :]
        window = [_minute(minute * BUCKET_MS, raw) for minute, raw in zip(minutes, buckets, strict=True)]
        totals = {outcome: sum(m.counts[outcome] for m in window) for outcome in Outcome}
        return TenantStats(
            minutes=window,
            dead_letters=int(dead),
            ready_backlog=sum(int(n) for i, n in enumerate(depths) if i % 3 != 1),
            due_backlog=sum(int(n) for i, n in enumerate(depths) if i % 3 == 1),
            totals=totals,
        )


def _minute(start_ms: int, raw: dict[bytes, bytes]) -> MinuteStats:
    values = {key.decode(): int(value) for key, value in raw.items()}
    return MinuteStats(
        start_ms=start_ms,
        counts={outcome: values.get(outcome.value, 0) for outcome in Outcome},
        lag_ms_sum=values.get(LAG_SUM, 0),
        lag_count=values.get(LAG_COUNT, 0),
    )
