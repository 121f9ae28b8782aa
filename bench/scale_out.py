"""Scale-out of dispatch over Redis shards: jobs/s with 1, 2 and 4 shards on separate Redis Cluster nodes.

What runs: a real 4-master Redis Cluster on loopback ports (shards 0-3 hash to slots 9260, 13325, 1134 and
5199, one on each master), one promoter process and --executors executor processes, each the engine's own
Promoter or Executor over the cluster-aware client (plumbing.wiring.redis_client, HOOKLINE_REDIS_CLUSTER).
The store port is the in-memory fake of tests/fakes (its conditions checked and its calls counted, but no
time spent: the store's cost is counted, not limiting), callbacks answer 200 at once (no HTTP) and signing
secrets are fixed. So what is measured is the Redis path of a delivery (promote, read, heartbeat, ack)
and the engine's own CPU around it.

Per shard count, in one run: N jobs are indexed the way a submit indexes them (index.lua, due in the
future), then made due at once; T0 is when the promoter starts. Throughput = N / (time the last delivery
is acknowledged - T0). Printed: jobs/s and the ratio to 1 shard, each Redis node's CPU per job (INFO cpu)
and share of the run, Redis commands per job (INFO stats), the executors' CPU per job, the store calls
per job. A Redis node's CPU per job says where Redis alone would top out: 1 / (busiest node's CPU per job).

--redis-cpu-cap F caps every Redis node at the fraction F of one CPU (a cgroup v1 CFS quota per node,
needs root; removed at the end): small nodes, so that Redis rather than the executors is the bound, which
on a 2-core machine shows how dispatch scales with the shards' nodes.

Usage: .venv/bin/python bench/scale_out.py [--jobs 10000] [--executors 2] [--concurrency 32] [--shards 1,2,4]
                                           [--redis-cpu-cap 0.025]
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.fakes and tests.support

from redis.cluster import RedisCluster

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.cluster import close_cluster
from hookline.adapters.redis.index import RedisIndex
from hookline.domain.callbacks import CallbackRequest, CallbackResult
from hookline.domain.clock import SystemClock
from hookline.domain.models import Job
from hookline.domain.sharding import shard_of
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import redis_client
from hookline.ports import NullMetrics
from hookline.usecases.execute import Executor
from hookline.usecases.promote import Promoter
from tests.fakes.jobs import FakeJobStore
from tests.fakes.keys import StaticSecrets
from tests.support.jobs import scheduled_job
from tests.support.redis_cluster import running_cluster

MASTERS = 4
TENANT = "bench"
FAR_FUTURE_MS = 10 * 60 * 1000  # indexed this far ahead, then all made due at once
SLICE_MS = 5_000  # each loop runs in slices this long (a stop is seen at the end of one)
POLL_S = 0.02
IDLE_SAMPLE_S = 1.0
# Sets every member of a due ZSET to score 0 (due long ago): one key, so one slot.
MAKE_ALL_DUE = "return redis.call('ZUNIONSTORE', KEYS[1], 1, KEYS[1], 'WEIGHTS', 0)"


def make_jobs(count: int, shards: int, created_ms: int) -> list[Job]:
    """Returns the run's jobs; every process builds the same list (ids are deterministic)."""
    jobs = []
    for i in range(count):
        job_id = f"job{i:08d}"
        jobs.append(
            scheduled_job(
                created_ms,
                tenant=TENANT,
                job_id=job_id,
                url="https://receiver.example/hook",
                headers={},
                max_backoff_ms=1000,
                shard=shard_of(job_id, shards),
            )
        )
    return jobs


class InstantCallbacks:
    """Answers every callback 200 at once (hookline.ports.CallbackClient)."""

    def deliver(self, request: CallbackRequest) -> CallbackResult:
        return CallbackResult(200, 0, response_preview="ok")


class CountingStore:
    """The in-memory job store, counting each call and the execution records written."""

    def __init__(self, store: FakeJobStore) -> None:
        self._store = store
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._store, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            if name == "finish":
                self.calls["execution records"] += len(args[2])
            return method(*args, **kwargs)

        return counted


def settings_for(url: str) -> Settings:
    return Settings(redis_url=url, redis_cluster=True)


def executor_main(
    url: str,
    name: str,
    jobs: int,
    shards: int,
    created_ms: int,
    concurrency: int,
    ready: Any,
    stop: Any,
    out: Any,
) -> None:
    """One executor process: its own store holding every job, the engine's Executor over the cluster."""
    store = CountingStore(FakeJobStore())
    for job in make_jobs(jobs, shards, created_ms):
        store.create(job, "", created_ms)
    store.calls.clear()
    index = RedisIndex(redis_client(settings_for(url)), consumer=name)
    for shard in range(shards):
        index.ensure_group(shard)
    executor = Executor(
        store,  # type: ignore[arg-type]
        index,
        index,
        index,
        SystemClock(),
        InstantCallbacks(),
        StaticSecrets(),
        NullMetrics(),
        list(range(shards)),
        concurrency=concurrency,
    )
    ready.put(name)
    cpu_at_start, processed = time.process_time(), 0
    while not stop.is_set():
        processed += executor.run(SystemClock().now_ms() + SLICE_MS, block_ms=100)
    out.put((name, processed, time.process_time() - cpu_at_start, dict(store.calls)))


def promoter_main(url: str, shards: int, go: Any, stop: Any, out: Any) -> None:
    """The promoter process: waits for the go, then promotes every shard until stopped."""
    index = RedisIndex(redis_client(settings_for(url)), consumer="promoter")
    promoter = Promoter(index, SystemClock(), list(range(shards)), NullMetrics())
    go.wait()
    cpu_at_start, moved = time.process_time(), 0
    while not stop.is_set():
        moved += promoter.run(SystemClock().now_ms() + SLICE_MS)
    out.put(("promoter", moved, time.process_time() - cpu_at_start, {}))


@dataclass
class NodeStats:
    """One Redis node's counters (INFO cpu, stats and commandstats: calls and usec per command)."""

    cpu_s: float
    commands: int
    by_command: dict[str, tuple[int, int]]


def node_stats(admin: RedisCluster) -> dict[str, NodeStats]:
    stats = {}
    for node in admin.get_primaries():
        info = admin.info("all", target_nodes=node)
        by_command = {
            key.removeprefix("cmdstat_"): (int(value["calls"]), int(value["usec"]))
            for key, value in info.items()
            if key.startswith("cmdstat_")
        }
        stats[node.name] = NodeStats(
            float(info["used_cpu_sys"]) + float(info["used_cpu_user"]),
            int(info["total_commands_processed"]),
            by_command,
        )
    return stats


Mix = dict[str, tuple[float, float]]


def command_mix(before: dict[str, NodeStats], after: dict[str, NodeStats], jobs: int) -> Mix:
    """Returns, per command over every node, (calls per job, microseconds of execution per job)."""
    mix: dict[str, list[int]] = {}
    for name, stats in after.items():
        for command, (calls, usec) in stats.by_command.items():
            calls_before, usec_before = before[name].by_command.get(command, (0, 0))
            totals = mix.setdefault(command, [0, 0])
            totals[0] += calls - calls_before
            totals[1] += usec - usec_before
    return {command: (calls / jobs, usec / jobs) for command, (calls, usec) in mix.items() if calls}


def left_to_deliver(admin: RedisCluster, shards: int) -> int:
    pipe = admin.pipeline(transaction=False)
    for shard in range(shards):
        pipe.zcard(redis_keys.due_key(shard))
        pipe.zcard(redis_keys.inflight_key(shard))
    return sum(int(n) for n in pipe.execute())


@dataclass
class Run:
    """The figures of one shard count."""

    shards: int
    jobs: int
    elapsed_s: float
    redis_cpu_per_job_us: dict[str, float]
    redis_busy: dict[str, float]
    redis_idle: dict[str, float]
    commands_per_job: float
    index_cpu_per_job_us: float
    executor_cpu_per_job_us: float
    promoter_cpu_per_job_us: float
    store_calls_per_job: dict[str, float]
    commands: Mix

    @property
    def jobs_per_s(self) -> float:
        return self.jobs / self.elapsed_s


def index_all(url: str, jobs: list[Job], now_ms: int) -> None:
    """Indexes every job as a submit does (index.lua), due far ahead, from 8 threads."""
    index = RedisIndex(redis_client(settings_for(url)), consumer="submitter")
    due_ms = now_ms + FAR_FUTURE_MS
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda job: index.index(job.member(), job.shard, due_ms, now_ms), jobs))


def run_once(url: str, admin: RedisCluster, shards: int, args: argparse.Namespace) -> Run:
    admin.flushall()
    created_ms = SystemClock().now_ms()
    jobs = make_jobs(args.jobs, shards, created_ms)
    context = multiprocessing.get_context("spawn")
    ready, out, go, stop = context.Queue(), context.Queue(), context.Event(), context.Event()
    executors = [
        context.Process(
            target=executor_main,
            args=(url, f"executor-{i}", args.jobs, shards, created_ms, args.concurrency, ready, stop, out),
        )
        for i in range(args.executors)
    ]
    promoter = context.Process(target=promoter_main, args=(url, shards, go, stop, out))
    for process in [*executors, promoter]:
        process.start()

    before_index = node_stats(admin)
    index_all(url, jobs, created_ms)
    after_index = node_stats(admin)
    for _ in executors:
        ready.get(timeout=120)
    # The engine's cost while nothing is due (blocked reads, waiters, recovery passes, the cluster's own
    # cron), per node and second: subtracted below, so CPU per job is what each job adds.
    idle_from = node_stats(admin)
    time.sleep(IDLE_SAMPLE_S)
    idle_to = node_stats(admin)
    idle_rate = {k: (idle_to[k].cpu_s - idle_from[k].cpu_s) / IDLE_SAMPLE_S for k in idle_to}
    for shard in range(shards):
        admin.eval(MAKE_ALL_DUE, 1, redis_keys.due_key(shard))
    before = node_stats(admin)
    started = time.monotonic()
    go.set()
    while left_to_deliver(admin, shards) > 0:
        if time.monotonic() - started > args.cap_s:
            raise RuntimeError(f"{shards} shards: not all delivered within {args.cap_s} s")
        time.sleep(POLL_S)
    elapsed_s = time.monotonic() - started
    after = node_stats(admin)
    stop.set()
    results = [out.get(timeout=60) for _ in range(args.executors + 1)]
    for process in [*executors, promoter]:
        process.join(timeout=30)

    n = args.jobs
    store_calls: Counter[str] = Counter()
    executor_cpu = promoter_cpu = 0.0
    for name, _, cpu_s, calls in results:
        store_calls.update(calls)
        if name == "promoter":
            promoter_cpu = cpu_s
        else:
            executor_cpu += cpu_s
    delivered = sum(count for name, count, _, _ in results if name != "promoter")
    if delivered < n:
        raise RuntimeError(f"{shards} shards: {delivered} of {n} delivered")
    return Run(
        shards=shards,
        jobs=n,
        elapsed_s=elapsed_s,
        redis_cpu_per_job_us={
            k: max(0.0, after[k].cpu_s - before[k].cpu_s - idle_rate[k] * elapsed_s) / n * 1e6 for k in after
        },
        redis_busy={k: (after[k].cpu_s - before[k].cpu_s) / elapsed_s for k in after},
        redis_idle={k: idle_rate[k] for k in after},
        commands_per_job=sum(after[k].commands - before[k].commands for k in after) / n,
        index_cpu_per_job_us=sum(after_index[k].cpu_s - before_index[k].cpu_s for k in after_index) / n * 1e6,
        executor_cpu_per_job_us=executor_cpu / n * 1e6,
        promoter_cpu_per_job_us=promoter_cpu / n * 1e6,
        store_calls_per_job={name: count / n for name, count in sorted(store_calls.items())},
        commands=command_mix(before, after, n),
    )


def report(runs: list[Run], shard_nodes: dict[int, str], args: argparse.Namespace) -> None:
    base = runs[0]
    print(
        f"\n{args.jobs} jobs per run, {args.executors} executor processes x {args.concurrency} slots, "
        f"1 promoter process, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
        + (f", each Redis node capped at {args.redis_cpu_cap:.1%} of a CPU" if args.redis_cpu_cap else "")
    )
    print("shard -> node: " + ", ".join(f"{s} -> {node}" for s, node in sorted(shard_nodes.items())))
    print(
        f"{'shards':>6} {'jobs/s':>7} {'ratio':>6} {'executors':>10} {'exec CPU':>9} {'cmds':>5} "
        f"{'Redis CPU':>9} {'busiest':>8} {'Redis-only':>11} {'ratio':>6}"
    )
    print(
        f"{'':>6} {'':>7} {'':>6} {'CPU/job':>10} {'busy':>9} {'/job':>5} "
        f"{'/job':>9} {'node/job':>8} {'ceiling/s':>11} {'':>6}"
    )
    for run in runs:
        busiest, base_busiest = (
            max(run.redis_cpu_per_job_us.values()),
            max(base.redis_cpu_per_job_us.values()),
        )
        executors_busy = run.executor_cpu_per_job_us * run.jobs_per_s / 1e6
        print(
            f"{run.shards:>6} {run.jobs_per_s:>7.0f} {run.jobs_per_s / base.jobs_per_s:>5.2f}x "
            f"{run.executor_cpu_per_job_us:>7.0f} us {executors_busy:>6.2f} CPU {run.commands_per_job:>5.1f} "
            f"{sum(run.redis_cpu_per_job_us.values()):>6.1f} us {busiest:>5.1f} us {1e6 / busiest:>11,.0f} "
            f"{base_busiest / busiest:>5.2f}x"
        )
    print("\nper node (shards' nodes first): marginal Redis CPU per job / share of the run / idle load")
    for run in runs:
        used = [shard_nodes[s] for s in range(run.shards)]
        order = used + sorted(k for k in run.redis_cpu_per_job_us if k not in used)
        cells = ", ".join(
            f"{run.redis_cpu_per_job_us[k]:.1f} us / {run.redis_busy[k]:.0%} / {run.redis_idle[k]:.1%}"
            for k in order
        )
        print(f"  {run.shards} shards: {cells}")
    # INFO commandstats times commands by the wall clock: under a CPU cap they include throttled time.
    timed = not args.redis_cpu_cap
    print(
        "\nRedis commands per job, all nodes (a script's own commands are counted under their names too)"
        + (", with the microseconds spent executing them:" if timed else ":")
    )
    for run in runs:
        top = sorted(run.commands.items(), key=lambda item: -item[1][0])
        cells = [
            f"{command} {n:.2f}" + (f" ({us:.1f} us)" if timed else "")
            for command, (n, us) in top
            if n >= 0.01
        ]
        print(f"  {run.shards} shards: " + ", ".join(cells))
    print("\nper job, every run:")
    for run in runs:
        print(
            f"  {run.shards} shards: promoter {run.promoter_cpu_per_job_us:.1f} us CPU; indexing (submit's "
            f"index.lua) {run.index_cpu_per_job_us:.1f} us of Redis CPU; store calls "
            + ", ".join(f"{name} {per_job:.2f}" for name, per_job in run.store_calls_per_job.items())
        )


CGROUP_CPU = Path("/sys/fs/cgroup/cpu")
CAP_PERIOD_US = 40_000  # quotas below 1 ms are refused, so 2.5 % needs a 40 ms period


@contextlib.contextmanager
def capped(admin: RedisCluster, fraction: float) -> Iterator[None]:
    """Caps each cluster node's redis-server at `fraction` of one CPU for the block (cgroup v1 quota)."""
    groups = []
    try:
        for node in admin.get_primaries():
            pid = int(admin.info("server", target_nodes=node)["process_id"])
            group = CGROUP_CPU / f"hookline-scale-out-{node.port}"
            group.mkdir()
            groups.append((group, pid))
            (group / "cpu.cfs_period_us").write_text(str(CAP_PERIOD_US))
            (group / "cpu.cfs_quota_us").write_text(str(max(1_000, int(fraction * CAP_PERIOD_US))))
            (group / "cgroup.procs").write_text(str(pid))
        yield
    finally:
        for group, pid in groups:
            with contextlib.suppress(OSError):
                (CGROUP_CPU / "cgroup.procs").write_text(str(pid))
            with contextlib.suppress(OSError):
                group.rmdir()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--executors", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--shards", default="1,2,4")
    parser.add_argument("--cap-s", type=float, default=300.0)
    parser.add_argument("--redis-cpu-cap", type=float, default=None, help="fraction of a CPU per node")
    args = parser.parse_args()
    counts = [int(n) for n in args.shards.split(",")]
    with running_cluster(masters=MASTERS) as url:
        admin = RedisCluster.from_url(url)
        try:
            shard_nodes = {s: admin.get_node_from_key(redis_keys.due_key(s)).name for s in range(max(counts))}
            if len(set(shard_nodes.values())) < max(counts):
                raise RuntimeError(f"shards share a node: {shard_nodes}")
            runs = []
            cap = capped(admin, args.redis_cpu_cap) if args.redis_cpu_cap else contextlib.nullcontext()
            with cap:
                for shards in counts:
                    runs.append(run_once(url, admin, shards, args))
                    print(f"{shards} shards: {runs[-1].jobs_per_s:.0f} jobs/s", flush=True)
            report(runs, shard_nodes, args)
        finally:
            close_cluster(admin)


if __name__ == "__main__":
    main()
