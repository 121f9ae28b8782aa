"""The scenarios every system runs, each adding the figures it measured to the system's Figures.

dispatch   N immediate jobs with workers running, submitted one call per job from the bench's client:
           submit to last arrival (delivered/s), the submit rate, Redis commands (in all and by name), CPU
           per job of every process (client, API, workers, store, redis-server, receiver), and for
           Hookline DynamoDB requests and capacity units and Lambda invocations per job
batch      dispatch again, each system submitting with its batch enqueue (figures named batch_...)
drain      N jobs queued with workers stopped, then workers started: first to last arrival (a system that
           cannot pause gets its N jobs due at one instant instead)
lag        jobs due evenly over 1 s (5,000, 1,000 and 100): arrival - due, p50/p95/p99/max; early and
           duplicates
memory     M jobs scheduled one hour ahead with workers stopped: Redis bytes per job
latency    (systems with an HTTP API) submit requests one at a time: single and batch p50/p99
"""

from __future__ import annotations

import math
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import redis

from bench.compare import dynamo_units, measure
from bench.compare.systems import System

Progress = Callable[[int], None] | None
LATENCY_BATCH = 100  # what LatencyProbe.submit_latencies puts in each batch
FALLBACK_SUBMIT_PER_S = 50.0  # until dispatch measured a system's own submit rate
SETTLE_S = 0.5  # DynamoDB counters that have not moved for this long are final
MIN_LEAD_S = 3.0  # jobs due later are scheduled at least this far ahead of their submission
WARM_UP_JOBS = 20  # delivered before anything is timed, so every worker is up
REDIS_COMMAND_PREFIX = "redis_per_job_"  # + a command's name: dispatch's calls of it per job
BATCH_PREFIX = "batch_"  # + a dispatch figure's name: the same figure with batch submits


@dataclass
class Figures:
    """What one system measured, by scenario."""

    system: str
    values: dict[str, float] = field(default_factory=dict)
    lags_ms: dict[str, list[float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)  # name -> lowest, highest round


def median_of_rounds(rounds: list[Figures]) -> Figures:
    """Merges one system's figures from several rounds: each value the median over the rounds that have
    it, with its range (the lowest and highest round), but early, duplicate and lost jobs summed (one in
    any round must show); the fire lags of every round together (the plot); notes once each, and one with
    the rounds' dispatch and drain rates so the spread stays visible."""
    merged = Figures(rounds[0].system)
    names = list(dict.fromkeys(name for figures in rounds for name in figures.values))
    for name in names:
        found = [f.values[name] for f in rounds if name in f.values]
        summed = name.endswith(("_early", "_duplicates", "_lost"))
        merged.values[name] = sum(found) if summed else statistics.median(found)
        if not summed and len(found) > 1:
            merged.ranges[name] = (min(found), max(found))
    for figures in rounds:
        for label, lags in figures.lags_ms.items():
            merged.lags_ms.setdefault(label, []).extend(lags)
        merged.notes += [note for note in figures.notes if note not in merged.notes]
    if len(rounds) > 1:
        spread = "; ".join(
            f"{name} "
            + ", ".join(f"{f.values[f'{name}_per_s']:.0f}" for f in rounds if f"{name}_per_s" in f.values)
            for name in ("dispatch", "drain")
        )
        merged.notes.append(f"median of {len(rounds)} rounds, jobs/s per round: {spread}")
    return merged


@runtime_checkable
class LatencyProbe(Protocol):
    """A system whose submit requests can be timed one by one (an HTTP API)."""

    def submit_latencies(self, singles: int, batches: int) -> tuple[list[float], list[float]]:
        """Times singles single submits and batches batches of LATENCY_BATCH; returns their ms."""
        ...


def _ids(count: int) -> list[str]:
    """Returns count job ids of a new run: "<run>-<n>" (the receiver counts arrivals by run)."""
    run = uuid.uuid4().hex[:8]
    return [f"{run}-{i}" for i in range(count)]


def _run(jobs: list[str]) -> str:
    return jobs[0].rsplit("-", 1)[0]


def _count(label: str, jobs: list[str], seen: measure.Arrivals, out: Figures) -> measure.Arrivals:
    """Records the lost and duplicated jobs of a scenario, and arrivals that were not its jobs (a late
    job of an earlier step); returns the scenario's own arrivals."""
    mine = seen.of(jobs)
    out.values[f"{label}_lost"] = len(jobs) - mine.distinct
    out.values[f"{label}_duplicates"] = mine.duplicates
    if seen.distinct > mine.distinct:
        out.notes.append(f"{label}: {seen.distinct - mine.distinct} arrivals of jobs from earlier steps")
    return mine


def percentile(values: list[float], q: float) -> float:
    """Returns the q-quantile (0..1) of values, nan when there are none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _wait_s(count: int) -> float:
    """How long a scenario waits for count jobs at most: generous for the slowest system at 10 jobs/s."""
    return 60 + count / 10


def _submitter_cpu_s() -> float:
    """Returns this process's CPU (a system that takes jobs in the bench's process, not from the client)."""
    return time.process_time()


def flush(system: System, client: redis.Redis) -> None:
    """Empties the bench's shared Redis between scenarios; a system's own Redis holds its engine's state
    (consumer groups, the API limiter) and is left alone."""
    if system.redis_url is None:
        client.flushall()


def _warm_up(system: System, receiver: str) -> None:
    """Delivers a few jobs so every worker is up before anything is timed."""
    warm = _ids(WARM_UP_JOBS)
    system.submit([(job_id, None) for job_id in warm])
    seen = measure.wait_for(receiver, len(warm), 180, run=_run(warm))
    if seen.of(warm).distinct < len(warm):
        raise RuntimeError(f"only {seen.of(warm).distinct} of {len(warm)} warm-up jobs arrived")
    measure.reset(receiver)


def _lead_s(out: Figures, count: int) -> float:
    """Returns how far ahead to schedule count jobs so that submitting them ends before the first is due."""
    rate = out.values.get("submit_per_s") or FALLBACK_SUBMIT_PER_S
    return MIN_LEAD_S + 1.5 * count / rate


def _settled_counters(system: System) -> dict[str, float]:
    """Returns the system's counters once its DynamoDB requests stop growing (finishes are written after
    the callback arrived), waiting at most 10 s; at once for a system without them."""
    current = system.counters()
    if "dynamodb_requests" not in current:
        return current
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        time.sleep(SETTLE_S)
        later = system.counters()
        if later["dynamodb_requests"] == current["dynamodb_requests"]:
            return later
        current = later
    return current


def _worker_cpu_s(system: System, pids: list[int], skip: set[int]) -> float:
    """Returns the CPU the system's workers used so far: the system's own reading when it reports one
    (a process's clock, read to the nanosecond), else the process trees' from /proc (to the clock tick,
    10 ms here)."""
    own = system.counters().get("worker_cpu_s")
    return own if own is not None else measure.tree_cpu_s(pids, skip)


def store_figures(before: dict[str, float], after: dict[str, float], count: int, out: Figures) -> None:
    """Adds per-job DynamoDB, Lambda and store-CPU figures from two counter readings around count jobs.

    Units come from the counters when a meter priced each request (the in-memory store), else they are
    estimated from the requests by operation and the average item sizes (dynamo_units.estimated_units).
    """
    if "dynamodb_requests" not in after:
        return
    diff = {name: after[name] - before.get(name, 0.0) for name in after}
    out.values["dynamodb_requests_per_job"] = diff["dynamodb_requests"] / count
    operations = Counter(
        {name.removeprefix("dynamodb_"): int(n) for name, n in diff.items() if name[9:10].isupper()}
    )
    for operation, n in operations.items():
        out.values[f"dynamodb_{operation}_per_job"] = n / count
    if "dynamodb_wru" in after:
        wru, rru = diff["dynamodb_wru"], diff["dynamodb_rru"]
        index_wru = diff.get("dynamodb_index_wru", 0.0)
    else:
        index_wru = dynamo_units.estimated_index_units(operations)
        job_bytes, execution_bytes = after["job_item_bytes"], after["execution_item_bytes"]
        wru, rru = dynamo_units.estimated_units(operations, job_bytes, execution_bytes)
        out.values["job_item_bytes"], out.values["execution_item_bytes"] = job_bytes, execution_bytes
    out.values["dynamodb_wru_per_job"] = wru / count
    out.values["dynamodb_rru_per_job"] = rru / count
    out.values["dynamodb_index_wru_per_job"] = index_wru / count
    for name in ("lambda_invocations", "lambda_api_invocations", "lambda_fan_out_invocations"):
        if name in diff:
            out.values[f"{name}_per_job"] = diff[name] / count
    if "store_cpu_s" in diff:
        out.values["store_cpu_ms_per_job"] = 1000 * diff["store_cpu_s"] / count


def _submit(system: System, jobs: list[tuple[str, float | None]], batch: bool = False) -> float:
    """Submits; returns the client's CPU seconds (this process's, when the system takes the jobs here)."""
    cpu0 = _submitter_cpu_s()
    client_cpu = system.submit(jobs, batch) if batch else system.submit(jobs)
    return client_cpu if client_cpu is not None else _submitter_cpu_s() - cpu0


def dispatch(
    system: System, client: redis.Redis, receiver: str, count: int, out: Figures, tick: Progress
) -> None:
    """Measures immediate jobs submitted one call per job while workers run (the headline)."""
    _dispatch(system, client, receiver, count, out, tick, batch=False)


def dispatch_batch(
    system: System, client: redis.Redis, receiver: str, count: int, out: Figures, tick: Progress
) -> None:
    """Measures immediate jobs submitted with the system's batch enqueue while workers run; its figures
    are named BATCH_PREFIX + the dispatch figure's name."""
    if system.batch_submit:
        _dispatch(system, client, receiver, count, out, tick, batch=True)


def _dispatch(
    system: System,
    client: redis.Redis,
    receiver: str,
    count: int,
    out: Figures,
    tick: Progress,
    batch: bool,
) -> None:
    """Measures immediate jobs submitted while workers run: the rates, and every process's CPU per job
    (client, API, workers, store, redis-server, receiver), Redis commands, DynamoDB requests."""
    pids = system.start()
    skip = system.cpu_skip_pids
    try:
        _warm_up(system, receiver)
        client.config_resetstat()
        counters0 = _settled_counters(system)
        cpu0, redis_cpu0 = _worker_cpu_s(system, pids, skip), measure.redis_server_cpu_s(client)
        receiver_cpu0 = measure.receiver_cpu_s(receiver)
        jobs = _ids(count)
        start_ns = time.time_ns()
        client_cpu = _submit(system, [(job_id, None) for job_id in jobs], batch)
        submit_s = (time.time_ns() - start_ns) / 1e9
        label = BATCH_PREFIX + "dispatch" if batch else "dispatch"
        seen = _count(
            label, jobs, measure.wait_for(receiver, count, _wait_s(count), tick, run=_run(jobs)), out
        )
        worker_cpu = _worker_cpu_s(system, pids, skip) - cpu0
        redis_cpu = measure.redis_server_cpu_s(client) - redis_cpu0
        receiver_cpu = measure.receiver_cpu_s(receiver) - receiver_cpu0
        redis_calls = measure.redis_calls_by_name(client)
        counters1 = _settled_counters(system)
        last_ns = max((seen.first_ns(j) for j in jobs if j in seen.times_ns), default=time.time_ns())
        elapsed_s = (last_ns - start_ns) / 1e9

        def diff(name: str) -> float:
            return max(0.0, counters1.get(name, 0.0) - counters0.get(name, 0.0))

        # Submitting inside the measured tree (the engine-alone cells) is the submitter's cost. Both
        # readings come from one clock then (worker_cpu_s), so the difference is never below zero; the
        # clamp keeps a tick-grained reading of a few jobs from showing a negative cost.
        in_tree = diff("submit_cpu_in_tree_s")
        cpu_ms = {
            "client": client_cpu + in_tree,
            "api": diff("api_cpu_s"),
            "worker": max(0.0, worker_cpu - in_tree),
            "store": diff("store_cpu_s"),
            "redis": redis_cpu,
        }
        v: dict[str, float] = {}
        v["dispatch_per_s"] = seen.distinct / elapsed_s if elapsed_s > 0 else 0.0
        v["submit_per_s"] = count / submit_s if submit_s > 0 else 0.0
        for name, cpu_s in cpu_ms.items():
            v[f"{name}_cpu_ms_per_job"] = 1000 * cpu_s / count
        v["submit_cpu_ms_per_job"] = v["client_cpu_ms_per_job"] + v["api_cpu_ms_per_job"]
        v["total_cpu_ms_per_job"] = sum(v[f"{name}_cpu_ms_per_job"] for name in cpu_ms)
        v["receiver_cpu_ms_per_job"] = 1000 * receiver_cpu / count
        if batch:
            out.values.update({BATCH_PREFIX + name: value for name, value in v.items()})
            return
        out.values.update(v)
        out.values["redis_commands_per_job"] = sum(redis_calls.values()) / count
        for name, calls in redis_calls.items():
            out.values[f"{REDIS_COMMAND_PREFIX}{name}"] = calls / count
        out.values["worker_rss_mb"] = measure.rss_bytes(pids, skip) / 2**20
        store_figures(counters0, counters1, count, out)
    finally:
        system.stop()
        measure.reset(receiver)


def drain(
    system: System, client: redis.Redis, receiver: str, count: int, out: Figures, tick: Progress
) -> None:
    """Measures delivery alone: jobs queued first, workers started after (or all due at one instant)."""
    flush(system, client)
    jobs = _ids(count)
    due_s: float | None = None
    if not system.pausable:
        due_s = time.time() + _lead_s(out, count)
    system.submit([(job_id, due_s) for job_id in jobs])
    if due_s is not None and time.time() > due_s:
        out.notes.append("drain: submission outlasted the lead; some jobs were delivered while submitting")
    system.start()
    try:
        quiet_s = 0.0 if due_s is None else due_s - time.time()
        waited = measure.wait_for(
            receiver, count, _wait_s(count) + quiet_s, tick, quiet_s=quiet_s, run=_run(jobs)
        )
        seen = _count("drain", jobs, waited, out)
        times = [seen.first_ns(j) for j in jobs if j in seen.times_ns]
        span_s = (max(times) - min(times)) / 1e9 if len(times) > 1 else 0.0
        out.values["drain_per_s"] = len(times) / span_s if span_s > 0 else 0.0
    finally:
        system.stop()
        measure.reset(receiver)


def lag(system: System, client: redis.Redis, receiver: str, count: int, label: str, out: Figures) -> None:
    """Measures fire lag of count jobs due evenly over one second, after all of them are submitted."""
    flush(system, client)
    system.start()
    try:
        _warm_up(system, receiver)
        jobs = _ids(count)
        lead_s = _lead_s(out, count)
        # Due times on whole milliseconds (Hookline's resolution, and the finest run_at it accepts): a due
        # time between two milliseconds, truncated to the earlier by the request, counted deliveries within
        # that millisecond as early.
        base_ms = math.ceil((time.time() + lead_s) * 1000)
        due = {job_id: (base_ms + i * 1000 // count) / 1000 for i, job_id in enumerate(jobs)}
        base_s = base_ms / 1000
        system.submit([(job_id, due[job_id]) for job_id in jobs])
        if time.time() > base_s:
            out.notes.append(f"{label}: submission took longer than the {lead_s:.0f} s lead")
        quiet_s = base_s - time.time()
        waited = measure.wait_for(receiver, count, quiet_s + _wait_s(count), quiet_s=quiet_s, run=_run(jobs))
        seen = _count(label, jobs, waited, out)
        lags = [(seen.first_ns(j) / 1e9 - due[j]) * 1000 for j in jobs if j in seen.times_ns]
        out.lags_ms[label] = lags
        for name, q in (("p50", 0.50), ("p95", 0.95), ("p99", 0.99)):
            out.values[f"{label}_{name}_ms"] = percentile(lags, q)
        out.values[f"{label}_max_ms"] = max(lags, default=float("nan"))
        out.values[f"{label}_early"] = sum(1 for value in lags if value < 0)
    finally:
        system.stop()
        measure.reset(receiver)


def memory(system: System, client: redis.Redis, count: int, out: Figures) -> None:
    """Measures Redis bytes per job scheduled an hour ahead (workers stopped: nothing runs)."""
    flush(system, client)
    before = int(client.info("memory")["used_memory"])
    in_an_hour = time.time() + 3600
    system.submit([(job_id, in_an_hour) for job_id in _ids(count)])
    after = int(client.info("memory")["used_memory"])
    out.values["redis_bytes_per_scheduled_job"] = (after - before) / count
    flush(system, client)


def latency(system: System, receiver: str, singles: int, batches: int, out: Figures) -> None:
    """Times submit requests one at a time (single, then batch); waits for those jobs to be delivered."""
    if not isinstance(system, LatencyProbe):
        return
    system.start()
    try:
        single_ms, batch_ms = system.submit_latencies(singles, batches)
        for label, values in (("submit_single", single_ms), ("submit_batch", batch_ms)):
            out.values[f"{label}_p50_ms"] = percentile(values, 0.50)
            out.values[f"{label}_p99_ms"] = percentile(values, 0.99)
        expected = singles + LATENCY_BATCH * batches
        measure.wait_for(receiver, expected, _wait_s(expected))
    finally:
        system.stop()
        measure.reset(receiver)
