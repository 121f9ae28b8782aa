"""A schedule's occurrences reach a real loopback receiver with the schedule headers (real clock)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hookline.domain.cron.schedule import ScheduleRequest
from hookline.plumbing.wiring import Container
from hookline.usecases.cron import instance_id
from tests.integration.cron.conftest import TENANT
from tests.support.receiver import Receiver
from tests.support.stack import running_loops

pytestmark = pytest.mark.integration


def test_given_per_second_schedule_when_loops_run_then_each_callback_carries_schedule_id_and_fire_time(
    container: Container, receiver: Receiver
) -> None:
    request = ScheduleRequest.model_validate(
        {"expression": "* * * * * *", "job": {"url": receiver.url("/tick")}}
    )
    schedule = container.schedules.create(TENANT, request)

    with running_loops(container):
        requests = receiver.wait_for(2, timeout_s=10)

    for got in requests[:2]:
        fire_time = datetime.fromisoformat(got.headers["hookline-fire-time"].replace("Z", "+00:00"))
        fire_ms = int(fire_time.astimezone(UTC).timestamp() * 1000)
        assert got.headers["hookline-schedule-id"] == schedule.schedule_id
        assert got.headers["webhook-id"] == instance_id(schedule.schedule_id, fire_ms)
        assert fire_ms % 1000 == 0 and fire_ms <= got.received_ms < fire_ms + 1000  # on time, never early
