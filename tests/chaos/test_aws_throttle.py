"""DynamoDB throttling: every request refused for 20 s, then a 70 % brownout, with cold starts in both.

A throttling proxy (tests.chaos.throttle_proxy) sits between every process and moto and answers a fraction
of the DynamoDB requests with ProvisionedThroughputExceededException, as DynamoDB does over a table's
throughput. While it throttles, jobs cannot be claimed or finished and submits may not be acknowledged.
Every handler process is killed early in the fault, so each starts again cold while DynamoDB throttles:
a cold start must not die of it (a restart beyond the kill would be one). When the throttling ends,
nothing accepted is lost, duplicated beyond what was in flight, early or stuck, and the jobs due meanwhile
are delivered within the recovery target. No invocation may outlive its context (the runner's watchdog
would report a timeout).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.chaos import receivers
from tests.chaos.judge import check, summarize, undelivered_at, worst_lateness_s
from tests.chaos.probes import pending_total
from tests.chaos.receivers import now_ms
from tests.chaos.summary import RECOVERY_TARGET_S, Summary, missed
from tests.chaos.world import EXTRA_WAIT_S, SCALE, Options, World, scaled

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(int(200 + EXTRA_WAIT_S + 60 * SCALE))]

MakeWorld = Callable[[Options], World]
Record = Callable[[Summary], None]

OK = receivers.ok(0.02)
DUE_PER_S = 10
BEFORE_S = 2.0  # normal running before the fault
KILL_AFTER_S = 1.0  # into the fault, every handler process is killed: its next start is cold
AFTER_S = 2.0  # submits go on this long after the fault
REAP_RATE_S = 5.0  # the reaper restarts (cold) within the fault too


def throttled_run(world: World, fraction: float, fault_s: float, summary: Summary) -> None:
    """Runs the scenario: load, throttle `fraction` of DynamoDB requests for fault_s with every handler
    process killed early in it, then judge."""
    assert world.throttler is not None
    world.warm_up(OK)
    world.schedule(OK, scaled(int(DUE_PER_S * (BEFORE_S + fault_s + AFTER_S))), DUE_PER_S, lead_s=1.0)
    start = time.monotonic()
    fault_at, end_at = start + BEFORE_S, start + BEFORE_S + fault_s
    in_flight, fault_ms, end_ms, killed = 0, 0, 0, 0
    while (now := time.monotonic()) < end_at + AFTER_S:
        if not fault_ms and now >= fault_at:
            in_flight = pending_total(world)
            fault_ms = now_ms()
            world.throttler.throttle(fraction)
        if fault_ms and not killed and now >= fault_at + KILL_AFTER_S:
            # What the executors hold when killed is in flight too: re-delivered once their leases end.
            in_flight += pending_total(world)
            for slot in world.fleet.slots.values():
                world.fleet.kill(slot)
                killed += 1
        if fault_ms and not end_ms and now >= end_at:
            counts = world.throttler.throttle(0.0)
            end_ms = now_ms()
            summary.extra["throttled_requests"] = int(counts["throttled"])
        phase = "before" if not fault_ms else "after" if end_ms else "fault"
        # A throttled submit waits out the client's retries, then answers 503: the loop just goes on.
        world.submit_one(OK, now_ms() + 1000, phase=phase)
        world.sleep(0.5)
    if not end_ms:  # the last submit outlasted the fault's end
        summary.extra["throttled_requests"] = int(world.throttler.throttle(0.0)["throttled"])
        end_ms = now_ms()
    world.settle(max(world.last_due_ms(), end_ms))

    summarize(world, summary)
    summary.in_flight = in_flight  # at the fault's start and at the kill (an upper bound: may overlap)
    waiting = undelivered_at(world, fault_ms)
    summary.aws_recovery_s = worst_lateness_s(world, waiting, end_ms) if waiting else None
    summary.extra["fault_s"] = round((end_ms - fault_ms) / 1000, 1)
    summary.extra["accepted_during_fault"] = sum(e.phase == "fault" for e in world.expected.values())
    check(summary)
    if summary.aws_recovery_s is not None and summary.aws_recovery_s > RECOVERY_TARGET_S:
        summary.failures.append(
            missed(
                "jobs due during the throttling, late after it ended",
                summary.aws_recovery_s,
                RECOVERY_TARGET_S,
            )
        )
    _check_processes(world, summary)


def _check_processes(world: World, summary: Summary) -> None:
    """Fails the summary if a process restarted more than the one kill asks (a cold start died) or an
    invocation outlived its context (the runner's watchdog ended its process)."""
    died = {slot.name: slot.restarts - 1 for slot in world.fleet.slots.values() if slot.restarts > 1}
    if died:
        summary.failures.append(f"cold starts died under throttling: {died}")
    # Every process of a slot appends to the slot's log.
    timed_out = [s.name for s in world.fleet.slots.values() if '"event": "timeout"' in _log_of(world, s.name)]
    if timed_out:
        summary.failures.append(f"invocations outlived their context: {timed_out}")


def _log_of(world: World, name: str) -> str:
    try:
        return (world.log_dir / f"{name}.log").read_text(errors="replace")
    except OSError:
        return ""


def test_dynamodb_throttling_every_request_for_20_s(make_world: MakeWorld, record: Record) -> None:
    """Every DynamoDB request is throttled for 20 s; every handler process restarts cold inside it."""
    world = make_world(Options(aws_throttle=True, reap_rate_s=REAP_RATE_S, behaviours=[OK]))
    summary = Summary("dynamodb_throttled_20s")

    throttled_run(world, 1.0, 20.0, summary)

    record(summary)
    assert summary.passed, summary.line()


def test_dynamodb_brownout_throttling_70_percent(make_world: MakeWorld, record: Record) -> None:
    """70 % of DynamoDB requests are throttled for 10 s; every handler process restarts cold inside it."""
    world = make_world(Options(aws_throttle=True, reap_rate_s=REAP_RATE_S, behaviours=[OK]))
    summary = Summary("dynamodb_brownout_70pct")

    throttled_run(world, 0.7, 10.0, summary)

    record(summary)
    assert summary.passed, summary.line()
