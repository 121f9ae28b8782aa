"""Schedules through their life on real Redis and moto: each scenario ends with its exact set of instances."""

from __future__ import annotations

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.domain.cron.schedule import ScheduleUpdate
from hookline.domain.errors import Conflict, NotFound
from hookline.domain.models import JobStatus
from hookline.plumbing.wiring import Container
from hookline.usecases.cron import instance_id
from tests.fakes.clock import FrozenClock
from tests.integration.cron.conftest import TENANT, instances, minute, request, run_until

pytestmark = pytest.mark.integration


def fire_minutes(container: Container, schedule_id: str) -> list[int]:
    return [((job.fire_time_ms or 0) - minute(0)) // 60_000 for job in instances(container, schedule_id)]


def cron_members(container: Container) -> dict[str, float]:
    return {m.decode(): s for m, s in container.redis.zrange(redis_keys.cron_key(0), 0, -1, withscores=True)}


def test_given_per_minute_schedule_when_run_then_each_minute_creates_one_scheduled_job_on_the_ready_stream(
    frozen: Container, clock: FrozenClock
) -> None:
    schedule = frozen.schedules.create(TENANT, request())

    run_until(frozen, clock, minute(3, 30))

    jobs = instances(frozen, schedule.schedule_id)
    assert [job.job_id for job in jobs] == [instance_id(schedule.schedule_id, minute(n)) for n in (1, 2, 3)]
    assert {(job.schedule_id, job.status, job.due_ms == job.fire_time_ms) for job in jobs} == {
        (schedule.schedule_id, JobStatus.SCHEDULED, True)
    }
    assert jobs[0].body == '{"n":1}' and jobs[0].headers == {"Content-Type": "application/json"}
    ready = frozen.redis.xrange(redis_keys.ready_stream(0))
    assert sorted(fields[b"m"].decode().split("/")[1] for _, fields in ready) == [job.job_id for job in jobs]
    assert cron_members(frozen) == {schedule.member().encode(): minute(4)}


def test_given_pause_and_resume_then_nothing_fires_while_paused_and_missed_minutes_are_not_fired(
    frozen: Container, clock: FrozenClock
) -> None:
    schedule = frozen.schedules.create(TENANT, request())
    run_until(frozen, clock, minute(3, 30))

    frozen.schedules.update(TENANT, schedule.schedule_id, ScheduleUpdate(paused=True))
    run_until(frozen, clock, minute(6, 30))
    assert cron_members(frozen) == {}
    resumed = frozen.schedules.update(TENANT, schedule.schedule_id, ScheduleUpdate(paused=False))
    run_until(frozen, clock, minute(8, 30))

    assert fire_minutes(frozen, schedule.schedule_id) == [1, 2, 3, 7, 8]
    assert cron_members(frozen) == {resumed.member().encode(): minute(9)}
    assert resumed.version == 3


def test_given_schedule_due_when_deleted_before_the_promoter_ticks_then_it_creates_nothing(
    frozen: Container, clock: FrozenClock
) -> None:
    schedule = frozen.schedules.create(TENANT, request())
    clock.set(minute(1))  # due now

    frozen.schedules.delete(TENANT, schedule.schedule_id)
    frozen.promoter.tick()

    assert fire_minutes(frozen, schedule.schedule_id) == []
    assert cron_members(frozen) == {}


def test_given_schedule_claimed_when_deleted_meanwhile_then_the_claim_drops_it(
    frozen: Container, clock: FrozenClock
) -> None:
    schedule = frozen.schedules.create(TENANT, request())
    clock.set(minute(1))
    claimed = frozen.index.claim_cron(0, clock.now_ms(), clock.now_ms() + 10_000, 10)
    # The API's removal happens while a promoter holds the claim; then a stale Redis entry (a failed
    # API-side Redis step) reappears: the promoter reads the deleted schedule and removes it.
    frozen.schedule_store.delete(TENANT, schedule.schedule_id)
    frozen.redis.zadd(redis_keys.cron_key(0), {schedule.member().encode(): claimed.claims[0].claim_until_ms})

    clock.advance(10_001)
    frozen.promoter.tick()

    assert fire_minutes(frozen, schedule.schedule_id) == []
    assert cron_members(frozen) == {}


def test_given_expression_edited_then_later_occurrences_follow_the_new_one_and_the_old_version_is_gone(
    frozen: Container, clock: FrozenClock
) -> None:
    schedule = frozen.schedules.create(TENANT, request("*/2 * * * *"))
    run_until(frozen, clock, minute(4, 30))

    edited = frozen.schedules.update(TENANT, schedule.schedule_id, ScheduleUpdate(expression="*/5 * * * *"))
    run_until(frozen, clock, minute(10, 30))

    assert fire_minutes(frozen, schedule.schedule_id) == [2, 4, 5, 10]
    assert cron_members(frozen) == {edited.member().encode(): minute(15)}


@pytest.mark.parametrize(
    ("catch_up", "want_minutes"),
    [("skip", [1, 2, 61]), ("fire_once", [1, 2, 60, 61])],
    ids=["given_skip_then_missed_occurrences_are_not_fired", "given_fire_once_then_only_the_latest_missed"],
)
def test_given_promoters_down_for_an_hour_when_they_return_then_catch_up_policy_applies_without_a_burst(
    frozen: Container, clock: FrozenClock, catch_up: str, want_minutes: list[int]
) -> None:
    schedule = frozen.schedules.create(TENANT, request(catch_up=catch_up))
    run_until(frozen, clock, minute(2, 30))

    clock.set(minute(60, 40))  # nothing ran for 58 minutes
    run_until(frozen, clock, minute(61, 30))

    assert fire_minutes(frozen, schedule.schedule_id) == want_minutes


def test_given_redis_lost_everything_when_the_reaper_reconciles_then_the_schedule_resumes_where_it_was(
    frozen: Container, clock: FrozenClock
) -> None:
    schedule = frozen.schedules.create(TENANT, request())
    paused = frozen.schedules.create(TENANT, request(paused=True))
    run_until(frozen, clock, minute(2, 30))
    frozen.redis.flushall()

    report = frozen.reaper.run(deadline_ms=clock.now_ms() + 60_000)
    run_until(frozen, clock, minute(4, 30))

    assert (report.schedules_seen, report.schedules_restored) == (1, 1)  # the paused one is not active
    assert fire_minutes(frozen, schedule.schedule_id) == [1, 2, 3, 4]
    assert fire_minutes(frozen, paused.schedule_id) == []
    assert frozen.reaper.run(deadline_ms=clock.now_ms() + 60_000).schedules_restored == 0


def test_given_schedule_past_its_end_when_reconciled_then_it_leaves_the_active_listing(
    frozen: Container, clock: FrozenClock
) -> None:
    ending = frozen.schedules.create(TENANT, request(end_at="2026-01-01T00:02:00Z"))
    run_until(frozen, clock, minute(3, 30))

    first = frozen.reaper.run(deadline_ms=clock.now_ms() + 60_000)
    second = frozen.reaper.run(deadline_ms=clock.now_ms() + 60_000)

    assert fire_minutes(frozen, ending.schedule_id) == [1, 2]
    assert cron_members(frozen) == {}
    assert (first.schedules_seen, first.schedules_restored) == (1, 0)
    assert second.schedules_seen == 0


def test_given_schedule_changed_since_it_was_read_when_written_then_conflict(frozen: Container) -> None:
    schedule = frozen.schedules.create(TENANT, request())
    frozen.schedules.update(TENANT, schedule.schedule_id, ScheduleUpdate(paused=True))

    with pytest.raises(Conflict):
        frozen.schedule_store.replace(schedule.with_changes(version=2), schedule.version, None)
    with pytest.raises(NotFound):
        frozen.schedule_store.replace(
            schedule.with_changes(schedule_id="01KZZZZZZZZZZZZZZZZZZZZZZZ"), 1, None
        )
