"""ScheduleStore and ScheduleAdminStore contract (version-conditional writes, instances), fake and moto."""

from __future__ import annotations

import pytest

from hookline.domain.cron.schedule import CatchUp, Schedule
from hookline.domain.errors import Conflict, NotFound
from hookline.domain.ids import derived_id, new_id
from hookline.domain.models import Job, JobStatus
from tests.contract.conftest import DynamoBackend
from tests.contract.test_job_store import NOW, make_job


def make_schedule(backend: DynamoBackend, offset_ms: int = 0, **changes: object) -> Schedule:
    """Returns a new every-minute schedule of the backend's tenant and shard (not stored)."""
    schedule = Schedule(
        tenant=backend.tenant,
        schedule_id=new_id(NOW + offset_ms),
        expression="* * * * *",
        timezone="UTC",
        job={"url": "https://example.com/tick", "body": {"n": 1.5}},
        catch_up=CatchUp.SKIP,
        paused=False,
        version=1,
        shard=backend.shard,
        created_ms=NOW,
        updated_ms=NOW,
    )
    return schedule.with_changes(**changes)


def instance(backend: DynamoBackend, schedule: Schedule, fire_ms: int) -> Job:
    """Returns the job of one occurrence (its id derived from the fire time, as the cron pass makes it)."""
    return make_job(
        backend,
        due_ms=fire_ms,
        job_id=derived_id(fire_ms, f"{schedule.schedule_id}:{fire_ms}"),
        schedule_id=schedule.schedule_id,
        fire_time_ms=fire_ms,
    )


def test_given_new_schedule_when_created_then_read_back_and_active(dynamo_backend: DynamoBackend) -> None:
    schedule = make_schedule(dynamo_backend)

    dynamo_backend.schedules.create(schedule, NOW + 60_000)

    assert dynamo_backend.schedules.get(schedule.tenant, schedule.schedule_id) == schedule
    assert dynamo_backend.schedules.active(dynamo_backend.shard, None, 10) == ([schedule], None)
    with pytest.raises(NotFound):
        dynamo_backend.schedules.get("someone-else", schedule.schedule_id)


@pytest.mark.parametrize(
    ("paused", "next_fire_ms"),
    [pytest.param(True, NOW, id="given_paused_schedule"), pytest.param(False, None, id="given_no_next_fire")],
)
def test_given_schedule_without_a_next_fire_when_created_then_not_active(
    dynamo_backend: DynamoBackend, paused: bool, next_fire_ms: int | None
) -> None:
    dynamo_backend.schedules.create(make_schedule(dynamo_backend, paused=paused), next_fire_ms)

    assert dynamo_backend.schedules.active(dynamo_backend.shard, None, 10) == ([], None)


def test_given_version_read_when_replaced_then_written_else_conflict_or_not_found(
    dynamo_backend: DynamoBackend,
) -> None:
    schedule = make_schedule(dynamo_backend)
    dynamo_backend.schedules.create(schedule, NOW)
    changed = schedule.with_changes(version=2, paused=True, updated_ms=NOW + 1)

    dynamo_backend.schedules.replace(changed, 1, None)
    with pytest.raises(Conflict):
        dynamo_backend.schedules.replace(schedule.with_changes(version=2), 1, NOW)
    with pytest.raises(NotFound):
        dynamo_backend.schedules.replace(make_schedule(dynamo_backend, 5), 1, NOW)

    assert dynamo_backend.schedules.get(schedule.tenant, schedule.schedule_id) == changed
    assert dynamo_backend.schedules.active(dynamo_backend.shard, None, 10) == ([], None)


def test_given_schedule_when_deleted_then_returned_as_it_was_and_gone(dynamo_backend: DynamoBackend) -> None:
    schedule = make_schedule(dynamo_backend)
    dynamo_backend.schedules.create(schedule, NOW)

    assert dynamo_backend.schedules.delete(schedule.tenant, schedule.schedule_id) == schedule
    with pytest.raises(NotFound):
        dynamo_backend.schedules.delete(schedule.tenant, schedule.schedule_id)
    assert dynamo_backend.schedules.active(dynamo_backend.shard, None, 10) == ([], None)


def test_given_schedules_when_listed_then_newest_first_in_pages(dynamo_backend: DynamoBackend) -> None:
    made = [make_schedule(dynamo_backend, n) for n in range(3)]
    for schedule in made:
        dynamo_backend.schedules.create(schedule, NOW)

    page1, after = dynamo_backend.schedules.list_page(dynamo_backend.tenant, None, 2)
    page2, end = dynamo_backend.schedules.list_page(dynamo_backend.tenant, after, 2)

    assert page1 + page2 == list(reversed(made))
    assert (after, end) == (made[1].schedule_id, None)


def test_given_unchanged_schedule_when_retired_then_inactive_but_a_changed_one_stays(
    dynamo_backend: DynamoBackend,
) -> None:
    old, kept = make_schedule(dynamo_backend, 0), make_schedule(dynamo_backend, 1)
    dynamo_backend.schedules.create(old, NOW)
    dynamo_backend.schedules.create(kept, NOW + 1)
    dynamo_backend.schedules.replace(kept.with_changes(version=2), 1, NOW + 1)

    dynamo_backend.schedules.retire(old)
    dynamo_backend.schedules.retire(kept)  # version 1 was read; version 2 is stored: left alone
    dynamo_backend.schedules.retire(make_schedule(dynamo_backend, 9))  # never stored: nothing happens

    assert dynamo_backend.schedules.active(dynamo_backend.shard, None, 10) == (
        [kept.with_changes(version=2)],
        None,
    )
    assert dynamo_backend.schedules.get(old.tenant, old.schedule_id) == old


def test_given_occurrence_when_created_twice_then_once_and_listed_newest_first(
    dynamo_backend: DynamoBackend,
) -> None:
    schedule = make_schedule(dynamo_backend)
    dynamo_backend.schedules.create(schedule, NOW)
    first, second = instance(dynamo_backend, schedule, NOW), instance(dynamo_backend, schedule, NOW + 60_000)

    assert dynamo_backend.schedules.create_instance(first) is True
    assert dynamo_backend.schedules.create_instance(first.with_changes(body="other")) is False
    assert dynamo_backend.schedules.create_instance(second) is True

    assert dynamo_backend.jobs.get(first.tenant, first.job_id) == first
    assert dynamo_backend.schedules.instances(schedule.tenant, schedule.schedule_id, None, 10) == (
        [second, first],
        None,
    )
    page, after = dynamo_backend.schedules.instances(schedule.tenant, schedule.schedule_id, None, 1)
    assert (page, after) == ([second], second.job_id)
    # A full page always goes on (DynamoDB's Limit): the listing ends with an empty page or a short one.
    rest, end = dynamo_backend.schedules.instances(schedule.tenant, schedule.schedule_id, after, 1)
    assert rest == [first] and end in (None, first.job_id)
    assert dynamo_backend.schedules.instances(schedule.tenant, schedule.schedule_id, first.job_id, 1) == (
        [],
        None,
    )
    assert dynamo_backend.schedules.last_fire_ms(schedule.tenant, schedule.schedule_id) == NOW + 60_000


def test_given_instance_job_gone_when_listed_then_skipped(dynamo_backend: DynamoBackend) -> None:
    schedule = make_schedule(dynamo_backend)
    occurrence = instance(dynamo_backend, schedule, NOW)
    dynamo_backend.schedules.create_instance(occurrence)
    dynamo_backend.jobs.cancel(occurrence.tenant, occurrence.job_id, NOW)

    listed, _ = dynamo_backend.schedules.instances(schedule.tenant, schedule.schedule_id, None, 10)

    assert [(j.job_id, j.status) for j in listed] == [(occurrence.job_id, JobStatus.CANCELLED)]
    assert dynamo_backend.schedules.last_fire_ms(schedule.tenant, new_id(NOW)) is None
