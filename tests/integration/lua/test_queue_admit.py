"""queue_admit.lua: a named queue's live settings, pause, semaphore and rate window in one call; every key of
the queue's hash tag asserted."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.index import RedisIndex
from hookline.adapters.redis.queues import SETTINGS_TTL_MS, settings_keys
from hookline.domain.delivery import StreamEntry
from hookline.domain.models import FlowControl, Member
from hookline.domain.queues import Admission, Queue, QueueVerdict
from tests.integration.lua.conftest import zset

pytestmark = pytest.mark.integration

NOW_MS = 100_000
LEASE_MS = NOW_MS + 60_000
SETTINGS, HOLDERS, STARTED, CC_QUEUE, CC_TOLD, HOLD, LOG, RL_QUEUE, RL_TOLD = settings_keys("t", "mail")
WAITER = "a:1"


def _entry(job_id: str = "a", entry_id: str = "1-0") -> StreamEntry:
    return StreamEntry(0, entry_id, Member("t", job_id, 1, FlowControl(queue="mail")), 0)


def _queue(**settings: Any) -> Queue:
    return Queue(tenant="t", name="mail", **settings)


def _limiters(client: redis.Redis) -> dict[str, Any]:
    return {
        "holders": zset(client, HOLDERS),
        "started": zset(client, STARTED),
        "cc_queue": list(zset(client, CC_QUEUE)),
        "log": zset(client, LOG),
        "rl_queue": list(zset(client, RL_QUEUE)),
    }


def _want(**given: Any) -> dict[str, Any]:
    return {"holders": {}, "started": {}, "cc_queue": [], "log": {}, "rl_queue": [], **given}


@pytest.mark.parametrize(
    ("queue", "holders", "log", "want_verdict", "want_keys"),
    [
        pytest.param(
            None,
            {},
            {},
            QueueVerdict(Admission.UNKNOWN),
            _want(),
            id="given_no_settings_when_asked_then_unknown_and_nothing_taken",
        ),
        pytest.param(
            _queue(max_concurrency=1, rate_limit=1, rate_period_ms=1_000, paused_since_ms=90_000),
            {},
            {},
            QueueVerdict(Admission.PAUSED, 90_000),
            _want(),
            id="given_paused_queue_when_asked_then_paused_since_and_no_slot_or_admission_taken",
        ),
        pytest.param(
            _queue(),
            {},
            {},
            QueueVerdict(Admission.ADMITTED),
            _want(),
            id="given_running_queue_without_limits_when_asked_then_admitted_taking_nothing",
        ),
        pytest.param(
            _queue(max_concurrency=1, rate_limit=2, rate_period_ms=1_000),
            {},
            {},
            QueueVerdict(Admission.ADMITTED, took_slot=True),
            _want(holders={WAITER: LEASE_MS}, started={WAITER: NOW_MS}, log={"1-0": NOW_MS}),
            id="given_free_slot_and_rate_when_asked_then_admitted_with_slot_and_admission",
        ),
        pytest.param(
            _queue(max_concurrency=1),
            {"other:1": LEASE_MS},
            {},
            QueueVerdict(Admission.REFUSED, NOW_MS + 200),
            _want(holders={"other:1": LEASE_MS}, cc_queue=[WAITER]),
            id="given_slot_held_by_another_when_asked_then_refused_and_queued",
        ),
        pytest.param(
            _queue(max_concurrency=1),
            {WAITER: LEASE_MS - 1},
            {},
            QueueVerdict(Admission.ADMITTED),
            _want(holders={WAITER: LEASE_MS}),
            id="given_slot_held_by_same_waiter_when_asked_then_admitted_without_taking_a_slot",
        ),
        pytest.param(
            _queue(max_concurrency=2, rate_limit=1, rate_period_ms=1_000),
            {},
            {"0-1": NOW_MS - 400},
            QueueVerdict(Admission.REFUSED, NOW_MS + 600),
            _want(log={"0-1": NOW_MS - 400}, rl_queue=[WAITER]),
            id="given_rate_window_full_when_asked_then_refused_and_slot_given_back",
        ),
    ],
)
def test_queue_admit(
    redis_client: redis.Redis,
    redis_index: RedisIndex,
    queue: Queue | None,
    holders: dict[str, float],
    log: dict[str, float],
    want_verdict: QueueVerdict,
    want_keys: dict[str, Any],
) -> None:
    if queue is not None:
        redis_index.write_settings(queue)
    if holders:
        redis_client.zadd(HOLDERS, holders)
    if log:
        redis_client.zadd(LOG, log)

    verdict = redis_index.admit("t", "mail", _entry(), NOW_MS, LEASE_MS)

    assert verdict == want_verdict
    assert _limiters(redis_client) == want_keys


def test_given_settings_written_then_hash_holds_them_and_expires(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    redis_index.write_settings(
        _queue(rate_limit=5, rate_period_ms=2_000, max_concurrency=3, paused_since_ms=7)
    )

    assert redis_client.hgetall(SETTINGS) == {
        b"limit": b"5",
        b"period_ms": b"2000",
        b"max_concurrency": b"3",
        b"paused_since_ms": b"7",
    }
    assert 0 < redis_client.pttl(SETTINGS) <= SETTINGS_TTL_MS
    redis_index.forget_settings("t", "mail")
    assert redis_client.exists(SETTINGS) == 0


def test_given_waiter_refused_by_full_semaphore_when_limit_raised_live_then_admitted_on_its_return(
    redis_client: redis.Redis, redis_index: RedisIndex
) -> None:
    redis_index.write_settings(_queue(max_concurrency=1))
    redis_client.zadd(HOLDERS, {"other:1": LEASE_MS})
    assert redis_index.admit("t", "mail", _entry(), NOW_MS, LEASE_MS).admission is Admission.REFUSED

    redis_index.write_settings(_queue(max_concurrency=2))

    assert redis_index.admit("t", "mail", _entry(), NOW_MS + 1, LEASE_MS) == QueueVerdict(
        Admission.ADMITTED, took_slot=True
    )
    assert zset(redis_client, HOLDERS) == {"other:1": LEASE_MS, WAITER: LEASE_MS}
    assert zset(redis_client, CC_QUEUE) == {}


def test_given_queue_keys_then_all_share_one_hash_tag() -> None:
    tags = {key[: key.index("}") + 1] for key in settings_keys("t", "mail")}
    assert tags == {"{hl:cc:t:q/mail}"}
    assert redis_keys.concurrency_key("t", "q/mail") == HOLDERS
