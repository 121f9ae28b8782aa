"""What one job costs Redis on the hot path, counted by `INFO commandstats` on a real redis-server.

The commands per job are budgeted end to end (commands run inside scripts count, beside the EVALSHA);
each test here pins one saving, and that the saving kept what the commands it dropped were for.
"""

from __future__ import annotations

from collections import Counter

import redis

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.cluster import is_cluster
from hookline.adapters.redis.index import RedisIndex
from hookline.adapters.redis.stats import RedisStats
from hookline.domain.models import JobRequest
from hookline.domain.stats import BUCKET_MS, BUCKET_TTL_S, Outcome
from hookline.ports import NullMetrics
from hookline.usecases.submit import JobSubmitter
from tests.fakes.clock import FrozenClock
from tests.fakes.jobs import FakeJobStore


def calls(client: redis.Redis) -> Counter[str]:
    """Returns the commands Redis (every primary of a cluster) ran since the last reset, by name (this
    call's INFO is counted after it replies, so not in what it returns)."""
    if is_cluster(client):
        nodes = client.get_primaries()  # type: ignore[attr-defined]
        infos = [client.info("commandstats", target_nodes=node) for node in nodes]  # type: ignore[call-arg]
    else:
        infos = [client.info("commandstats")]
    counted: Counter[str] = Counter()
    for info in infos:
        for name, value in info.items():
            counted[name.removeprefix("cmdstat_")] += int(value["calls"])
    counted.pop("config|resetstat", None)  # the reset itself
    return counted


def reset(client: redis.Redis) -> None:
    """Zeroes the command counters (every primary of a cluster)."""
    if is_cluster(client):
        client.config_resetstat(target_nodes="primaries")  # type: ignore[call-arg]
    else:
        client.config_resetstat()


def test_given_submits_in_one_minute_when_counted_then_one_expire_gives_the_bucket_its_ttl(
    redis_client: redis.Redis,
) -> None:
    stats = RedisStats(redis_client)
    minute = 29_000_200
    reset(redis_client)

    for n in range(10):
        stats.record("acme", Outcome.SUBMITTED, minute * BUCKET_MS + n)

    counted = calls(redis_client)
    key = redis_keys.stats_bucket_key("acme", minute)
    assert redis_client.hget(key, Outcome.SUBMITTED.value) == b"10"
    assert 0 < redis_client.ttl(key) <= BUCKET_TTL_S
    assert (counted["hincrby"], counted["expire"]) == (10, 1)  # was (10, 10): an EXPIRE per job


def test_given_a_bucket_redis_lost_when_the_next_count_recreates_it_then_it_gets_its_ttl_again(
    redis_client: redis.Redis,
) -> None:
    stats = RedisStats(redis_client)
    minute = 29_000_201
    key = redis_keys.stats_bucket_key("acme", minute)
    stats.record("acme", Outcome.SUBMITTED, minute * BUCKET_MS)
    redis_client.delete(key)  # a flush or a fail-over to an empty replica: this writer set the TTL before

    stats.record("acme", Outcome.SUBMITTED, minute * BUCKET_MS + 1)
    stats.record("acme", Outcome.SUBMITTED, minute * BUCKET_MS + 2)

    assert redis_client.hget(key, Outcome.SUBMITTED.value) == b"2"
    assert 0 < redis_client.ttl(key) <= BUCKET_TTL_S


def test_given_a_new_minute_when_counted_then_its_bucket_gets_a_ttl_of_its_own(
    redis_client: redis.Redis,
) -> None:
    stats = RedisStats(redis_client)
    minute = 29_000_202
    stats.record("acme", Outcome.SUBMITTED, minute * BUCKET_MS)
    stats.record("acme", Outcome.SUBMITTED, (minute + 1) * BUCKET_MS)

    for bucket in (minute, minute + 1):
        assert 0 < redis_client.ttl(redis_keys.stats_bucket_key("acme", bucket)) <= BUCKET_TTL_S


def test_given_a_job_due_now_when_submitted_then_redis_runs_four_commands(redis_client: redis.Redis) -> None:
    clock = FrozenClock(1_700_000_000_000)
    index = RedisIndex(redis_client)
    submitter = JobSubmitter(
        FakeJobStore(), index, clock, lambda url: None, 1, NullMetrics(), stats=RedisStats(redis_client)
    )
    request = JobRequest.model_validate({"url": "http://127.0.0.1:9/hook", "body": {"n": 1}})
    submitter.submit("acme", request)  # the minute's first count also gives the bucket its TTL
    reset(redis_client)

    job = submitter.submit("acme", request).job

    # index.lua (EVALSHA: XADD onto the ready stream, ZADD in flight; no ZREM, the member is new) and the
    # submitted count (HINCRBY). Was 6: a ZREM from the due ZSET and the bucket's EXPIRE with every job.
    counted = calls(redis_client)
    assert +counted == Counter({"evalsha": 1, "xadd": 1, "zadd": 1, "hincrby": 1})
    assert index.indexed_members(job.shard, [job.member()]) == [True]
