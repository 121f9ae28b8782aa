"""The scenarios every system runs, each returning the figures it measured.

dispatch   N immediate jobs with workers running: submit to last arrival (delivered/s), Redis commands and
           CPU (workers + submitter) per job
drain      N jobs queued with workers stopped, then workers started: first to last arrival
lag        jobs due evenly over 1 s (1,000 and 100): arrival - due, p50/p95/p99/max; early and duplicates
memory     M jobs scheduled one hour ahead with workers stopped: Redis bytes per job
"""

from __future__ import annotations

import resource
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import redis

from bench.compare import measure
from bench.compare.systems import System

Progress = Callable[[int], None] | None


@dataclass
class Figures:
    """What one system measured, by scenario."""

    system: str
    values: dict[str, float] = field(default_factory=dict)
    lags_ms: dict[str, list[float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _ids(count: int) -> list[str]:
    run = uuid.uuid4().hex[:8]
    return [f"{run}-{i}" for i in range(count)]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _submitter_cpu_s() -> float:
    """Returns this process's CPU plus that of its finished children (arq enqueues from a child)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _warm_up(system: System, receiver: str) -> None:
    """Delivers a few jobs so every worker is up before anything is timed."""
    warm = _ids(20)
    system.submit([(job_id, None) for job_id in warm])
    measure.wait_for(receiver, len(warm), 60)
    measure.reset(receiver)


def dispatch(
    system: System, client: redis.Redis, receiver: str, count: int, out: Figures, tick: Progress
) -> None:
    """Measures immediate jobs submitted while workers run."""
    pids = system.start()
    try:
        _warm_up(system, receiver)
        client.config_resetstat()
        cpu0, redis_cpu0 = measure.tree_cpu_s(pids), measure.redis_server_cpu_s(client)
        jobs = _ids(count)
        start_ns, submit_cpu0 = time.time_ns(), _submitter_cpu_s()
        system.submit([(job_id, None) for job_id in jobs])
        submit_cpu = _submitter_cpu_s() - submit_cpu0
        seen = measure.wait_for(receiver, count, 120, tick)
        last_ns = max((seen.first_ns(j) for j in jobs if j in seen.times_ns), default=time.time_ns())
        elapsed_s = (last_ns - start_ns) / 1e9
        out.values["dispatch_per_s"] = seen.distinct / elapsed_s if elapsed_s > 0 else 0.0
        out.values["dispatch_lost"] = count - seen.distinct
        out.values["dispatch_duplicates"] = seen.duplicates
        out.values["redis_commands_per_job"] = measure.redis_calls(client) / count
        out.values["redis_cpu_ms_per_job"] = 1000 * (measure.redis_server_cpu_s(client) - redis_cpu0) / count
        out.values["worker_cpu_ms_per_job"] = 1000 * (measure.tree_cpu_s(pids) - cpu0) / count
        out.values["submit_cpu_ms_per_job"] = 1000 * submit_cpu / count
        out.values["worker_rss_mb"] = measure.rss_bytes(pids) / 2**20
    finally:
        system.stop()
        measure.reset(receiver)


def drain(
    system: System, client: redis.Redis, receiver: str, count: int, out: Figures, tick: Progress
) -> None:
    """Measures delivery alone: jobs queued first, workers started after."""
    client.flushall()
    jobs = _ids(count)
    system.submit([(job_id, None) for job_id in jobs])
    system.start()
    try:
        seen = measure.wait_for(receiver, count, 120, tick)
        times = [seen.first_ns(j) for j in jobs if j in seen.times_ns]
        span_s = (max(times) - min(times)) / 1e9 if len(times) > 1 else 0.0
        out.values["drain_per_s"] = len(times) / span_s if span_s > 0 else 0.0
        out.values["drain_lost"] = count - seen.distinct
    finally:
        system.stop()
        measure.reset(receiver)


def lag(
    system: System,
    client: redis.Redis,
    receiver: str,
    count: int,
    label: str,
    out: Figures,
    lead_s: float = 3.0,
) -> None:
    """Measures fire lag of count jobs due evenly over one second, lead_s after submission starts."""
    client.flushall()
    system.start()
    try:
        _warm_up(system, receiver)
        jobs = _ids(count)
        base_s = time.time() + lead_s
        due = {job_id: base_s + i / count for i, job_id in enumerate(jobs)}
        system.submit([(job_id, due[job_id]) for job_id in jobs])
        if time.time() > base_s:
            out.notes.append(f"{label}: submission took longer than the {lead_s} s lead")
        seen = measure.wait_for(receiver, count, lead_s + 60)
        lags = [(seen.first_ns(j) / 1e9 - due[j]) * 1000 for j in jobs if j in seen.times_ns]
        out.lags_ms[label] = lags
        out.values[f"{label}_p50_ms"] = _percentile(lags, 0.50)
        out.values[f"{label}_p95_ms"] = _percentile(lags, 0.95)
        out.values[f"{label}_p99_ms"] = _percentile(lags, 0.99)
        out.values[f"{label}_max_ms"] = max(lags, default=float("nan"))
        out.values[f"{label}_early"] = sum(1 for value in lags if value < 0)
        out.values[f"{label}_lost"] = count - seen.distinct
        out.values[f"{label}_duplicates"] = seen.duplicates
    finally:
        system.stop()
        measure.reset(receiver)


def memory(system: System, client: redis.Redis, count: int, out: Figures) -> None:
    """Measures Redis bytes per job scheduled an hour ahead (workers stopped: nothing runs)."""
    client.flushall()
    before = int(client.info("memory")["used_memory"])
    in_an_hour = time.time() + 3600
    system.submit([(job_id, in_an_hour) for job_id in _ids(count)])
    after = int(client.info("memory")["used_memory"])
    out.values["redis_bytes_per_scheduled_job"] = (after - before) / count
    client.flushall()
