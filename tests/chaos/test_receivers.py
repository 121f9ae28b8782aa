"""Hostile receivers: each job ends as its receiver dictates, never early, once, with bounded executor memory.

No process is harmed here; the harm comes from the other end of the callback. Every scenario mixes its
hostile jobs with well-behaved ones (`control`), whose worst lateness shows whether the hostile ones
stalled the executors.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.chaos import receivers
from tests.chaos.judge import check, summarize, worst_lateness_s
from tests.chaos.receivers import Behaviour, now_ms
from tests.chaos.summary import Summary
from tests.chaos.world import EXTRA_WAIT_S, SCALE, Options, World, scaled

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(int(150 + EXTRA_WAIT_S + 60 * SCALE))]

MakeWorld = Callable[[Options], World]
Record = Callable[[Summary], None]

# Short policies, so that a hostile job runs its course in seconds: 3 attempts, 0.2-0.4 s apart. The maximum
# backoff caps a receiver's Retry-After too: at 5 s it lets the 429 receivers' 2 s through (up to 3 s as an
# HTTP-date, whose whole seconds are rounded up).
RETRIES = {"max_attempts": 3, "min_backoff_s": 0.2, "max_backoff_s": 5, "timeout_s": 2}
# How long the hostile jobs take on their own: three attempts of up to 2 s each and two backoffs, or two
# Retry-After waits of 2 s; the world adds the recovery target and slack before calling a job stuck.
NATURAL_S = 8.0
SPREAD_MS = 2000  # due times of each behaviour's jobs spread over this
CONTROL = receivers.ok()
# The executor reads a 1 KiB preview of a body; one that buffered a 100 MB body would grow by ~100 MB.
RSS_GROWTH_LIMIT_MB = 32


def run(
    make_world: MakeWorld, name: str, hostile: list[Behaviour], count: int, measure: bool = False
) -> tuple[World, Summary]:
    """Submits `count` jobs of each hostile behaviour and as many control jobs, waits, and judges them."""
    world = make_world(Options(behaviours=[*hostile, CONTROL]))
    world.warm_up(CONTROL)
    baseline_kb = {slot.name: world.fleet.memory_kb(slot)[0] for slot in world.fleet.executors()}
    start_ms = now_ms() + 1000
    due = [start_ms + i * SPREAD_MS // count for i in range(count)]
    for behaviour in hostile:
        world.submit_batch(behaviour, due, phase=behaviour.name, **RETRIES)
    world.submit_batch(CONTROL, due, phase="control")
    world.settle(max(due), NATURAL_S)
    summary = check(summarize(world, Summary(name)))
    control = [job_id for job_id, e in world.expected.items() if e.phase == "control"]
    late = worst_lateness_s(world, control, 0)
    summary.extra["control_worst_lateness_s"] = None if late is None else round(late, 3)
    if measure:
        growth = {
            slot.name: (world.executor_peak_kb.get(slot.child.pid, 0) - baseline_kb[slot.name]) / 1024
            for slot in world.fleet.executors()
            if slot.child is not None
        }
        summary.extra["executor_rss_growth_mb"] = {k: round(v, 1) for k, v in growth.items()}
        summary.extra["stream_bytes_sent_max_mb"] = round(
            max(world.receiver.stream_bytes_sent or [0]) / 2**20, 1
        )
        if max(growth.values()) > RSS_GROWTH_LIMIT_MB:
            summary.failures.append(
                f"executor RSS grew by {max(growth.values()):.0f} MB (limit {RSS_GROWTH_LIMIT_MB})"
            )
    return world, summary


def test_receiver_that_hangs(make_world: MakeWorld, record: Record) -> None:
    """Every attempt times out: three attempts each, then dead; the rest keep being delivered."""
    _, summary = run(make_world, "receiver_hangs", [receivers.hang()], scaled(20))
    record(summary)
    assert summary.passed, summary.line()


def test_receiver_answering_500(make_world: MakeWorld, record: Record) -> None:
    """Every attempt gets a 500: retried up to max_attempts, then dead."""
    _, summary = run(make_world, "receiver_500", [receivers.fail_500()], scaled(20))
    record(summary)
    assert summary.passed, summary.line()


def test_receiver_answering_429_with_retry_after(make_world: MakeWorld, record: Record) -> None:
    """Two 429s with Retry-After (seconds or HTTP-date), then 200: no retry before the receiver allows."""
    hostile = [receivers.throttle_429(2, 2), receivers.throttle_429(2, 2, as_date=True)]
    _, summary = run(make_world, "receiver_429_retry_after", hostile, scaled(10))
    record(summary)
    assert summary.passed, summary.line()


def test_receiver_resetting_the_connection(make_world: MakeWorld, record: Record) -> None:
    """The connection is reset twice after the request was read, then 200: succeeded on the third attempt."""
    _, summary = run(make_world, "receiver_resets", [receivers.reset(2)], scaled(20))
    record(summary)
    assert summary.passed, summary.line()


def test_receiver_streaming_100_mb(make_world: MakeWorld, record: Record) -> None:
    """A 200 with a 100 MB body: succeeded once, and the executors' memory stays bounded (RSS from /proc)."""
    _, summary = run(
        make_world, "receiver_streams_100mb", [receivers.stream_100mb()], scaled(10), measure=True
    )
    record(summary)
    assert summary.passed, summary.line()


def test_receiver_redirecting_elsewhere(make_world: MakeWorld, record: Record) -> None:
    """A 302 is never followed, to another origin or this one: the job is dead (`redirect_refused`)."""
    # The other origin is a live receiver, so a redirect followed there would be seen, not just fail.
    away = receivers.redirect("{elsewhere}/stolen", "redirect_away", "dead")
    same = receivers.redirect("/landing/here", "redirect_same", "dead")
    world, summary = run(make_world, "receiver_redirects", [away, same], scaled(10))
    summary.extra["same_origin_hops"] = len(world.receiver.hops)
    if world.elsewhere.count():
        summary.failures.append(f"{world.elsewhere.count()} requests followed a redirect to another origin")
    if world.receiver.hops:
        summary.failures.append(f"{len(world.receiver.hops)} requests followed a redirect to this origin")
    record(summary)
    assert summary.passed, summary.line()
