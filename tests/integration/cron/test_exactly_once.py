"""Exactly once per occurrence with several leader-less promoters, on real Redis.

A simulated day of a per-second schedule is 86,400 occurrences; DynamoDB in moto writes a few hundred
items a second, so the day runs the data path that decides exactly-once (cron_claim.lua, cron_advance.lua,
derived instance ids) against real Redis and an in-memory store with the same conditional-create rule.
A shorter run on moto (test_promoters_on_moto.py) covers the real tables.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
import redis

from hookline.adapters.redis.index import RedisIndex
from hookline.domain.cron.schedule import CatchUp, Schedule
from hookline.domain.models import Job
from hookline.domain.stats import Outcome
from hookline.ports import NullMetrics
from hookline.usecases.cron import CronRunner, instance_id
from hookline.usecases.submit import JobSubmitter
from tests.fakes.clock import FrozenClock
from tests.fakes.stats import RecordingStats
from tests.integration.cron.fakes import MemoryScheduleStore, NullJobIndex
from tests.integration.cron.keys import CLAIMS, CRON

pytestmark = pytest.mark.integration

TENANT = "acme"
DAY_START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
DAY_MS = 86_400_000
# A 60 s clock step with room to spare: each step's 60 occurrences are all on time.
GRACE_MS = 120_000
STEP_MS = 60_000


def per_second_schedule() -> Schedule:
    return Schedule(
        tenant=TENANT,
        schedule_id="01KAAAAAAAAAAAAAAAAAAAAAAA",
        expression="* * * * * *",
        timezone="UTC",
        job={"url": "https://receiver.example/tick"},
        catch_up=CatchUp.SKIP,
        paused=False,
        version=1,
        shard=0,
        created_ms=DAY_START_MS - 1_000,
        updated_ms=DAY_START_MS - 1_000,
    )


def runner(
    store: MemoryScheduleStore,
    client: redis.Redis,
    clock: FrozenClock,
    stats: RecordingStats | None = None,
    **kwargs: int,
) -> CronRunner:
    submitter = JobSubmitter(store, NullJobIndex(), clock, lambda url: None, 1, NullMetrics(), stats=stats)  # type: ignore[arg-type]
    return CronRunner(
        store, RedisIndex(client), submitter, clock, [0], NullMetrics(), GRACE_MS, job_shards=1, **kwargs
    )


def all_handled(client: redis.Redis, clock: FrozenClock) -> bool:
    """Tells whether no claim is held and nothing is due; one transaction, so no claim slips between."""
    pipe = client.pipeline(transaction=True)
    pipe.zrange(CRON, 0, 0, withscores=True)
    pipe.hlen(CLAIMS)
    (lowest,), claims = pipe.execute()
    return bool(claims == 0 and lowest[1] > clock.now_ms())


def run_promoters(
    store: MemoryScheduleStore, redis_url: str, clock: FrozenClock, count: int, stop: threading.Event
) -> tuple[list[threading.Thread], list[BaseException], Counter[int]]:
    """Starts `count` promoter threads, each with its own Redis client, ticking until stop is set."""
    errors: list[BaseException] = []
    ticks: Counter[int] = Counter()

    def promoter(number: int) -> None:
        client = redis.Redis.from_url(redis_url)
        try:
            cron = runner(store, client, clock, fires_per_claim=60)
            while not stop.is_set():
                result = cron.tick(clock.now_ms())
                ticks[number] += 1
                if not result.more_due:
                    time.sleep(0.002)  # a real promoter sleeps until the next due time
        except BaseException as error:  # surfaced in the main thread
            errors.append(error)
        finally:
            client.close()

    threads = [threading.Thread(target=promoter, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    return threads, errors, ticks


# 86,400 occurrences take 15-30 s here (about 100 us of fire-time and id work each, plus Redis round trips):
# more than the suite's per-test default on a loaded machine.
@pytest.mark.timeout(180)
def test_given_three_promoters_when_a_day_of_a_per_second_schedule_passes_then_each_occurrence_once(
    redis_client: redis.Redis, redis_url: str
) -> None:
    store = MemoryScheduleStore()
    schedule = per_second_schedule()
    store.put(schedule)
    clock = FrozenClock(DAY_START_MS - 1)
    end_ms = DAY_START_MS + DAY_MS - 1
    redis_client.zadd(CRON, {schedule.member().encode(): DAY_START_MS})
    stop = threading.Event()
    started = time.monotonic()
    threads, errors, ticks = run_promoters(store, redis_url, clock, 3, stop)
    # Time moves a minute at a time, once every due occurrence was handled: within each step the
    # promoters race for the schedule claim after claim (up to 60 occurrences per claim).
    while clock.now_ms() < end_ms and not errors:
        if all_handled(redis_client, clock):
            clock.advance(min(STEP_MS, end_ms - clock.now_ms()))
        else:
            time.sleep(0.0005)
    while not all_handled(redis_client, clock) and not errors:
        time.sleep(0.001)
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    elapsed_s = time.monotonic() - started

    assert errors == []
    fire_times = [DAY_START_MS + s * 1000 for s in range(86_400)]
    assert set(store.instances) == {instance_id(schedule.schedule_id, t) for t in fire_times}
    assert sorted(job.fire_time_ms or 0 for job in store.instances.values()) == fire_times
    assert all(job.due_ms == job.fire_time_ms for job in store.instances.values())
    # Instance ids sort like their fire times.
    assert sorted(store.instances) == [instance_id(schedule.schedule_id, t) for t in fire_times]
    assert min(ticks.values()) > 0, "every promoter took part"
    assert redis_client.zscore(CRON, schedule.member().encode()) == DAY_START_MS + DAY_MS
    print(
        f"simulated day: {len(store.instances)} instances, {store.create_attempts} creates, "
        f"ticks per promoter {dict(ticks)}, {elapsed_s:.1f} s"
    )


def test_given_promoter_stalls_past_its_claim_when_another_takes_over_then_occurrence_created_once(
    redis_client: redis.Redis,
) -> None:
    store = MemoryScheduleStore()
    schedule = per_second_schedule()
    store.put(schedule)
    clock = FrozenClock(DAY_START_MS)
    redis_client.zadd(CRON, {schedule.member().encode(): DAY_START_MS})
    slow, fast = runner(store, redis_client, clock, claim_ttl_ms=5_000), runner(store, redis_client, clock)
    taken_over: list[int] = []

    def stall_then_let_another_promoter_run(job: object) -> None:
        # The slow promoter holds the claim for DAY_START_MS but stalls before its create; its claim
        # expires and the fast one re-claims the same occurrence (not the expiry time) and creates it.
        clock.advance(5_001)
        taken_over.append(fast.tick(clock.now_ms()).moved)

    store.before_create = stall_then_let_another_promoter_run
    slow_result = slow.tick(clock.now_ms())

    # The fast promoter re-claimed DAY_START_MS (not the claim expiry) and created it and the five
    # occurrences that fell due while the slow one stalled.
    assert taken_over == [6]
    assert slow_result.moved == 0  # the slow one's create found DAY_START_MS: no duplicate
    assert store.create_attempts == 7
    assert sorted(job.fire_time_ms for job in store.instances.values()) == [
        DAY_START_MS + s * 1000 for s in range(6)
    ]
    # The fast promoter advanced the schedule; the slow one's stale claim could not move it back.
    assert redis_client.zscore(CRON, schedule.member().encode()) == DAY_START_MS + 6_000
    assert redis_client.hlen(CLAIMS) == 0


def test_given_occurrences_created_when_a_taken_over_one_is_found_then_each_counted_submitted_once(
    redis_client: redis.Redis,
) -> None:
    store = MemoryScheduleStore()
    schedule = per_second_schedule()
    store.put(schedule)
    clock = FrozenClock(DAY_START_MS + 2_000)
    redis_client.zadd(CRON, {schedule.member().encode(): DAY_START_MS})
    stats = RecordingStats()
    store.create_instance(per_second_schedule_instance(schedule, DAY_START_MS + 1_000))

    runner(store, redis_client, clock, stats).tick(clock.now_ms())

    # Three occurrences were due; one already existed (another promoter's): two new, two submitted.
    assert len(store.instances) == 3
    assert [(tenant, outcome) for tenant, outcome, *_ in stats.records] == [(TENANT, Outcome.SUBMITTED)] * 2


def per_second_schedule_instance(schedule: Schedule, fire_ms: int) -> Job:
    """Returns the job a promoter creates for the schedule's occurrence at fire_ms."""
    submitter = JobSubmitter(
        MemoryScheduleStore(), NullJobIndex(), FrozenClock(fire_ms), lambda url: None, 1, NullMetrics()
    )  # type: ignore[arg-type]
    job_id = instance_id(schedule.schedule_id, fire_ms)
    template = submitter.build(TENANT, schedule.template(), fire_ms)
    return template.with_changes(
        job_id=job_id, shard=0, due_ms=fire_ms, schedule_id=schedule.schedule_id, fire_time_ms=fire_ms
    )


def test_given_one_schedule_fails_when_ticking_then_others_still_fire_and_its_claim_is_retried_later(
    redis_client: redis.Redis,
) -> None:
    store = MemoryScheduleStore()
    good, bad = (
        per_second_schedule(),
        per_second_schedule().with_changes(schedule_id="01KBBBBBBBBBBBBBBBBBBBBBBB"),
    )
    store.put(good)
    store.put(bad.with_changes(job={"url": "not a url"}))  # its template no longer validates
    clock = FrozenClock(DAY_START_MS)
    redis_client.zadd(CRON, {good.member().encode(): DAY_START_MS, bad.member().encode(): DAY_START_MS})

    result = runner(store, redis_client, clock).tick(clock.now_ms())

    assert result.moved == 1
    assert [job.schedule_id for job in store.instances.values()] == [good.schedule_id]
    assert redis_client.hget(CLAIMS, bad.member().encode()) == str(DAY_START_MS).encode()  # left to expire
