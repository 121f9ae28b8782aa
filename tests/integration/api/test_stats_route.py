"""GET /v1/stats: per-tenant counters per minute, the dead-letter count and the backlog, from Redis only."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.api import context
from hookline.domain.stats import BUCKET_MS, BUCKET_TTL_S, WINDOW_MINUTES
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from tests.integration.api.conftest import Api, make_key
from tests.support.apigw import ApiClient
from tests.support.receiver import Receiver, Reply
from tests.support.redis_server import free_port

pytestmark = pytest.mark.integration


def test_given_outcomes_when_reading_stats_then_each_is_counted_for_its_tenant_only(
    api: Api, receiver: Receiver
) -> None:
    receiver.script("/ok", [Reply(200)])
    ok = api.acme.post("/v1/jobs", {"url": receiver.url("/ok")}).json()
    later = api.acme.post("/v1/jobs", {"url": receiver.url("/later"), "delay_s": 600}).json()
    api.deliver_ready()
    dead = [api.dead_job(receiver), api.dead_job(receiver)]
    cancelled = api.acme.delete(f"/v1/jobs/{later['id']}")
    replayed = api.acme.post(f"/v1/jobs/{dead[0].job_id}/replay")

    mine = api.acme.get("/v1/stats")
    theirs = api.globex.get("/v1/stats")

    assert (cancelled.status, replayed.status, mine.status) == (200, 200, 200)
    stats = mine.json()
    assert stats["last_hour"] == {
        "submitted": 4,  # two through the API, two dead_job setups through the use case
        "succeeded": 1,
        "retried": 0,
        "dead": 2,
        "cancelled": 1,
        "replayed": 1,
    }
    assert stats["dead_letters"] == 1  # two dead, one replayed
    assert stats["success_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert stats["fire_lag_ms_avg"] is not None and stats["fire_lag_ms_avg"] >= 0
    assert stats["backlog"] == {"ready": 1, "due": 0}  # the replayed job, due now, not yet delivered
    assert len(stats["minutes"]) == stats["window_minutes"] == WINDOW_MINUTES
    assert stats["minutes"][-1]["counts"]["succeeded"] == 1
    assert ok["id"] and theirs.json()["last_hour"] == dict.fromkeys(stats["last_hour"], 0)
    assert theirs.json()["dead_letters"] == 0


def test_given_counters_when_recorded_then_buckets_are_per_minute_and_expire(api: Api) -> None:
    api.acme.post("/v1/jobs", {"url": "http://127.0.0.1:9/x", "delay_s": 60})

    minute = api.container.clock.now_ms() // BUCKET_MS
    key = redis_keys.stats_bucket_key("acme", minute)
    ttl = api.container.redis.ttl(key)

    assert api.container.redis.hget(key, "submitted") == b"1"
    assert 0 < ttl <= BUCKET_TTL_S
    assert api.acme.get("/v1/stats").json()["backlog"] == {"ready": 0, "due": 1}


def test_given_a_retry_when_reading_stats_then_the_minute_has_a_success_rate_below_one(
    api: Api, receiver: Receiver
) -> None:
    receiver.script("/flaky", [Reply(503), Reply(200)])
    api.acme.post("/v1/jobs", {"url": receiver.url("/flaky"), "min_backoff_s": 60, "max_backoff_s": 60})
    api.deliver_ready()

    stats = api.acme.get("/v1/stats").json()

    assert (stats["last_hour"]["retried"], stats["last_hour"]["succeeded"]) == (1, 0)
    assert stats["minutes"][-1]["success_rate"] == 0.0
    assert stats["backlog"] == {"ready": 0, "due": 1}  # the retry, indexed for a minute from now


def test_given_redis_down_when_reading_stats_then_503_and_writes_still_succeed(settings: Settings) -> None:
    down = Container(replace(settings, redis_url=f"redis://127.0.0.1:{free_port()}/0"))
    context.use(down)
    try:
        client = ApiClient(make_key(down))
        submitted = client.post("/v1/jobs", {"url": "http://127.0.0.1:9/x"})  # its counter is lost, not it
        response = client.get("/v1/stats")
    finally:
        down.close()

    assert submitted.status == 201
    assert (response.status, response.error_code) == (503, "dependency_unavailable")


def test_given_a_batch_when_submitted_then_its_created_jobs_are_counted_in_one_write(api: Api) -> None:
    items = [{"url": "http://127.0.0.1:9/x", "delay_s": 60}] * 3 + [{"url": "ftp://127.0.0.1/x"}]
    api.container.redis.config_resetstat()

    response = api.acme.post("/v1/jobs/batch", {"jobs": items})

    minute = api.container.clock.now_ms() // BUCKET_MS
    key = redis_keys.stats_bucket_key("acme", minute)
    assert [r["status"] for r in response.json()["results"]] == [201, 201, 201, 422]
    assert api.container.redis.hget(key, "submitted") == b"3"
    assert 0 < api.container.redis.ttl(key) <= BUCKET_TTL_S
    # The three counts went out as one HINCRBY of 3, not one per job.
    assert api.container.redis.info("commandstats")["cmdstat_hincrby"]["calls"] == 1
