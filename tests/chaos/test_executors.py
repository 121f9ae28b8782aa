"""Executor processes killed or frozen mid-delivery: nothing lost, duplicates only of attempts in flight,
a killed executor's jobs delivered again within the recovery target, and a frozen one fenced off.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from hookline.adapters.redis import keys as redis_keys
from hookline.domain.models import ExecutionOutcome, Job
from tests.chaos import receivers
from tests.chaos.fleet import EXECUTE
from tests.chaos.judge import check, first_arrival_after, summarize
from tests.chaos.probes import busiest_executor, pending_of
from tests.chaos.receivers import Answer, Behaviour, now_ms
from tests.chaos.summary import RECOVERY_TARGET_S, Summary, missed
from tests.chaos.world import EXTRA_WAIT_S, SCALE, TENANT, TICK_S, Options, World, scaled

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(int(240 + EXTRA_WAIT_S + 90 * SCALE))]

MakeWorld = Callable[[Options], World]
Record = Callable[[Summary], None]

# A callback takes 50 ms, so that some are always in flight when an executor dies.
SLOW_OK = receivers.ok(0.05)
# Well below what two executors and moto deliver on two quiet cores (about 60 a second): a backlog would
# delay the killed executor's jobs behind it and blur the recovery figure.
DUE_PER_S = 25
KILLS = (0.25, 0.5, 0.75)  # fractions of the due span at which the busiest executor is SIGKILLed
KILL_GAP_MS = int((TICK_S + 3) * 1000)  # the victim's replacement starts at its next tick


@dataclass
class Kill:
    """One SIGKILL: when, which process, and the live jobs its pending entries held."""

    at_ms: int
    pid: int
    live_jobs: list[str]


def kill_busiest(world: World) -> Kill:
    """SIGKILLs the executor with most pending entries; reads what it held once it can no longer change."""
    slot = busiest_executor(world)
    at_ms = now_ms()
    pid = world.fleet.kill(slot)
    members = pending_of(world, pid)
    live = [m.job_id for m in members if world.judge.jobs.get(TENANT, m.job_id).status.is_live]
    return Kill(at_ms, pid, live)


def recovery_times(world: World, kills: list[Kill]) -> tuple[list[float | None], int]:
    """Returns, per kill, seconds until the last of its live jobs was taken up again; and how many were
    taken up by an executor a later kill then struck holding them (taken up at that kill, at the latest:
    that kill's recovery is its own figure)."""
    recoveries: list[float | None] = []
    reheld = 0
    for position, kill in enumerate(kills):
        arrivals = first_arrival_after(world, kill.live_jobs, kill.at_ms)
        for job_id, at in arrivals.items():
            taken_up = next((k.at_ms for k in kills[position + 1 :] if job_id in k.live_jobs), None)
            if taken_up is not None and (at is None or taken_up < at):
                arrivals[job_id] = taken_up
                reheld += 1
        recoveries.append(
            max(
                (float("inf") if at is None else (at - kill.at_ms) / 1000 for at in arrivals.values()),
                default=None,
            )
        )
    return recoveries, reheld


def test_executors_sigkilled_during_1000_jobs(make_world: MakeWorld, record: Record) -> None:
    """Three SIGKILLs of the busiest executor while 1,000 jobs fall due, at production timings.

    The lease margin, the re-delivery idle time and the reaper's schedule are template.yaml's and
    settings.py's defaults, and jobs keep the default 30 s timeout: the 15 s target is about those.
    """
    world = make_world(Options(executors=2, behaviours=[SLOW_OK]))
    world.warm_up(SLOW_OK)
    count = scaled(1000)
    kill_at = [int(count * fraction) for fraction in KILLS]
    kills: list[Kill] = []

    def kill_when_due(due: list[int]) -> None:
        # One kill at a time, and not before the last victim's replacement had its tick: the scenario
        # kills one of two executors, never both (that would be an outage, not a crash).
        last_ms = kills[-1].at_ms if kills else 0
        if kill_at and kill_at[0] < len(due) and now_ms() >= max(due[kill_at[0]], last_ms + KILL_GAP_MS):
            kill_at.pop(0)
            kills.append(kill_busiest(world))

    due = world.schedule(SLOW_OK, count, DUE_PER_S, between=kill_when_due)
    while kill_at:
        last_ms = kills[-1].at_ms if kills else 0
        world.sleep_until(
            time.monotonic() + max(0, due[kill_at[0]] - now_ms(), last_ms + KILL_GAP_MS - now_ms()) / 1000
        )
        kill_when_due(due)
    world.settle(max([max(due)] + [kill.at_ms for kill in kills]))

    summary = summarize(world, Summary("executors_sigkilled"))
    summary.in_flight = sum(len(kill.live_jobs) for kill in kills)
    recoveries, reheld = recovery_times(world, kills)
    if reheld:
        summary.extra["recovered_then_held_by_a_later_victim"] = reheld
    summary.recovery_s = max((r for r in recoveries if r is not None), default=None)
    held = {job_id for kill in kills for job_id in kill.live_jobs}
    stuck_elsewhere = [j for j, job in world.jobs().items() if job.status.is_live and j not in held]
    if stuck_elsewhere:
        summary.extra["stuck_not_held_by_a_killed_executor"] = len(stuck_elsewhere)
    summary.extra["kills"] = [
        {
            "pid": k.pid,
            "live_jobs_held": len(k.live_jobs),
            "again_after_s": None if r is None or r == float("inf") else round(r, 1),
        }
        for k, r in zip(kills, recoveries, strict=True)
    ]
    check(summary)
    if summary.in_flight == 0:
        summary.failures.append("no killed executor held a live job: the faults missed")
    if summary.recovery_s is not None and summary.recovery_s > RECOVERY_TARGET_S:
        summary.failures.append(
            missed("killed executors' jobs delivered again", summary.recovery_s, RECOVERY_TARGET_S)
        )
    record(summary)
    assert summary.passed, summary.line()


# A backlog due at once, several times what the executors deliver in the recovery target (65 to 150 a
# second for two executors on two shared cores with 50 ms callbacks), so that a re-delivery queued behind
# it would be late (2,000 drained within the re-delivery idle time and showed nothing).
BACKLOG = 4000
# The slowest the executors drain it (jobs a second): the judge waits that long for it on top of the target.
BACKLOG_DRAIN_PER_S = 50
# The kill comes this long after the backlog fell due: the stream holds most of it still.
BACKLOG_KILL_AFTER_S = 2.0


def unread_entries(world: World) -> int:
    """Returns how many entries of shard 0's ready stream no executor has read yet (the group's lag)."""
    client = world.redis.client()
    try:
        stream = redis_keys.ready_stream(0)
        for group in client.xinfo_groups(stream):
            if group["name"] in (redis_keys.CONSUMER_GROUP, redis_keys.CONSUMER_GROUP.encode()):
                return int(group.get("lag") or 0)
        return 0
    finally:
        client.close()


def test_busiest_executor_sigkilled_behind_a_backlog(make_world: MakeWorld, record: Record) -> None:
    """A backlog of BACKLOG jobs falls due at once and the busiest executor is SIGKILLed while most of it
    is still unread: its jobs are taken over ahead of the backlog, within the recovery target.

    Production timings, as in the test above; a re-delivery re-added at the stream's tail would wait for
    the whole backlog before it.
    """
    world = make_world(Options(executors=2, behaviours=[SLOW_OK]))
    world.warm_up(SLOW_OK)
    count = scaled(BACKLOG)
    # Due once every job is in: the submit takes about a second per few hundred jobs on two cores.
    due_ms = now_ms() + 5_000 + count * 3
    accepted = world.submit_direct(SLOW_OK, [due_ms] * count)
    world.sleep_until(time.monotonic() + max(0, due_ms - now_ms()) / 1000 + BACKLOG_KILL_AFTER_S)
    kill = kill_busiest(world)
    unread = unread_entries(world)
    world.settle(max(due_ms, kill.at_ms), natural_s=unread / BACKLOG_DRAIN_PER_S)

    summary = summarize(world, Summary("executor_sigkilled_behind_backlog"))
    summary.in_flight = len(kill.live_jobs)
    recoveries, _ = recovery_times(world, [kill])
    summary.recovery_s = recoveries[0]
    summary.extra.update(
        {
            "backlog": accepted,
            "unread_at_kill": unread,
            "live_jobs_held": len(kill.live_jobs),
            "again_after_s": None
            if summary.recovery_s is None or summary.recovery_s == float("inf")
            else round(summary.recovery_s, 1),
        }
    )
    check(summary)
    if summary.in_flight == 0:
        summary.failures.append("the killed executor held no live job: the fault missed")
    if unread == 0:
        summary.failures.append("no backlog was left unread at the kill: the scenario tested nothing")
    if summary.recovery_s is not None and summary.recovery_s > RECOVERY_TARGET_S:
        summary.failures.append(
            missed("the killed executor's jobs delivered again", summary.recovery_s, RECOVERY_TARGET_S)
        )
    record(summary)
    assert summary.passed, summary.line()


def fencing() -> Behaviour:
    """The first request waits for release() and gets 429 (Retry-After: 1); the second 429 (Retry-After:
    10); then 200. The first goes to the executor that will be frozen, the second to the one taking over."""

    def answer(n: int) -> Answer:
        if n == 1:
            return Answer(kind="hold", status=429, retry_after_s=1)
        if n == 2:
            return Answer(status=429, retry_after_s=10)
        return Answer()

    return Behaviour("fencing", answer, "succeeded", lambda m: 3)


# Short leases so that the frozen executor's claims expire in seconds: a 2 s callback timeout plus a 1 s
# margin, re-delivery after 4 s idle, and a reaper every second. Fencing does not depend on these
# figures (the recovery targets are measured in the kill scenario at production timings).
FENCING_SETTINGS = {"HOOKLINE_LEASE_MARGIN_MS": "1000", "HOOKLINE_REDELIVER_AFTER_MS": "4000"}
# The maximum backoff caps a receiver's Retry-After: at 10 s it lets the take-over's 10 s through.
FENCED_JOB = {"timeout_s": 2, "min_backoff_s": 1, "max_backoff_s": 10, "max_attempts": 5}


def test_executor_sigstopped_past_its_lease_then_resumed(make_world: MakeWorld, record: Record) -> None:
    """Executor A is frozen mid-callback past its leases; B takes the jobs over and records a long
    Retry-After; A resumes. A must write nothing (its finish is fenced) and its own short retry time must
    not be used: no delivery before the time B recorded."""
    behaviour = fencing()
    world = make_world(
        Options(
            executors=1,
            reap_rate_s=1.0,
            settings_env=FENCING_SETTINGS,
            behaviours=[behaviour, receivers.ok()],
        )
    )
    world.warm_up(receivers.ok())
    (frozen,) = world.fleet.executors()
    count = scaled(5)
    world.submit_batch(behaviour, [now_ms()] * count, **FENCED_JOB)
    fenced = list(world.expected)[-count:]

    def first_requests_held(deliveries: list[receivers.Delivery]) -> bool:
        return sum(d.behaviour == behaviour.name and d.number == 1 for d in deliveries) >= count

    assert world.receiver.wait_for(first_requests_held, 30), "the fenced jobs' first requests never came"
    world.fleet.stop(frozen)
    stop_ms = now_ms()
    assert frozen.child is not None
    held = [m.job_id for m in pending_of(world, frozen.child.pid)]
    # A's answers go out now, to a process that cannot read them until it is resumed.
    world.receiver.release()
    world.fleet.add("execute-takeover", EXECUTE, TICK_S, TICK_S)

    def taken_over(deliveries: list[receivers.Delivery]) -> bool:
        answered = [d for d in deliveries if d.job_id in fenced and d.number == 2 and d.answered_ms]
        return len(answered) >= count

    took_over = _wait(world, taken_over, 60)
    recorded = _wait_for_jobs(world, fenced, lambda job: job.generation >= 2, 10)
    before = {job_id: world.judge.jobs.get(TENANT, job_id) for job_id in fenced}
    world.fleet.resume(frozen)
    resume_ms = now_ms()
    world.sleep(0.5)
    after = {job_id: world.judge.jobs.get(TENANT, job_id) for job_id in fenced}
    overwritten = [
        job_id
        for job_id in fenced
        if after[job_id].attempt == before[job_id].attempt and _state(after[job_id]) != _state(before[job_id])
    ]
    latest_floor_ms = max((d.floor_ms for d in world.receiver.deliveries if d.job_id in fenced), default=0)
    world.settle(max(latest_floor_ms, world.last_due_ms()))

    summary = summarize(world, Summary("executor_sigstopped_past_lease"))
    summary.in_flight = len(held)
    stale_records = [
        job_id
        for job_id in fenced
        for execution in world.judge.jobs.executions(TENANT, job_id)
        if execution.attempt == 1 and execution.outcome is not ExecutionOutcome.LEASE_EXPIRED
    ]
    summary.extra.update(
        {
            "frozen_for_s": round((resume_ms - stop_ms) / 1000, 1),
            "held_at_stop": len(held),
            "taken_over": took_over and recorded,
            "overwritten_by_stale_executor": len(overwritten),
            "stale_execution_records": len(stale_records),
        }
    )
    check(summary)
    if not (took_over and recorded):
        summary.failures.append("the jobs were not taken over while the executor was frozen")
    if overwritten:
        summary.failures.append(f"the resumed executor overwrote {len(overwritten)} jobs")
    if stale_records:
        summary.failures.append(f"the resumed executor recorded {len(stale_records)} stale attempts")
    record(summary)
    assert summary.passed, summary.line()


def _state(job: Job) -> tuple[object, ...]:
    return (job.status, job.generation, job.due_ms, job.last_error, job.last_status_code)


def _wait(world: World, predicate: Callable[[list[receivers.Delivery]], bool], timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate(world.receiver.deliveries):
            return True
        world.sleep(0.1)
    return predicate(world.receiver.deliveries)


def _wait_for_jobs(world: World, job_ids: list[str], holds: Callable[[Job], bool], timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if all(holds(world.judge.jobs.get(TENANT, job_id)) for job_id in job_ids):
            return True
        world.sleep(0.2)
    return False
