"""The AWS endpoint unreachable for 15 s: every connection reset, every new one refused, then back.

DynamoDB is the record, so while it is gone nothing can be claimed or finished and submits must not be
acknowledged; when it returns, nothing accepted is lost and the jobs due meanwhile are delivered within
the recovery target.
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
CUT_S = 15.0


def test_aws_endpoint_unreachable_for_15_s(make_world: MakeWorld, record: Record) -> None:
    """A proxy between every process and moto is cut for 15 s while jobs fall due and submits arrive."""
    world = make_world(Options(aws_proxy=True, behaviours=[OK]))
    assert world.proxy is not None
    world.warm_up(OK)
    world.schedule(OK, scaled(250), DUE_PER_S)
    start = time.monotonic()
    cut_at, restore_at, stop_at = start + 5.0, start + 5.0 + CUT_S, start + 10.0 + CUT_S
    in_flight, cut_ms, restore_ms = 0, 0, 0
    interval_s = 1 / max(1.0, 4 * SCALE)
    while (now := time.monotonic()) < stop_at:
        if not cut_ms and now >= cut_at:
            in_flight = pending_total(world)
            cut_ms = now_ms()
            world.proxy.cut()
        if cut_ms and not restore_ms and now >= restore_at:
            world.proxy.restore()
            restore_ms = now_ms()
        phase = "before" if not cut_ms else "after" if restore_ms else "cut"
        # A submit during the cut takes as long as the AWS client's retries: the loop just goes on.
        world.submit_one(OK, now_ms() + 1000, phase=phase)
        world.sleep(interval_s)
    if not restore_ms:
        world.proxy.restore()
        restore_ms = now_ms()
    world.settle(max(world.last_due_ms(), restore_ms))

    summary = summarize(world, Summary("aws_unreachable_15s"))
    summary.in_flight = in_flight
    waiting = undelivered_at(world, cut_ms)
    summary.aws_recovery_s = worst_lateness_s(world, waiting, restore_ms) if waiting else None
    summary.extra["cut_s"] = round((restore_ms - cut_ms) / 1000, 1)
    summary.extra["accepted_during_cut"] = sum(e.phase == "cut" for e in world.expected.values())
    check(summary)
    if summary.aws_recovery_s is not None and summary.aws_recovery_s > RECOVERY_TARGET_S:
        summary.failures.append(
            missed("jobs due during the cut, late after it ended", summary.aws_recovery_s, RECOVERY_TARGET_S)
        )
    record(summary)
    assert summary.passed, summary.line()
