"""Measures the submit rate of `hookline dev` with many jobs scheduled ahead (issue: ~50/s fell to ~5/s).

It starts the stack (bench/local_stack.py's start_stack), measures single submits (--probe jobs due in an
hour, --clients threads), schedules --ahead jobs an hour ahead through POST /v1/jobs/batch (100 per call),
and measures single submits again. A rate that falls with the table's size means some request does work
proportional to the jobs stored (a scan, a transaction that copies the table), not to the request.

Usage: .venv/bin/python bench/scheduled_ahead.py [--stack deployed|hand-wired] [--ahead 15000] [--probe 200]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from local_stack import Stack, start_stack, stop_stack  # this script runs from bench/

SINK = "http://127.0.0.1:9/ahead"  # never called: every job is due in an hour


def _due_in_an_hour() -> str:
    return (datetime.now(UTC) + timedelta(hours=1)).isoformat()


def submit_rate(stack: Stack, count: int, clients: int) -> float:
    """Submits `count` single jobs from `clients` threads; returns jobs/s."""
    headers = {"Authorization": f"Bearer {stack.api_key}"}
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=60) as client:

        def submit(_: int) -> None:
            client.post("/v1/jobs", json={"url": SINK, "run_at": _due_in_an_hour()}).raise_for_status()

        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=clients) as pool:
            list(pool.map(submit, range(count)))
        return count / (time.monotonic() - started)


def schedule_ahead(stack: Stack, count: int) -> float:
    """Schedules `count` jobs an hour ahead in batches of 100, one batch at a time; returns jobs/s.

    One at a time: on the deployed stack a second concurrent batch starts a second API worker, whose cold
    start on a loaded machine can outlast API Gateway's 29 s (a 502), which is not what this measures.
    """
    headers = {"Authorization": f"Bearer {stack.api_key}"}
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=120) as client:

        def batch(_: int) -> None:
            jobs = [{"url": SINK, "run_at": _due_in_an_hour()} for _ in range(100)]
            client.post("/v1/jobs/batch", json={"jobs": jobs}).raise_for_status()

        started = time.monotonic()
        for n in range(count // 100):
            batch(n)
        return count / (time.monotonic() - started)


def main(argv: list[str] | None = None) -> int:
    """Starts the stack, measures, schedules ahead, measures again, stops the stack."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stack", choices=["deployed", "hand-wired"], default="deployed")
    parser.add_argument("--ahead", type=int, default=15000)
    parser.add_argument("--probe", type=int, default=200)
    parser.add_argument("--clients", type=int, default=1)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hookline-bench-") as state:
        stack = start_stack(Path(state), args.stack)
        try:
            before = submit_rate(stack, args.probe, args.clients)
            print(
                f"submit rate, {args.probe} jobs stored:      {before:6.1f} jobs/s ({args.clients} clients)"
            )
            ahead = schedule_ahead(stack, args.ahead)
            print(f"scheduled {args.ahead} ahead through /v1/jobs/batch at {ahead:6.1f} jobs/s")
            after = submit_rate(stack, args.probe, args.clients)
            stored = args.ahead + 2 * args.probe
            print(
                f"submit rate, {stored} jobs stored:   {after:6.1f} jobs/s ({after / before:.0%} of before)"
            )
        finally:
            stop_stack(stack)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
