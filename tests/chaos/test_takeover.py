"""Take-over without a helping peer: promoters killed over and over, the only executor stopped, an executor
whose host clock runs 30 s ahead or behind. Nothing lost, nothing early, and each recovery within its target.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import pytest

from tests.chaos import receivers
from tests.chaos.fleet import EXECUTE, Fleet
from tests.chaos.judge import by_job, check, first_arrival_after, summarize
from tests.chaos.probes import pending_of
from tests.chaos.receivers import now_ms
from tests.chaos.summary import RECOVERY_TARGET_S, Summary, missed
from tests.chaos.world import EXTRA_WAIT_S, SCALE, TENANT, TICK_S, Options, World, scaled

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(int(150 + EXTRA_WAIT_S + 60 * SCALE))]

MakeWorld = Callable[[Options], World]
Record = Callable[[Summary], None]

OK = receivers.ok(0.02)
SLOW_OK = receivers.ok(0.05)
RETRY_AFTER_2 = receivers.throttle_429(1, 2)  # 429 with Retry-After: 2 once, then 200
# The target: a job due while no promoter runs is delivered at most this late.
PROMOTER_GONE_TARGET_S = 5.0
# How long a killed promoter stays dead before its next tick may start it again (a minute in AWS, less here).
PROMOTER_DEAD_S = 6.0
PROMOTER_KILLS = 2


@contextlib.contextmanager
def extra_fleet(world: World, **env: str) -> Iterator[Fleet]:
    """Yields a second fleet on the world's services whose processes get env on top of the world's."""
    fleet = Fleet({**world.env, **env}, world.log_dir)
    try:
        yield fleet
    finally:
        fleet.close()


def retry_lateness_s(world: World, job_ids: list[str]) -> float | None:
    """Returns the worst (second request - the earliest its Retry-After allowed) over jobs (inf: none)."""
    grouped = by_job(world)
    worst: float | None = None
    for job_id in job_ids:
        deliveries = grouped.get(job_id, [])
        late_s = (
            float("inf")
            if len(deliveries) < 2
            else (deliveries[1].arrival_ms - deliveries[1].floor_ms) / 1000
        )
        worst = late_s if worst is None else max(worst, late_s)
    return worst


def first_lateness_s(world: World, job_ids: list[str]) -> float | None:
    """Returns the worst (first request - due time) over jobs (inf: one never came)."""
    grouped = by_job(world)
    worst: float | None = None
    for job_id in job_ids:
        deliveries = grouped.get(job_id, [])
        due_ms = world.expected[job_id].due_ms
        late_s = float("inf") if not deliveries else (deliveries[0].arrival_ms - due_ms) / 1000
        worst = late_s if worst is None else max(worst, late_s)
    return worst


def test_promoters_killed_repeatedly(make_world: MakeWorld, record: Record) -> None:
    """The promoter is SIGKILLed a few seconds into its invocations and stays dead for PROMOTER_DEAD_S each
    time, while jobs and Retry-After retries fall due: the executors and the reaper promote them."""
    world = make_world(Options(executors=2, behaviours=[OK, RETRY_AFTER_2]))
    world.warm_up(OK)
    promoter = world.fleet.slots["promote"]
    span_s = PROMOTER_KILLS * (PROMOTER_DEAD_S + 2.0 + TICK_S)
    start_ms = now_ms() + 2_000
    retry_count = scaled(10)
    world.submit_batch(
        RETRY_AFTER_2, [start_ms + int(i * span_s * 1000 / retry_count) for i in range(retry_count)]
    )
    retried = list(world.expected)[-retry_count:]
    count = scaled(150)
    world.submit_batch(OK, [start_ms + int(i * span_s * 1000 / count) for i in range(count)])
    on_time = list(world.expected)[-count:]
    for kill in range(PROMOTER_KILLS):
        while promoter.restarts < kill:  # the promoter killed before is back (at its slot's next tick)
            world.sleep(0.1)
        world.sleep(2.0)  # a few seconds into the promoter's run
        promoter.stopped = True  # no restart until its next tick, PROMOTER_DEAD_S from now at the earliest
        world.fleet.kill(promoter)
        world.sleep(PROMOTER_DEAD_S)
        promoter.stopped = False
        world.poll()
    world.settle(world.last_due_ms() + 2_000)

    summary = summarize(world, Summary("promoters_killed_repeatedly"))
    late_s = first_lateness_s(world, on_time)
    retry_late_s = retry_lateness_s(world, retried)
    summary.extra.update(
        {
            "promoter_kills": PROMOTER_KILLS,
            "worst_first_delivery_late_s": None if late_s is None else round(late_s, 2),
            "worst_retry_late_s": None if retry_late_s is None else round(retry_late_s, 2),
        }
    )
    check(summary)
    if late_s is not None and late_s > PROMOTER_GONE_TARGET_S:
        summary.failures.append(missed("jobs due with no promoter, late", late_s, PROMOTER_GONE_TARGET_S))
    if retry_late_s is not None and retry_late_s > PROMOTER_GONE_TARGET_S:
        summary.failures.append(
            missed("Retry-After retries with no promoter, late", retry_late_s, PROMOTER_GONE_TARGET_S)
        )
    record(summary)
    assert summary.passed, summary.line()


def test_only_executor_stopped(make_world: MakeWorld, record: Record) -> None:
    """The only executor is SIGSTOPped holding deliveries; the next executor to read (the schedule's next
    invocation) runs no recovery pass of its own, so the reaper's watch is what must re-deliver them."""
    world = make_world(Options(executors=1, behaviours=[SLOW_OK]))
    world.warm_up(SLOW_OK)
    (stopped,) = world.fleet.executors()
    assert stopped.child is not None
    count = scaled(40)
    due = world.schedule(SLOW_OK, count, 20, lead_s=1.0)
    world.sleep_until(time.monotonic() + max(0, due[count // 2] - now_ms()) / 1000)
    world.fleet.stop(stopped)
    stop_ms = now_ms()
    held = [m.job_id for m in pending_of(world, stopped.child.pid)]
    live = [j for j in held if world.judge.jobs.get(TENANT, j).status.is_live]
    # A recovery pass every ten minutes: never within the scenario.
    with extra_fleet(world, HOOKLINE_RECOVER_EVERY_MS="600000") as next_executors:
        next_executors.add("execute-next", EXECUTE, TICK_S, TICK_S)
        world.settle(max(*due, stop_ms))
        summary = summarize(world, Summary("only_executor_stopped"))
    summary.in_flight = len(held)
    arrivals = first_arrival_after(world, live, stop_ms)
    summary.recovery_s = max(
        (float("inf") if at is None else (at - stop_ms) / 1000 for at in arrivals.values()), default=None
    )
    summary.extra["live_jobs_held"] = len(live)
    check(summary)
    if not live:
        summary.failures.append("the stopped executor held no live job: the fault missed")
    if summary.recovery_s is not None and summary.recovery_s > RECOVERY_TARGET_S:
        summary.failures.append(
            missed("the stopped executor's jobs delivered again", summary.recovery_s, RECOVERY_TARGET_S)
        )
    record(summary)
    assert summary.passed, summary.line()


@pytest.mark.parametrize("skew_s", [30, -30])
def test_executor_clock_skewed(make_world: MakeWorld, record: Record, skew_s: int) -> None:
    """One of two executors runs on a host clock skew_s off; it is SIGKILLed holding deliveries. Its
    leases and its retries' due times must not follow its clock: its jobs are taken over within the
    recovery target, and no Retry-After retry comes early or late by the skew."""
    world = make_world(Options(executors=1, behaviours=[SLOW_OK, RETRY_AFTER_2]))
    world.warm_up(SLOW_OK)
    with extra_fleet(world, HOOKLINE_CHAOS_CLOCK_SKEW_MS=str(skew_s * 1000)) as skewed_fleet:
        skewed = skewed_fleet.add("execute-skewed", EXECUTE, TICK_S, TICK_S)
        start_ms = now_ms() + 4_000  # the skewed process loads its handler meanwhile
        retry_count = scaled(20)
        world.submit_batch(RETRY_AFTER_2, [start_ms + i * 200 for i in range(retry_count)])
        retried = list(world.expected)[-retry_count:]
        count = scaled(100)
        due = world.schedule(SLOW_OK, count, 20, lead_s=max(1.0, (start_ms - now_ms()) / 1000))
        world.sleep_until(time.monotonic() + max(0, due[count // 2] - now_ms()) / 1000)
        assert skewed.child is not None
        busy_until = time.monotonic() + 3.0  # strike while it holds deliveries, if it takes any
        while not pending_of(world, skewed.child.pid) and time.monotonic() < busy_until:
            world.sleep(0.02)
        kill_ms = now_ms()
        pid = skewed_fleet.kill(skewed)
        held = [m.job_id for m in pending_of(world, pid)]
        live = [j for j in held if world.judge.jobs.get(TENANT, j).status.is_live]
        world.settle(max(*due, kill_ms), natural_s=2.0)
        summary = summarize(world, Summary(f"executor_clock_{'ahead' if skew_s > 0 else 'behind'}_30s"))
    summary.in_flight = len(held)
    arrivals = first_arrival_after(world, live, kill_ms)
    summary.recovery_s = max(
        (float("inf") if at is None else (at - kill_ms) / 1000 for at in arrivals.values()), default=None
    )
    retry_late_s = retry_lateness_s(world, retried)
    summary.extra.update(
        {
            "skew_s": skew_s,
            "live_jobs_held": len(live),
            "worst_retry_late_s": None if retry_late_s is None else round(retry_late_s, 2),
        }
    )
    check(summary)
    if not held:
        summary.failures.append("the skewed executor held no delivery when killed: the fault missed")
    if summary.recovery_s is not None and summary.recovery_s > RECOVERY_TARGET_S:
        summary.failures.append(
            missed("the skewed executor's jobs delivered again", summary.recovery_s, RECOVERY_TARGET_S)
        )
    if retry_late_s is not None and retry_late_s > RECOVERY_TARGET_S:
        summary.failures.append(missed("Retry-After retries late", retry_late_s, RECOVERY_TARGET_S))
    record(summary)
    assert summary.passed, summary.line()
