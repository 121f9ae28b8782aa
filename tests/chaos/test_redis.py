"""Redis flushed, restarted empty, and down while jobs are submitted: DynamoDB is the record, so nothing
accepted is lost; promotion resumes within 1 s of Redis answering, and what Redis lost is rebuilt within
the recovery target.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.chaos import receivers
from tests.chaos.judge import check, first_arrival_after, summarize, undelivered_at, worst_lateness_s
from tests.chaos.probes import pending_total
from tests.chaos.receivers import now_ms
from tests.chaos.summary import PROMOTION_TARGET_S, RECOVERY_TARGET_S, Summary, missed
from tests.chaos.world import EXTRA_WAIT_S, SCALE, Options, World, scaled

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(int(180 + EXTRA_WAIT_S + 60 * SCALE))]

MakeWorld = Callable[[Options], World]
Record = Callable[[Summary], None]

OK = receivers.ok(0.02)
DUE_PER_S = 20
FAULT_AFTER_S = 5.0  # the fault strikes this long after the first jobs fall due


def judge_redis_fault(
    world: World, summary: Summary, return_ms: int, lost_index: list[str], indexed: list[str]
) -> None:
    """Fills the Redis figures and their verdicts.

    Args:
        world: The scenario's world.
        summary: The scenario's summary, already counted.
        return_ms: When Redis answered again (for FLUSHALL: when it was flushed).
        lost_index: Jobs whose index Redis lost or never got: they need rebuilding from DynamoDB.
        indexed: Jobs Redis held (or was given) once it answered again: they need promoting only.
    """
    summary.rebuild_s = worst_lateness_s(world, lost_index, return_ms) if lost_index else None
    summary.late_after_redis_s = worst_lateness_s(world, indexed, return_ms) if indexed else None
    # Jobs Redis held that fell due while it was away are a backlog at its return: the target is about
    # promotion and delivery resuming (the first of them delivered), not how fast the executors then drain
    # it (bounded here by the DynamoDB emulation's writes a second, reported as the worst lateness).
    backlog = [job_id for job_id in indexed if world.expected[job_id].due_ms <= return_ms]
    if backlog:
        firsts = [at for at in first_arrival_after(world, backlog, return_ms).values() if at is not None]
        summary.resumed_after_redis_s = (min(firsts) - return_ms) / 1000 if firsts else float("inf")
    summary.extra.update(
        {
            "lost_index": len(lost_index),
            "indexed_after_return": len(indexed),
            "backlog_at_return": len(backlog),
        }
    )
    check(summary)
    if summary.resumed_after_redis_s is not None:
        if summary.resumed_after_redis_s > PROMOTION_TARGET_S:
            summary.failures.append(
                missed(
                    "delivery resumed after Redis answered", summary.resumed_after_redis_s, PROMOTION_TARGET_S
                )
            )
    elif summary.late_after_redis_s is not None and summary.late_after_redis_s > PROMOTION_TARGET_S:
        summary.failures.append(
            missed("jobs Redis held, late after it answered", summary.late_after_redis_s, PROMOTION_TARGET_S)
        )
    if summary.rebuild_s is not None and summary.rebuild_s > RECOVERY_TARGET_S:
        summary.failures.append(
            missed("jobs Redis lost, late after it answered", summary.rebuild_s, RECOVERY_TARGET_S)
        )


def run_loss(make_world: MakeWorld, record: Record, name: str, harm: Callable[[World], int]) -> None:
    """Jobs fall due for 15 s; after 5 s `harm` makes Redis lose everything and returns when it answers
    again; more jobs are submitted after that. Judges rebuild and promotion."""
    world = make_world(Options(behaviours=[OK]))
    world.warm_up(OK)
    due = world.schedule(OK, scaled(300), DUE_PER_S)
    world.sleep_until(time.monotonic() + (due[0] - now_ms()) / 1000 + FAULT_AFTER_S)
    in_flight = pending_total(world)
    fault_ms = now_ms()
    return_ms = harm(world)
    lost_index = undelivered_at(world, fault_ms)
    world.schedule(OK, scaled(60), DUE_PER_S, lead_s=1.0, phase="after")
    world.settle(max(world.last_due_ms(), return_ms))
    summary = summarize(world, Summary(name))
    summary.in_flight = in_flight
    fresh = [job_id for job_id, e in world.expected.items() if e.phase == "after"]
    judge_redis_fault(world, summary, return_ms, lost_index, fresh)
    record(summary)
    assert summary.passed, summary.line()


def test_redis_flushall_mid_run(make_world: MakeWorld, record: Record) -> None:
    """FLUSHALL while jobs fall due: every index, the stream and its consumer group are gone at once."""

    def flush(world: World) -> int:
        world.redis.flushall()
        return now_ms()

    run_loss(make_world, record, "redis_flushall", flush)


def test_redis_restarted_empty_mid_run(make_world: MakeWorld, record: Record) -> None:
    """redis-server SIGKILLed and started again empty on the same port while jobs fall due."""

    def restart_empty(world: World) -> int:
        world.redis.kill()
        world.redis.start()
        return now_ms()

    run_loss(make_world, record, "redis_restarted_empty", restart_empty)


def test_redis_down_during_submits(make_world: MakeWorld, record: Record) -> None:
    """Redis stops (saving its data) for 5 s while the API takes submits, then comes back with its data.

    Every 201 must end delivered: a job accepted while Redis was down is only in DynamoDB. Jobs Redis held
    across the outage must be promoted within 1 s of it answering again.
    """
    world = make_world(Options(behaviours=[OK]))
    world.warm_up(OK)
    world.schedule(OK, scaled(200), DUE_PER_S)
    start = time.monotonic()
    down_at, up_at, stop_at = start + 5.0, start + 10.0, start + 15.0
    in_flight, down_ms, return_ms = 0, 0, 0
    interval_s = 1 / max(1.0, 8 * SCALE)
    while (now := time.monotonic()) < stop_at:
        if not down_ms and now >= down_at:
            in_flight = pending_total(world)
            down_ms = now_ms()
            world.redis.shutdown_saving()
        if down_ms and not return_ms and now >= up_at:
            world.redis.start()
            return_ms = now_ms()
        phase = "before" if not down_ms else "after" if return_ms else "down"
        world.submit_one(OK, now_ms() + 1000, phase=phase)
        world.sleep(interval_s)
    world.settle(max(world.last_due_ms(), return_ms))

    summary = summarize(world, Summary("redis_down_during_submits"))
    summary.in_flight = in_flight
    undelivered = set(undelivered_at(world, down_ms))
    phases = {job_id: e.phase for job_id, e in world.expected.items()}
    accepted_down = [job_id for job_id, phase in phases.items() if phase == "down"]
    indexed = [job_id for job_id in undelivered if phases[job_id] in ("", "before", "after")]
    summary.extra["accepted_while_down"] = len(accepted_down)
    summary.extra["down_s"] = round((return_ms - down_ms) / 1000, 1)
    judge_redis_fault(world, summary, return_ms, accepted_down, indexed)
    if not accepted_down:
        summary.failures.append("no submit was accepted while Redis was down")
    record(summary)
    assert summary.passed, summary.line()
