"""What one due occurrence leads to: on time, or missed under `skip` or `fire_once`; never a burst."""

from __future__ import annotations

import pytest

from hookline.domain.cron.schedule import CatchUp, Schedule, Step, plan

MINUTE_MS = 60_000
T0_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
GRACE_MS = 30_000


def schedule(catch_up: CatchUp = CatchUp.SKIP, end_ms: int | None = None) -> Schedule:
    return Schedule(
        tenant="acme",
        schedule_id="01KAAAAAAAAAAAAAAAAAAAAAAA",
        expression="* * * * *",
        timezone="UTC",
        job={"url": "https://example.com/"},
        catch_up=catch_up,
        paused=False,
        version=1,
        shard=0,
        created_ms=T0_MS,
        updated_ms=T0_MS,
        end_ms=end_ms,
    )


def at(minutes: float) -> int:
    return T0_MS + int(minutes * MINUTE_MS)


@pytest.mark.parametrize(
    ("given", "fire_ms", "now_ms", "want"),
    [
        pytest.param(schedule(), at(5), at(5), Step(at(5), at(6)), id="given_due_now_then_created_and_next"),
        pytest.param(
            schedule(), at(5), at(5) + GRACE_MS, Step(at(5), at(6)), id="given_late_by_the_grace_then_on_time"
        ),
        pytest.param(
            schedule(),
            at(5),
            at(65.5),
            Step(None, at(66)),
            id="given_missed_and_skip_then_nothing_and_future",
        ),
        pytest.param(
            schedule(CatchUp.FIRE_ONCE),
            at(5),
            at(65.5),
            Step(at(65), at(66)),
            id="given_missed_and_fire_once_then_only_the_latest_missed_and_future",
        ),
        pytest.param(
            schedule(CatchUp.FIRE_ONCE, end_ms=at(30)),
            at(5),
            at(65.5),
            Step(at(30), None),
            id="given_missed_past_end_and_fire_once_then_the_last_before_end_and_done",
        ),
        pytest.param(
            schedule(end_ms=at(5)), at(5), at(5), Step(at(5), None), id="given_last_occurrence_then_no_next"
        ),
    ],
)
def test_plan(given: Schedule, fire_ms: int, now_ms: int, want: Step) -> None:
    assert plan(given, fire_ms, now_ms, GRACE_MS) == want
