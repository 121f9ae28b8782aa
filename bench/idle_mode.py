"""Idle mode: what a quiet deployment's functions run, and how late the first job after a quiet period fires.

Runs against a private redis-server and moto's server, with Lambda played by threads (each invocation its
own Container: tests/support/thread_lambda.py), the production idle settings (a 75 s horizon, a 2 s grace,
executors ending after 10 s without work):

1. idle tick: a promote and a reap invocation on a deployment with nothing due, as the schedules start
   them every minute; their wall time is what Lambda bills (no schedule starts an executor any more).
2. first job after a quiet period: once every invocation has ended, one job is submitted due in
   --delay-s (0: due at once); the submit wakes a promoter, which starts an executor. Lateness =
   arrival at the receiver - due time. --cold-start-ms delays every invocation's start by that much, to
   stand for a Lambda cold start (the local run has none: an invocation here starts in a thread at once).

Then the idle GB-s per minute before and after, from the template's memory sizes and the measured durations.

Run: .venv/bin/python bench/idle_mode.py [--runs 5] [--delay-s 0 2] [--cold-start-ms 0]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hookline.domain.models import JobRequest
from hookline.plumbing.settings import Settings
from tests.support.aws import make_tables, running_moto, use_fake_credentials
from tests.support.receiver import Receiver
from tests.support.redis_server import running_redis
from tests.support.thread_lambda import ThreadLambda

TENANT = "bench"
# The template's memory sizes (GB) and the invocation windows of an idle minute before idle mode:
# promote runs to its 90 s timeout less the 3 s margin every minute, execute reads for 90 s (420 s less the
# 330 s it keeps for a callback) every minute, the reaper watches for 64 s of its 75 s every minute.
PROMOTE_GB, EXECUTE_GB, REAP_GB = 0.25, 1.0, 0.25
BEFORE_PROMOTE_S, BEFORE_EXECUTE_S, REAP_S = 90.0, 90.0, 64.0


def wait(predicate: object, timeout_s: float) -> None:
    assert callable(predicate)
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.01)
    raise RuntimeError(f"not settled within {timeout_s} s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--delay-s", type=float, nargs="+", default=[0.0, 2.0])
    parser.add_argument("--cold-start-ms", type=int, default=0)
    args = parser.parse_args()
    use_fake_credentials()
    with running_redis() as redis_url, running_moto() as aws, Receiver() as receiver:
        suffix = uuid.uuid4().hex[:8]
        settings = Settings.from_env(
            {
                "HOOKLINE_REDIS_URL": redis_url,
                "HOOKLINE_AWS_ENDPOINT": aws,
                "HOOKLINE_JOBS_TABLE": f"jobs-{suffix}",
                "HOOKLINE_EXECUTIONS_TABLE": f"executions-{suffix}",
                "HOOKLINE_API_KEYS_TABLE": f"keys-{suffix}",
                "HOOKLINE_ALLOW_LOOPBACK": "true",
                "HOOKLINE_PROMOTE_FUNCTION": "hookline-promote",
                "HOOKLINE_EXECUTE_FUNCTION": "hookline-execute",
                "HOOKLINE_REAP_FUNCTION": "hookline-reap",
            }
        )
        settings = dataclasses.replace(settings, aws_region="us-east-1")
        make_tables(settings)
        lam = ThreadLambda(settings, start_delay_ms=args.cold_start_ms)
        api = lam.container()
        try:
            ticks = []
            for _ in range(args.runs):
                ended = lam.ended["promote"]
                started = time.monotonic()
                lam.invoke("promote")
                wait(lambda ended=ended: lam.ended["promote"] > ended, 30)
                ticks.append(time.monotonic() - started - args.cold_start_ms / 1000)
            tick_s = statistics.median(ticks)
            reaps = []
            for _ in range(args.runs):
                ended = lam.ended["reap"]
                started = time.monotonic()
                lam.invoke("reap")
                wait(lambda ended=ended: lam.ended["reap"] > ended, 60)
                reaps.append(time.monotonic() - started - args.cold_start_ms / 1000)
            reap_s = statistics.median(reaps)
            print(
                f"idle tick: reap invocation {reap_s * 1000:.0f} ms median ({min(reaps) * 1000:.0f}-"
                f"{max(reaps) * 1000:.0f})"
            )
            print(
                f"idle tick: promote invocation {tick_s * 1000:.0f} ms median ({min(ticks) * 1000:.0f}-"
                f"{max(ticks) * 1000:.0f}), executors started {lam.invoked['execute']}"
            )
            for delay_s in args.delay_s:
                late = []
                for _ in range(args.runs):
                    wait(lambda: lam.running("promote") == 0 and lam.running("execute") == 0, 60)
                    seen = len(receiver.requests)
                    request = JobRequest.model_validate({"url": receiver.url("/hook"), "delay_s": delay_s})
                    due_ms = api.submitter.submit(TENANT, request).job.due_ms
                    wait(lambda seen=seen: len(receiver.requests) > seen, 60)
                    late.append(receiver.requests[seen].received_ms - due_ms)
                print(
                    f"first job after quiet, due in {delay_s:g} s: median {statistics.median(late):.0f} ms"
                    f" late ({min(late)}-{max(late)}, {args.runs} runs, cold start {args.cold_start_ms} ms)"
                )
        finally:
            lam.close()
    before = PROMOTE_GB * BEFORE_PROMOTE_S + EXECUTE_GB * BEFORE_EXECUTE_S + REAP_GB * REAP_S
    after = (
        PROMOTE_GB * tick_s + REAP_GB * reap_s
    )  # the tick's wall times, rounded up to 1 ms as Lambda bills
    print(
        f"idle GB-s per minute: before {before:.1f} (promote {PROMOTE_GB * BEFORE_PROMOTE_S:.1f}, execute "
        f"{EXECUTE_GB * BEFORE_EXECUTE_S:.1f}, reap {REAP_GB * REAP_S:.1f}); after {after:.1f} (promote "
        f"{PROMOTE_GB * tick_s:.2f}, execute 0, reap {REAP_GB * reap_s:.2f})"
    )


if __name__ == "__main__":
    main()
