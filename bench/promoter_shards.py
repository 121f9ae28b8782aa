"""Promoter over many shards: promote calls and lateness when a tick visits only shards that may be due,
against one that visits every shard every tick (the loop before shard selection).

One private redis-server; jobs due every --gap-ms on random shards, each indexed --lead-ms before its due
time by a submitter thread (index.lua pushes a wake token when a job becomes its shard's earliest), the
promoter's loop running with a waiter thread per shard. Lateness = when the job entered the ready stream
(its in-flight score) - its due time.

Run: .venv/bin/python bench/promoter_shards.py [--shards 256] [--jobs 400] [--gap-ms 5] [--lead-ms 300]
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.index import RedisIndex
from hookline.domain.clock import SystemClock
from hookline.domain.delivery import PromoteResult
from hookline.domain.models import Member
from hookline.ports import NullMetrics
from hookline.usecases.promote import DueShards, Promoter
from tests.support.redis_server import running_redis

CLOCK = SystemClock()


class CountingIndex(RedisIndex):
    """The Redis index, counting promote calls."""

    calls = 0

    def promote(self, shard: int, now_ms: int, batch: int = 500) -> PromoteResult:
        """Counts, then promotes."""
        CountingIndex.calls += 1
        return super().promote(shard, now_ms, batch)


class EveryShard(DueShards):
    """Visits every shard at every tick (the loop before shard selection)."""

    def to_visit(self, now_ms: int, woken: Any) -> list[int] | None:
        """Always all of them."""
        return None


def measure(url: str, every_shard: bool, args: argparse.Namespace) -> str:
    client = redis.Redis.from_url(url, max_connections=2 * args.shards + 16)
    client.flushall()
    CountingIndex.calls = 0
    promoter = Promoter(
        CountingIndex(client, consumer="promoter"), CLOCK, list(range(args.shards)), NullMetrics()
    )
    if every_shard:
        # The loop as it was: no selection (a bench may reach in; the engine offers no such switch).
        promoter._due_shards = EveryShard(list(range(args.shards)), 1_000)
    submitter = RedisIndex(client, consumer="submitter")
    start = CLOCK.now_ms() + 1_000
    rng = random.Random(1)
    jobs = [
        (Member("t", f"j{n}", 1), rng.randrange(args.shards), start + n * args.gap_ms)
        for n in range(args.jobs)
    ]

    def submit() -> None:
        for member, shard, due_ms in jobs:
            while CLOCK.now_ms() < due_ms - args.lead_ms:
                time.sleep(0.001)
            submitter.index(member, shard, due_ms, CLOCK.now_ms())

    thread = threading.Thread(target=submit)
    thread.start()
    promoter.run(start + args.jobs * args.gap_ms + 1_000)
    thread.join()
    late = sorted(
        float(client.zscore(redis_keys.inflight_key(shard), member.encode()) or float("inf")) - due_ms
        for member, shard, due_ms in jobs
    )
    client.close()
    name = "every shard each tick" if every_shard else "shards that may be due"
    return (
        f"{name}: {CountingIndex.calls} promote calls; lateness ms p50 {late[len(late) // 2]:.0f}, "
        f"p99 {late[int(len(late) * 0.99)]:.0f}, max {late[-1]:.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=256)
    parser.add_argument("--jobs", type=int, default=400)
    parser.add_argument("--gap-ms", type=int, default=5)
    parser.add_argument("--lead-ms", type=int, default=300)
    args = parser.parse_args()
    with running_redis() as url:
        for every_shard in (False, True):
            print(measure(url, every_shard, args), flush=True)


if __name__ == "__main__":
    main()
