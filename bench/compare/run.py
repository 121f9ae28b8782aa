"""Runs every system through every scenario in one run, on one redis-server and one receiver.

Usage (what `make bench` runs, in .venv-bench where the peers are installed at pinned versions):

    .venv-bench/bin/python -m bench.compare.run [--systems ceiling,hookline,...] [--out bench/results]
                                                [--rounds 3]

Systems (by default all but the last two): ceiling (raw aiohttp, the machine's limit), hookline (the
headline: the Lambda handler modules as processes, the store in a process of its own), celery, rq, arq,
dramatiq, hookline-engine-alone (the use cases over in-process stores, jobs submitted inside the workers:
the engine's own cost, not comparable), hookline-moto (the use cases over the local stack's moto server),
hookline-local (the whole local stack through its HTTP API, a fifth of the jobs). Every system but the
last three and the ceiling is submitted by the same client (client.py): one call per job from
CLIENT_THREADS threads in the headline scenarios, each system's batch enqueue in the batch scenario.
BENCH_SCALE (default 1.0) multiplies every job count; 0.2 gives a quick run. Prints the tables and
writes compare.json, compare.md and fire_lag.png.

--rounds R runs every system R times, one round after another, each round in a different order (rotated),
and reports each figure's median over the rounds, with the range of the main ones: on a host whose speed
drifts, a disturbance then hits each system in one round at most, instead of whichever system ran while it
lasted.
"""

from __future__ import annotations

import argparse
import importlib
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import redis
from tqdm import tqdm

from bench.compare import receiver as receiver_process
from bench.compare import report, scenarios
from bench.compare.systems import CommandWorkers, System
from hookline_local.services import start_moto
from tests.support.redis_server import free_port, running_redis

PEERS = report.PEERS
SYSTEMS = ("ceiling", "hookline", *PEERS, "hookline-engine-alone")
OTHERS = ("hookline-moto", "hookline-local")  # run when named: not submitted like the others
LATENCY_SINGLES, LATENCY_BATCHES = 200, 20


def scale(count: int, factor: float = 1.0) -> int:
    """Returns count times BENCH_SCALE (and a system's own factor), at least 10."""
    return max(10, int(count * factor * float(os.environ.get("BENCH_SCALE", "1.0"))))


class Context:
    """What every system of a run shares: the Redis, the receiver, moto and a log directory."""

    def __init__(self, redis_url: str, receiver_url: str, logs: Path) -> None:
        self.redis_url, self.receiver_url, self.logs = redis_url, receiver_url, logs
        self._moto = None

    def moto(self) -> tuple[str, Path, int]:
        """Starts the local stack's moto server on first use; returns its endpoint, log and pid."""
        if self._moto is None:
            port = free_port()
            # The local stack's moto server (serial keep-alive HTTP, transactions that copy only what they
            # touch): stock moto deep-copies whole tables per transaction and breaks under concurrency.
            self._moto = (start_moto(port, self.logs / "moto.log"), f"http://127.0.0.1:{port}")
        child, endpoint = self._moto
        return endpoint, self.logs / "moto.log", child.pid

    def close(self) -> None:
        """Stops moto if it was started."""
        if self._moto is not None:
            self._moto[0].stop()

    def make(self, name: str) -> System:
        """Builds the named system."""
        if name == "ceiling":
            from bench.compare.ceiling import Ceiling

            return Ceiling(self.receiver_url)
        if name == "hookline":
            from bench.compare.hookline_lambdas import HooklineLambdas

            return HooklineLambdas(self.redis_url, self.receiver_url, str(self.logs))
        if name == "hookline-engine-alone":
            from bench.compare.hookline_memory import HooklineMemory

            return HooklineMemory(self.redis_url, self.receiver_url)
        if name == "hookline-moto":
            from bench.compare.hookline_system import HooklineMoto

            endpoint, log, pid = self.moto()
            return HooklineMoto(self.redis_url, self.receiver_url, endpoint, str(self.logs), log, pid)
        if name == "hookline-local":
            from bench.compare.hookline_local_system import HooklineLocal

            return HooklineLocal(self.receiver_url)
        env = {
            **os.environ,
            "BENCH_REDIS_URL": self.redis_url,
            "BENCH_RECEIVER": self.receiver_url,
            "PYTHONPATH": os.getcwd(),
        }
        os.environ.update({"BENCH_REDIS_URL": self.redis_url, "BENCH_RECEIVER": self.receiver_url})
        module = importlib.import_module(f"bench.compare.peers.{name}_peer")
        return CommandWorkers(module.Peer(self.redis_url), module, env, str(self.logs))


def _with_bar(fn, system, client, receiver_url, count, figures, label):  # type: ignore[no-untyped-def]
    def step() -> None:
        # disable=None: no bar when stderr is not a terminal (CI, a log file).
        with tqdm(total=count, desc=label, unit="job", leave=False, disable=None) as bar:

            def tick(done: int) -> None:
                bar.update(done - bar.n)

            fn(system, client, receiver_url, count, figures, tick)

    return step


def run_system(system: System, shared: redis.Redis, receiver_url: str) -> scenarios.Figures:
    """Runs every scenario on one system; a failed scenario is noted, not fatal. Closes the system."""
    figures = scenarios.Figures(system.name)
    figures.notes += system.notes
    client = shared if system.redis_url is None else redis.Redis.from_url(system.redis_url)
    r = receiver_url
    # A system may run fewer jobs in the bulk scenarios (the local stack: see its job_scale); the lag
    # scenarios keep their counts, which define them (5,000, 1,000 and 100 jobs due in one second).
    factor = getattr(system, "job_scale", 1.0)
    if factor != 1.0:
        figures.notes.append(f"dispatch, drain, latency and memory run {factor:g} x the jobs of the others")
    singles, batches = scale(LATENCY_SINGLES, factor), scale(LATENCY_BATCHES, factor)
    steps: list[tuple[str, Callable[[], None]]] = [
        (label, _with_bar(fn, system, client, r, count, figures, f"{system.name} {label}"))
        for label, count, fn in (
            ("dispatch", scale(5_000, factor), scenarios.dispatch),
            ("batch dispatch", scale(5_000, factor), scenarios.dispatch_batch),
            ("drain", scale(5_000, factor), scenarios.drain),
        )
    ]
    steps += [
        ("lag 5000/1s", lambda: scenarios.lag(system, client, r, scale(5_000), "lag5000", figures)),
        ("lag 1000/1s", lambda: scenarios.lag(system, client, r, scale(1_000), "lag1000", figures)),
        ("lag 100/1s", lambda: scenarios.lag(system, client, r, scale(100), "lag100", figures)),
        ("latency", lambda: scenarios.latency(system, r, singles, batches, figures)),
    ]
    if system.name != "ceiling":  # it keeps nothing in Redis
        # Last: the local stack keeps these jobs (due in an hour) in its own Redis.
        steps.append(("memory", lambda: scenarios.memory(system, client, scale(2_000, factor), figures)))
    try:
        for label, step in steps:
            scenarios.flush(system, shared)
            try:
                step()
            except Exception as error:  # a system that breaks must not hide the others' figures
                figures.notes.append(f"{label} failed: {error!r}"[:500])
    finally:
        system.close()
        if client is not shared:
            client.close()
    return figures


def main(argv: list[str] | None = None) -> int:
    """Runs the comparison; returns the exit status."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--out", default="bench/results")
    parser.add_argument("--rounds", type=int, default=1, help="run every system this many times (medians)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    receiver, receiver_url = receiver_process.start()
    names = args.systems.split(",")
    by_system: dict[str, list[scenarios.Figures]] = {name: [] for name in names}
    try:
        with running_redis() as redis_url, tempfile.TemporaryDirectory(prefix="bench-logs-") as logs:
            context = Context(redis_url, receiver_url, Path(logs))
            shared = redis.Redis.from_url(redis_url)
            try:
                for round_ in range(args.rounds):
                    for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                        system_started = time.monotonic()
                        try:
                            system = context.make(name)
                        except Exception as error:
                            note = f"did not start: {error!r}"[:500]
                            by_system[name].append(scenarios.Figures(name, notes=[note]))
                            continue
                        figures = run_system(system, shared, receiver_url)
                        by_system[name].append(figures)
                        failed = [note for note in figures.notes if "failed" in note]
                        took_s = time.monotonic() - system_started
                        print(f"{name}: done in {took_s:.0f} s {'; '.join(failed)}")
            finally:
                shared.close()
                context.close()
    finally:
        receiver.terminate()
    results = [scenarios.median_of_rounds(rounds) for rounds in by_system.values() if rounds]
    print()
    print(report.write(results, out, time.monotonic() - started))
    print(f"\nwrote {out / 'compare.json'}, {out / 'compare.md'} and {out / 'fire_lag.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
