"""Promoter on fakes: due jobs onto the ready stream on time, woken by earlier submits, with its cron pass,
and the Redis failures its loop meets. Waits spend the frozen clock (the fake's BLPOP and the sleeps)."""

from __future__ import annotations

import pytest

from hookline.domain.cron.schedule import ScheduleRequest
from hookline.domain.models import Job
from hookline.usecases.cron import CLAIM_TTL_MS, CronRunner, instance_id
from hookline.usecases.promote import Promoter
from hookline.usecases.schedules import FrequencyFloor, ScheduleManager
from tests.fakes.index import FakeIndex
from tests.fakes.schedules import FakeScheduleStore
from tests.unit.usecases.world import T0, TENANT, URL, World, entry, member

MINUTE = 60_000


def inflight_at(world: World, job: Job) -> float:
    """Returns when job's member entered the ready stream."""
    return float(world.state()["inflight"][member(job)])


def test_given_jobs_due_now_and_later_on_two_shards_when_ticked_then_only_due_ones_move() -> None:
    world = World(shards=2)
    jobs = [world.submit(delay_s=1) for _ in range(6)]
    later = world.submit(delay_s=2)
    world.clock.advance(1_000)

    result = world.promoter().tick()

    assert (result.moved, result.next_due_ms, result.more_due) == (6, T0 + 2_000, False)
    moved = {m for shard in (0, 1) for m in world.state(shard)["inflight"]}
    assert moved == {member(j) for j in jobs}
    assert {m for shard in (0, 1) for m in world.state(shard)["due"]} == {member(later)}


def test_given_more_due_than_a_batch_when_ticked_then_more_due_is_reported(world: World) -> None:
    for _ in range(3):
        world.submit(delay_s=1)
    world.clock.advance(1_000)
    promoter = world.promoter(batch=2)

    assert promoter.tick().more_due is True
    assert promoter.tick().more_due is False
    assert len(world.state()["ready"]) == 3


def test_given_jobs_due_at_different_times_when_running_then_each_moves_on_time_never_early(
    world: World,
) -> None:
    delays_ms = [100, 400, 401, 1_950, 2_700]
    jobs = [world.submit(delay_s=d / 1000) for d in delays_ms]

    world.promoter(max_sleep_ms=1_000).run(T0 + 3_000)

    lateness = [inflight_at(world, j) - j.due_ms for j in jobs]
    assert all(0 <= late <= 2 for late in lateness), lateness
    assert world.state()["due"] == {}


def test_given_earlier_job_submitted_during_a_long_wait_then_it_is_promoted_on_time(world: World) -> None:
    world.submit(delay_s=0.9)
    arrived: list[Job] = []

    def wait(ms: int) -> None:
        if not arrived:  # 100 ms into the first wait, a job due sooner arrives and wakes the promoter
            world.clock.advance(100)
            arrived.append(world.submit(delay_s=0.2))
            return
        world.clock.advance(ms)

    world.memory.on_wait = wait

    world.promoter().run(T0 + 1_000)

    (early,) = arrived
    assert early.due_ms == T0 + 300
    assert 0 <= inflight_at(world, early) - early.due_ms <= 2


def cron_world() -> tuple[World, FakeScheduleStore, FakeIndex, Promoter]:
    """Returns an engine with one every-minute schedule (first fire T0 + 1 min), the Redis connection of
    its promoter (shared by the cron pass) and the promoter."""
    world = World()
    store = FakeScheduleStore(world.tables)
    cron_redis = world.redis("cron")
    manager = ScheduleManager(
        store, cron_redis, world.clock, lambda url: None, 1, FrequencyFloor(1_000, {}), world.metrics
    )
    request = ScheduleRequest.model_validate({"expression": "* * * * *", "job": {"url": URL}})
    manager.create(TENANT, request)
    runner = CronRunner(
        store,
        cron_redis,
        world.submitter(),
        world.clock,
        [0],
        world.metrics,
        misfire_grace_ms=30_000,
        job_shards=1,
    )
    return world, store, cron_redis, world.promoter(redis=cron_redis, cron=runner)


def test_given_schedule_whose_instance_cannot_be_stored_when_ticked_then_jobs_move_and_it_is_retried() -> (
    None
):
    world, store, _, promoter = cron_world()
    job = world.submit(delay_s=60)
    (schedule,) = store.tables.schedules.values()
    store.faults.fail_next("create_instance")
    world.clock.set(T0 + MINUTE)

    result = promoter.tick()

    assert result.moved == 1
    assert world.metrics.counts["CronFailed"] == 1
    assert world.state()["inflight"] == {member(job): T0 + MINUTE}
    assert world.memory.zset("{hl:s0}:cron") == {schedule.member().encode(): T0 + MINUTE + CLAIM_TTL_MS}
    world.clock.advance(CLAIM_TTL_MS)
    promoter.tick()
    occurrence = world.store.get(TENANT, instance_id(schedule.schedule_id, T0 + MINUTE))
    assert occurrence.fire_time_ms == T0 + MINUTE
    assert entry(occurrence.member()) in world.state()["ready"]
    assert world.memory.zset("{hl:s0}:cron") == {schedule.member().encode(): T0 + 2 * MINUTE}


@pytest.mark.parametrize(
    ("method", "on_call", "delay_ms"),
    [
        pytest.param("promote", 2, 500, id="promote"),
        pytest.param("wait_for_wake", 1, 2_000, id="coarse_wait"),
        pytest.param("poll_wake", 1, 100, id="fine_wait"),
    ],
)
def test_given_redis_error_mid_loop_when_running_then_it_backs_off_and_goes_on_until_its_deadline(
    world: World, method: str, on_call: int, delay_ms: int
) -> None:
    job = world.submit(delay_s=delay_ms / 1000)
    redis = world.redis("promoter")
    redis.faults.fail(method, on_call=on_call)

    world.promoter(redis=redis, max_sleep_ms=1_000).run(T0 + 3_000)

    state = world.state()
    assert (state["due"], state["ready"]) == ({}, [entry(job.member())])
    # The back-off (100 ms) ended before the job fell due, so it still moved on time.
    assert 0 <= state["inflight"][member(job)] - job.due_ms <= 2
    assert world.metrics.counts["IndexUnavailable"] == 1
    assert world.clock.now_ms() >= T0 + 3_000


def test_given_redis_down_when_the_job_falls_due_then_promoted_once_it_answers_again(world: World) -> None:
    job = world.submit(delay_s=0.5)
    redis = world.redis("promoter")
    promoter = world.promoter(redis=redis, max_sleep_ms=1_000)
    redis.poll_wake([0])  # the submit's wake token, so the run sleeps until the due time
    # The run's first tick (at T0) goes through; the next three, from the due time on, fail.
    redis.faults.fail("promote", on_call=2, times=3)

    promoter.run(T0 + 3_000)

    # Redis failed at the due time (T0 + 500): tried again after 100, 200 and 400 ms of back-off.
    lateness = world.state()["inflight"][member(job)] - job.due_ms
    assert lateness == 100 + 200 + 400
    assert world.metrics.counts["IndexUnavailable"] == 3


def test_given_redis_error_in_the_cron_pass_when_running_then_jobs_are_still_promoted() -> None:
    world, _, cron_redis, promoter = cron_world()
    job = world.submit(delay_s=0.5)
    cron_redis.faults.fail("claim_cron", on_call=1)

    promoter.run(T0 + 3_000)

    assert member(job) in world.state()["inflight"]
    assert world.metrics.counts["IndexUnavailable"] == 1


def submit_on(world: World, shard: int, count: int, delay_s: float) -> list[Job]:
    """Submits jobs until count of them landed on shard; returns those (the rest are due much later)."""
    on_shard: list[Job] = []
    while len(on_shard) < count:
        job = world.submit(delay_s=delay_s)
        if job.shard == shard:
            on_shard.append(job)
        else:
            assert world.index.unindex(job.member(), job.shard)  # not part of the test
    return on_shard


def test_given_a_burst_on_one_shard_when_ticking_then_another_shards_due_job_waits_at_most_one_tick() -> None:
    world = World(shards=2)
    burst = submit_on(world, 0, 12, delay_s=1)
    first = submit_on(world, 1, 1, delay_s=1)[0]
    second = submit_on(world, 1, 1, delay_s=2)[0]
    world.clock.advance(1_000)
    promoter = world.promoter(batch=5)  # the burst takes three ticks

    ticks = [promoter.tick()]
    world.clock.advance(1_000)  # the second job on shard 1 falls due while the burst is still moving
    ticks += [promoter.tick(), promoter.tick()]

    assert [(t.moved, t.more_due) for t in ticks] == [(6, True), (6, True), (2, False)]
    inflight = world.state(1)["inflight"]
    # Each moved at the first tick after it fell due, though shard 0 still held a backlog then.
    assert (inflight[member(first)], inflight[member(second)]) == (T0 + 1_000, T0 + 2_000)
    assert set(world.state(0)["inflight"]) == {member(job) for job in burst}
