"""Redis at its maxmemory for 4 s (noeviction: every write refused with OOM) while jobs fall due and submits
arrive, then memory frees. Reads go on, so nothing is lost from Redis: the loops must wait the refusals
out as a blip (not end their invocations), the API must accept jobs (DynamoDB is the record; the reaper
indexes them once Redis takes writes), /healthz must say why, and delivery must resume at once after.

The fault is timed around the promoter's schedule (the runner invokes it every tick): memory frees just
after an invocation started while Redis was full, the worst case for a promoter that gives up on OOM (the
next invocation is a tick away); for one that waits it out, the timing makes no difference.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.chaos import receivers
from tests.chaos.fleet import PROMOTE
from tests.chaos.judge import check, first_arrival_after, summarize, undelivered_at, worst_lateness_s
from tests.chaos.probes import pending_total
from tests.chaos.receivers import now_ms
from tests.chaos.summary import PROMOTION_TARGET_S, Summary, missed
from tests.chaos.world import EXTRA_WAIT_S, SCALE, Options, World, scaled

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(int(120 + EXTRA_WAIT_S + 60 * SCALE))]

MakeWorld = Callable[[Options], World]
Record = Callable[[Summary], None]

OK = receivers.ok(0.02)
DUE_PER_S = 10
FULL_AFTER_S = 1.0  # Redis fills at least this long after the first jobs fall due
FULL_S = 4.0
FREED_AFTER_TICK_S = 0.3  # memory frees this long after a promoter invocation started (while full)
# Every job due while Redis was full (and every job accepted meanwhile) is delivered within this of memory
# freeing: the promoter retries within 0.5 s, the reaper indexes what the API accepted within about a
# second, and the executors drain a backlog of FULL_S * DUE_PER_S jobs.
MEMORY_RECOVERY_TARGET_S = 5.0


def fill(world: World) -> None:
    """Gives Redis a maxmemory far below what it holds, with noeviction: every write is refused (OOM)."""
    client = world.redis.client()
    try:
        client.config_set("maxmemory-policy", "noeviction")
        client.config_set("maxmemory", 1)
    finally:
        client.close()


def free(world: World) -> None:
    """Lifts the limit, as giving the node more memory would."""
    client = world.redis.client()
    try:
        client.config_set("maxmemory", 0)
    finally:
        client.close()


def promote_invocations_ms(world: World) -> list[int]:
    """Returns when the promoter's invocations started (wall ms), from its runner's log."""
    slot = world.fleet.slots["promote"]
    assert slot.child is not None
    started = []
    for line in slot.child.log_path.read_text(errors="replace").splitlines():
        if line.startswith("chaos-runner "):
            # The runner's line is one write, but another thread's output without a newline of its own
            # may follow it on the same line of the shared log: read the JSON object and no further.
            event, _ = json.JSONDecoder().raw_decode(line.removeprefix("chaos-runner "))
            if event["event"] == "invoke" and event.get("function") == PROMOTE:
                started.append(int(event["t_ms"]))
    return started


def fault_window_ms(world: World, earliest_ms: int) -> tuple[int, int]:
    """Returns (fill, free) wall times: FULL_S apart, from earliest_ms on, freeing FREED_AFTER_TICK_S after
    the start of a promoter invocation (predicted from the last one and the slot's rate)."""
    rate_ms = int(world.fleet.slots["promote"].rate_s * 1000)
    tick_ms = max(promote_invocations_ms(world))
    free_ms = tick_ms + int(FREED_AFTER_TICK_S * 1000)
    while free_ms - int(FULL_S * 1000) < earliest_ms:
        free_ms += rate_ms
    return free_ms - int(FULL_S * 1000), free_ms


def redis_health(world: World) -> str:
    """Returns what GET /healthz says of Redis (its HTTP status when it does not answer 200)."""
    response = world.api.get("/healthz")
    return str(response.json()["checks"]["redis"]) if response.status == 200 else str(response.status)


def test_redis_at_maxmemory(make_world: MakeWorld, record: Record) -> None:
    """Every write refused for 4 s while 10 jobs a second fall due and the API takes submits."""
    world = make_world(Options(behaviours=[OK]))
    world.warm_up(OK)
    due = world.schedule(OK, scaled(80), DUE_PER_S)
    fill_at_ms, free_at_ms = fault_window_ms(world, due[0] + int(FULL_AFTER_S * 1000))
    world.sleep((fill_at_ms - now_ms()) / 1000)
    in_flight = pending_total(world)
    full_ms = now_ms()
    fill(world)
    health_full = redis_health(world)
    while now_ms() < free_at_ms:
        world.submit_one(OK, now_ms() + 1000, phase="full")
        world.sleep(min(0.5, max(0, free_at_ms - now_ms()) / 1000))
    free(world)
    freed_ms = now_ms()
    health_freed = redis_health(world)
    world.settle(max(world.last_due_ms(), freed_ms))

    summary = summarize(world, Summary("redis_at_maxmemory"))
    summary.in_flight = in_flight
    accepted_full = [job_id for job_id, e in world.expected.items() if e.phase == "full"]
    waiting = [job_id for job_id in undelivered_at(world, full_ms) if job_id not in accepted_full]
    summary.late_after_redis_s = worst_lateness_s(world, waiting, freed_ms) if waiting else None
    # (Not rebuild_s: the summary words that one against the 15 s recovery target, this one has its own.)
    accepted_late_s = worst_lateness_s(world, accepted_full, freed_ms) if accepted_full else None
    # Jobs Redis held that fell due while it was full: in the due ZSET, promotable only once memory freed.
    backlog = [job_id for job_id in waiting if full_ms < world.expected[job_id].due_ms <= freed_ms]
    firsts = [at for at in first_arrival_after(world, backlog, freed_ms).values() if at is not None]
    summary.resumed_after_redis_s = (min(firsts) - freed_ms) / 1000 if firsts else float("inf")
    summary.extra.update(
        {
            "full_s": round((freed_ms - full_ms) / 1000, 1),
            "promoter_started_while_full": sum(
                full_ms < t <= freed_ms for t in promote_invocations_ms(world)
            ),
            "backlog_at_free": len(backlog),
            "accepted_while_full": len(accepted_full),
            "accepted_while_full_late_after_free_s": accepted_late_s,
            "health_full_freed": [health_full, health_freed],
        }
    )
    check(summary)
    if not backlog:
        summary.failures.append("no job fell due while Redis was full")
    if not accepted_full:
        summary.failures.append("no submit was accepted while Redis was full")
    if summary.resumed_after_redis_s > PROMOTION_TARGET_S:
        summary.failures.append(
            missed("delivery resumed after memory freed", summary.resumed_after_redis_s, PROMOTION_TARGET_S)
        )
    for label, late in (
        ("jobs Redis held, late after memory freed", summary.late_after_redis_s),
        ("jobs accepted while full, late after memory freed", accepted_late_s),
    ):
        if late is not None and late > MEMORY_RECOVERY_TARGET_S:
            summary.failures.append(missed(label, late, MEMORY_RECOVERY_TARGET_S))
    if [health_full, health_freed] != ["out_of_memory", "ok"]:
        summary.failures.append(f"/healthz said redis {health_full} while full, {health_freed} once freed")
    record(summary)
    assert summary.passed, summary.line()
