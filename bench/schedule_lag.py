"""Schedule lag: how late (never early) delayed jobs reach the ready stream, Hookline's promoter vs a peer.

The peer is a fixed-tick promoter (the same promote.lua, called every 250 ms: the ~250 ms ticks an earlier
design used). Both run in this process against one private redis-server; a consumer thread reads the ready
stream with XREADGROUP BLOCK and records when each job arrives. Lag = arrival - due time.

Run: .venv/bin/python bench/schedule_lag.py [--light-jobs 200] [--heavy-rate 1000] [--heavy-s 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hookline.adapters.redis.index import RedisIndex
from hookline.domain.clock import SystemClock
from hookline.domain.models import Member
from hookline.ports import NullMetrics
from hookline.usecases.promote import Promoter
from tests.support.redis_server import running_redis

PEER_TICK_MS = 250
CLOCK = SystemClock()


def hookline_promoter(index: RedisIndex, deadline_ms: int) -> None:
    """Runs Hookline's promoter loop (sleeps until the next due time, woken by earlier submits)."""
    Promoter(index, CLOCK, [0], NullMetrics(), max_sleep_ms=1000).run(deadline_ms)


def fixed_tick_promoter(index: RedisIndex, deadline_ms: int) -> None:
    """Runs the peer: promote whatever is due, then sleep a fixed tick."""
    while CLOCK.now_ms() < deadline_ms:
        while index.promote(0, CLOCK.now_ms()).moved:
            pass
        time.sleep(PEER_TICK_MS / 1000)


def measure(url: str, due_times_ms: list[int], run: Callable[[RedisIndex, int], None]) -> list[int]:
    """Indexes jobs due at due_times_ms, runs a promoter and returns each job's lag in ms."""
    client = redis.Redis.from_url(url)
    client.flushall()
    index = RedisIndex(client, consumer="bench")
    index.ensure_group(0)
    for i, due_ms in enumerate(due_times_ms):
        # The due time travels in the id, so the consumer can compute each job's lag.
        index.index(Member("bench", f"{i}:{due_ms}", 1), 0, due_ms, CLOCK.now_ms())
    deadline_ms = due_times_ms[-1] + 1500
    arrivals: dict[str, int] = {}

    def consume() -> None:
        reader = RedisIndex(redis.Redis.from_url(url), consumer="reader")
        while CLOCK.now_ms() < deadline_ms and len(arrivals) < len(due_times_ms):
            for entry in reader.read_ready([0], 1000, 100):
                arrivals[entry.member.job_id] = CLOCK.now_ms()
        reader.client.close()

    consumer = threading.Thread(target=consume)
    consumer.start()
    run(RedisIndex(redis.Redis.from_url(url)), deadline_ms)
    consumer.join()
    client.close()
    assert len(arrivals) == len(due_times_ms), f"only {len(arrivals)} of {len(due_times_ms)} arrived"
    return [arrivals[job] - int(job.split(":")[1]) for job in arrivals]


def summary(lags: list[int]) -> str:
    """Formats p50/p99/max lag and the count of early arrivals."""
    ordered = sorted(lags)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    early = sum(1 for lag in lags if lag < 0)
    return (
        f"p50 {statistics.median(ordered):6.1f} ms  p99 {p99:6d} ms  max {ordered[-1]:6d} ms  early {early}"
    )


def p99(lags: list[int]) -> int:
    """Returns the 99th percentile."""
    ordered = sorted(lags)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def main() -> None:
    """Runs both scenarios for both promoters and prints the figures and ratios."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--light-jobs", type=int, default=200)
    parser.add_argument("--light-s", type=float, default=10.0)
    parser.add_argument("--heavy-rate", type=int, default=1000)
    parser.add_argument("--heavy-s", type=float, default=5.0)
    args = parser.parse_args()
    rng = random.Random(7)
    with running_redis() as url:
        start = CLOCK.now_ms() + 2000
        scenarios = {
            "light": sorted(start + int(rng.uniform(0, args.light_s * 1000)) for _ in range(args.light_jobs)),
            f"{args.heavy_rate}/s": [
                start + i * 1000 // args.heavy_rate for i in range(int(args.heavy_rate * args.heavy_s))
            ],
        }
        for name, due in scenarios.items():
            results = {}
            runs = (("hookline", hookline_promoter), (f"fixed {PEER_TICK_MS} ms tick", fixed_tick_promoter))
            for label, run in runs:
                shift = CLOCK.now_ms() + 2000 - due[0]
                results[label] = measure(url, [d + shift for d in due], run)
                print(f"{name:>8} {label:<20} {len(due):6d} jobs  {summary(results[label])}")
            hook, peer = results["hookline"], results[f"fixed {PEER_TICK_MS} ms tick"]
            print(f"{name:>8} p99 ratio peer/hookline: {p99(peer) / max(p99(hook), 1):.1f}x")


if __name__ == "__main__":
    main()
