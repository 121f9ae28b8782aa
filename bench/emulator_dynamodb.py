"""Measures the embedded emulator's DynamoDB with many jobs stored: what each of Hookline's requests costs.

The issue: with ~15,000 jobs scheduled ahead the deployed stack's submits slowed from ~50/s to ~5/s. This
script starts ministack alone (as `hookline dev` does, on a free loopback port), creates the tables from
template.yaml, and times Hookline's own adapter calls at --sizes jobs stored (one tenant, spread over the
template's default 8 job buckets: 8 partitions of the table and, with Shards=1, 8 of the live index, each
page reading all 8):

  put       a submit without an idempotency key (PutItem with a condition)
  txn       a submit with one (TransactWriteItems: the job and its marker, both conditional)
  due scan  one page of the reaper's due scan (Query on the live index, live_due_ms <= now + horizon)
  list      one page of GET /v1/jobs (Query on the tenant's partition, newest first, 20 jobs)
  rebuild   with --rebuild, at the largest size only: the reaper's full read of the live index after Redis
            lost its state (every page of 100, each a Query of the whole partition on this emulator)

once on the stock emulator (`python -m ministack`) and once as `hookline dev` runs it
(localstack/hookline_local/ministack_main.py, which parses each condition expression once instead of once
per item a Query reads). It prints µs per request and the ratio to the empty table.

Usage: .venv/bin/python bench/emulator_dynamodb.py [--sizes 0,5000,15000] [--emulators stock,patched]
       [--rebuild]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support

from hookline.adapters.dynamo import codec, tables
from hookline.adapters.dynamo.job_store import DynamoJobStore
from hookline.domain.ids import new_id
from hookline.domain.models import Job
from hookline.usecases.reconcile import DUE_HORIZON_MS, RECONCILE_PAGE
from hookline_local.deploy import aws_client
from hookline_local.emulator import start_emulator
from hookline_local.template import create_tables, find_template, load_template
from tests.support.jobs import scheduled_job
from tests.support.redis_server import free_port

TENANT = "dev"
TABLES = {"JobsTable": "jobs", "ExecutionsTable": "executions", "ApiKeysTable": "api-keys"}
BATCH = 25  # BatchWriteItem's limit
KEYSPACE = tables.Keyspace()  # the template's JobBuckets default


def a_job(now_ms: int, idempotency_key: str | None = None) -> Job:
    """Returns a scheduled job an hour ahead, as a plain submit makes it (shard 0 of Shards=1)."""
    return scheduled_job(
        now_ms,
        tenant=TENANT,
        url="http://127.0.0.1:9/ahead",
        due_ms=now_ms + 3_600_000,
        idempotency_key=idempotency_key,
    )


def fill(dynamodb: Any, count: int) -> None:
    """Stores `count` more jobs with BatchWriteItem (the same items a submit writes)."""
    now_ms = time.time_ns() // 1_000_000
    for start in range(0, count, BATCH):
        puts = [
            {"PutRequest": {"Item": codec.job_to_item(a_job(now_ms), KEYSPACE)}}
            for _ in range(min(BATCH, count - start))
        ]
        request: dict[str, Any] = {TABLES["JobsTable"]: puts}
        while request:
            request = dynamodb.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}


def micros(call: Callable[[], object], repeat: int) -> float:
    """Returns the mean µs of `repeat` calls."""
    started = time.perf_counter()
    for _ in range(repeat):
        call()
    return (time.perf_counter() - started) / repeat * 1e6


def full_read_s(store: DynamoJobStore) -> tuple[float, int]:
    """Reads every page of shard 0's live index as a rebuild does; returns (seconds, pages)."""
    started = time.perf_counter()
    cursor, pages = None, 0
    while True:
        _, cursor = store.live_jobs(0, cursor, RECONCILE_PAGE, None)
        pages += 1
        if cursor is None:
            return time.perf_counter() - started, pages


def measure(stock: bool, sizes: list[int], repeat: int, rebuild: bool) -> dict[int, dict[str, float]]:
    """Starts one emulator, fills it size by size; returns µs per request kind at each size."""
    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="hookline-emulator-bench-") as state:
        port = free_port()
        child = start_emulator(port, Path(state) / "emulator.log", stock=stock)
        try:
            dynamodb = aws_client("dynamodb", f"http://127.0.0.1:{port}", "us-east-1")
            create_tables(dynamodb, load_template(find_template()), TABLES)
            store = DynamoJobStore(
                dynamodb, TABLES["JobsTable"], TABLES["ExecutionsTable"], keyspace=KEYSPACE
            )
            stored = 0
            for size in sorted(sizes):
                fill(dynamodb, size - stored)
                stored = size

                def now() -> int:
                    return time.time_ns() // 1_000_000

                row = {
                    "put": micros(lambda: store.create(a_job(now()), "", now()), repeat),
                    "txn": micros(lambda: store.create(a_job(now(), new_id(now())), "h", now()), repeat),
                    "due scan": micros(
                        lambda: store.live_jobs(0, None, 100, now() + DUE_HORIZON_MS), max(2, repeat // 6)
                    ),
                    "list": micros(lambda: store.list_jobs(TENANT, None, None, 20), max(2, repeat // 6)),
                }
                stored += 2 * repeat  # the put and txn rows stored jobs too
                results[size] = row
                if rebuild and size == max(sizes):
                    seconds, pages = full_read_s(store)
                    print(
                        f"  {'stock' if stock else 'patched':7} {size:6d} jobs: rebuild read {seconds:.1f} s"
                        f" ({pages} pages)"
                    )
                print(
                    f"  {'stock' if stock else 'patched':7} {size:6d} jobs: "
                    + "  ".join(f"{kind} {value:9.0f} µs" for kind, value in row.items()),
                    flush=True,
                )
            dynamodb.close()
        finally:
            child.stop()
    return results


def main(argv: list[str] | None = None) -> int:
    """Measures each emulator and prints µs per request, ratios to the empty table, and the speed-up."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="0,5000,15000")
    parser.add_argument("--emulators", default="stock,patched")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--rebuild", action="store_true", help="also time a full read of the live index")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    emulators = args.emulators.split(",")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    runs = {name: measure(name == "stock", sizes, args.repeat, args.rebuild) for name in emulators}
    smallest, largest = min(sizes), max(sizes)
    print(f"\nµs per request at {largest} jobs stored (x: ratio to {smallest} jobs)")
    for name, results in runs.items():
        cells = [
            f"{kind} {value:8.0f} ({value / results[smallest][kind]:5.1f}x)"
            for kind, value in results[largest].items()
        ]
        print(f"  {name:7} " + "  ".join(cells))
    if {"stock", "patched"} <= set(runs):
        print(f"\nstock / patched at {largest} jobs:")
        print(
            "  "
            + "  ".join(
                f"{kind} {runs['stock'][largest][kind] / value:5.1f}x"
                for kind, value in runs["patched"][largest].items()
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
