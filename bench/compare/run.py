"""Runs every system through every scenario in one run, on one redis-server and one receiver.

Usage (what `make bench` runs, in .venv-bench where the peers are installed at pinned versions):

    .venv-bench/bin/python -m bench.compare.run [--systems celery,rq,arq,dramatiq,...] [--out bench/results]

BENCH_SCALE (default 1.0) multiplies every job count; 0.2 gives a quick run. Prints a table, and writes
bench/results/compare.json and bench/results/fire_lag.png (the fire-lag distributions).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import redis
from tqdm import tqdm

from bench.compare import receiver as receiver_process
from bench.compare import scenarios
from bench.compare.systems import CommandWorkers, System
from hookline_local.services import start_moto
from tests.support.redis_server import free_port, running_redis

PEERS = ("celery", "rq", "arq", "dramatiq")
SYSTEMS = ("hookline-moto", *PEERS)


def _scale(count: int) -> int:
    return max(10, int(count * float(os.environ.get("BENCH_SCALE", "1.0"))))


def _peer_factory(name: str, redis_url: str, receiver_url: str, log_dir: str) -> Callable[[], System]:
    def make() -> System:
        env = {
            **os.environ,
            "BENCH_REDIS_URL": redis_url,
            "BENCH_RECEIVER": receiver_url,
            "PYTHONPATH": os.getcwd(),
        }
        os.environ.update({"BENCH_REDIS_URL": redis_url, "BENCH_RECEIVER": receiver_url})
        module = importlib.import_module(f"bench.compare.peers.{name}_peer")
        return CommandWorkers(module.Peer(redis_url), env, log_dir)

    return make


def _hookline_factory(
    redis_url: str, receiver_url: str, aws_endpoint: str, log_dir: str
) -> Callable[[], System]:
    def make() -> System:
        from bench.compare.hookline_system import HooklineMoto

        return HooklineMoto(redis_url, receiver_url, aws_endpoint, log_dir)

    return make


def run_system(make: Callable[[], System], client: redis.Redis, receiver_url: str) -> scenarios.Figures:
    """Runs every scenario on one system; a failed scenario is noted, not fatal."""
    system = make()
    figures = scenarios.Figures(system.name)
    steps: list[tuple[str, Callable[[], None]]] = [
        ("memory", lambda: scenarios.memory(system, client, _scale(2_000), figures)),
        (
            "lag 1000/1s",
            lambda: scenarios.lag(system, client, receiver_url, _scale(1_000), "lag1000", figures),
        ),
        ("lag 100/1s", lambda: scenarios.lag(system, client, receiver_url, _scale(100), "lag100", figures)),
    ]
    for label, count, fn in (
        ("dispatch", _scale(5_000), scenarios.dispatch),
        ("drain", _scale(5_000), scenarios.drain),
    ):
        steps.append(
            (label, _with_bar(fn, system, client, receiver_url, count, figures, f"{system.name} {label}"))
        )
    try:
        for label, step in steps:
            client.flushall()
            try:
                step()
            except Exception as error:  # a peer that breaks must not hide the others' figures
                figures.notes.append(f"{label} failed: {error!r}")
    finally:
        system.close()
    return figures


def _with_bar(fn, system, client, receiver_url, count, figures, label):  # type: ignore[no-untyped-def]
    def step() -> None:
        with tqdm(total=count, desc=label, unit="job", leave=False, disable=None) as bar:

            def tick(done: int) -> None:
                bar.update(done - bar.n)

            fn(system, client, receiver_url, count, figures, tick)

    return step


COLUMNS = (
    ("dispatch_per_s", "dispatch/s", "{:.0f}"),
    ("drain_per_s", "drain/s", "{:.0f}"),
    ("lag1000_p99_ms", "lag p99 1000/s ms", "{:.1f}"),
    ("lag100_p99_ms", "lag p99 100/s ms", "{:.1f}"),
    ("worker_cpu_ms_per_job", "worker CPU ms/job", "{:.2f}"),
    ("redis_commands_per_job", "Redis cmds/job", "{:.1f}"),
    ("redis_bytes_per_scheduled_job", "Redis B/scheduled job", "{:.0f}"),
)


def table(results: list[scenarios.Figures]) -> str:
    """Formats the headline figures, one row per system, with dispatch as a ratio to the best peer."""
    peers = [r.values.get("dispatch_per_s", 0.0) for r in results if r.system in PEERS]
    best = max(peers, default=0.0)
    header = ["system", *(title for _, title, _ in COLUMNS), "dispatch vs best peer"]
    rows = [header]
    for result in results:
        cells = [result.system]
        for key, _, fmt in COLUMNS:
            value = result.values.get(key)
            cells.append("-" if value is None else fmt.format(value))
        ratio = result.values.get("dispatch_per_s", 0.0) / best if best else 0.0
        cells.append(f"{ratio:.2f}x")
        rows.append(cells)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)) for row in rows
    )


def plot(results: list[scenarios.Figures], path: Path) -> None:
    """Draws the fire-lag distributions (one panel per lag scenario) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = ("lag1000", "lag100")
    fig, axes = plt.subplots(1, len(labels), figsize=(12, 4.5))
    for axis, label in zip(axes, labels, strict=True):
        data = [(r.system, sorted(r.lags_ms.get(label, []))) for r in results if r.lags_ms.get(label)]
        for system, lags in data:
            axis.plot(lags, [(i + 1) / len(lags) for i in range(len(lags))], label=system)
        axis.set_xscale("symlog", linthresh=1)
        axis.set_xlabel("arrival - due (ms)")
        axis.set_ylabel("fraction of jobs")
        axis.set_title({"lag1000": "1,000 jobs due over 1 s", "lag100": "100 jobs due over 1 s"}[label])
        axis.grid(True, alpha=0.3)
        axis.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    """Runs the comparison; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    receiver, receiver_url = receiver_process.start()
    results: list[scenarios.Figures] = []
    try:
        with running_redis() as redis_url, tempfile.TemporaryDirectory(prefix="bench-logs-") as logs:
            # The local stack's moto server (serial keep-alive HTTP, transactions that copy only what they
            # touch): stock moto deep-copies whole tables per transaction and breaks under concurrency.
            moto_port = free_port()
            moto = start_moto(moto_port, Path(logs) / "moto.log")
            aws_endpoint = f"http://127.0.0.1:{moto_port}"
            client = redis.Redis.from_url(redis_url)
            for name in args.systems.split(","):
                started = time.monotonic()
                if name == "hookline-moto":
                    make = _hookline_factory(redis_url, receiver_url, aws_endpoint, logs)
                else:
                    make = _peer_factory(name, redis_url, receiver_url, logs)
                figures = run_system(make, client, receiver_url)
                results.append(figures)
                print(f"{name}: done in {time.monotonic() - started:.0f} s {'; '.join(figures.notes)}")
            moto.stop()
    finally:
        receiver.terminate()
    print()
    print(table(results))
    (out / "compare.json").write_text(
        json.dumps(
            {
                "scale": os.environ.get("BENCH_SCALE", "1.0"),
                "results": [{"system": r.system, "values": r.values, "notes": r.notes} for r in results],
            },
            indent=2,
        )
    )
    plot(results, out / "fire_lag.png")
    print(f"\nwrote {out / 'compare.json'} and {out / 'fire_lag.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
