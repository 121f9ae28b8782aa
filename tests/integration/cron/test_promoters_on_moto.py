"""Three promoters (own Redis and DynamoDB clients, one frozen clock) on moto: each occurrence once."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from hookline.usecases.cron import instance_id
from tests.fakes.clock import FrozenClock
from tests.integration.cron.conftest import TENANT, instances, request

pytestmark = pytest.mark.integration

SECONDS = 120


def all_handled(container: Container, clock: FrozenClock) -> bool:
    """Tells whether no claim is held and nothing is due; one transaction, so no claim slips between."""
    pipe = container.redis.pipeline(transaction=True)
    pipe.zrange(redis_keys.cron_key(0), 0, 0, withscores=True)
    pipe.hlen(redis_keys.cron_claims_key(0))
    (lowest,), claims = pipe.execute()
    return bool(claims == 0 and lowest[1] > clock.now_ms())


def promote_until(container: Container, stop: threading.Event, errors: list[BaseException]) -> None:
    """Ticks one promoter until stop is set, as its Lambda invocation would loop."""
    try:
        while not stop.is_set():
            if not container.promoter.tick().more_due:
                time.sleep(0.001)
    except BaseException as error:  # surfaced in the main thread
        errors.append(error)


def test_given_three_promoters_when_two_minutes_of_a_per_second_schedule_pass_then_each_second_once(
    settings: Settings,
) -> None:
    clock = FrozenClock(1_767_225_600_000)  # 2026-01-01T00:00:00Z
    containers = [Container(settings, clock=clock, consumer=f"promoter-{n}") for n in range(3)]
    schedule = containers[0].schedules.create(TENANT, request("* * * * * *"))
    start_ms = clock.now_ms()
    stop = threading.Event()
    errors: list[BaseException] = []
    threads = [threading.Thread(target=promote_until, args=(c, stop, errors)) for c in containers]
    for thread in threads:
        thread.start()
    try:
        while clock.now_ms() < start_ms + SECONDS * 1000 and not errors:
            if all_handled(containers[0], clock):
                clock.advance(2_000)  # two occurrences fall due per step: promoters race for them
            else:
                time.sleep(0.001)
        while not all_handled(containers[0], clock) and not errors:
            time.sleep(0.001)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)

    assert errors == []
    fire_times = [start_ms + s * 1000 for s in range(1, SECONDS + 1)]
    jobs = instances(containers[0], schedule.schedule_id)  # pages of 100: also checks the listing cursor
    assert [job.job_id for job in jobs] == [instance_id(schedule.schedule_id, t) for t in fire_times]
    assert [job.fire_time_ms for job in jobs] == fire_times
    ready = containers[0].redis.xrange(redis_keys.ready_stream(0))
    indexed = Counter(fields[b"m"].decode().split("/")[1] for _, fields in ready)
    assert indexed == Counter(job.job_id for job in jobs)  # each instance indexed exactly once
    for container in containers:
        container.close()
