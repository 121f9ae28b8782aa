"""bench/compare end to end at a tiny scale, so a broken bench fails `make test`, not the next `make bench`.

The system is a few lines of queue over the test's redis-server (a ZSET of due times, threads that pop and
POST with the bench's own post()), run through every scenario by run.run_system, then reported as `make
bench` reports (tables, compare.json, compare.md, fire_lag.png). No peer and no bench virtualenv is needed.
The in-memory Hookline engine runs one dispatch too: its child process, its metered stores and the
DynamoDB figures the scenarios derive from them.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from bench.compare import measure, post, receiver, report, run, scenarios
from bench.compare.hookline_memory import HooklineMemory

pytestmark = pytest.mark.integration
QUEUE = "smoke:due"


class TinyQueue:
    """A System: jobs in a Redis ZSET scored by due time, two threads taking what is due and posting it."""

    name = "tiny"
    redis_url: str | None = None
    pausable = True
    batch_submit = True  # a ZADD of every job; one call per job otherwise

    def __init__(self, redis_url: str) -> None:
        self._redis = redis.Redis.from_url(redis_url)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.cpu_skip_pids: set[int] = set()
        self.notes = ["a test's queue"]

    def _work(self) -> None:
        try:
            while not self._stop.is_set():
                due = self._redis.zrangebyscore(QUEUE, "-inf", time.time(), start=0, num=1)
                if due and self._redis.zrem(QUEUE, due[0]):  # ZREM decides which thread owns the job
                    post.post(due[0].decode())
                elif not due:
                    time.sleep(0.002)
        finally:
            post.close()

    def start(self) -> list[int]:
        self._stop.clear()
        self._threads = [threading.Thread(target=self._work, daemon=True) for _ in range(2)]
        for thread in self._threads:
            thread.start()
        return [os.getpid()]

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)

    def submit(self, jobs: list[tuple[str, float | None]], batch: bool = False) -> None:
        now = time.time()
        scores = {job_id: now if due_s is None else due_s for job_id, due_s in jobs}
        if batch:
            self._redis.zadd(QUEUE, scores)
            return
        for job_id, score in scores.items():
            self._redis.zadd(QUEUE, {job_id: score})

    def counters(self) -> dict[str, float]:
        return {}

    def close(self) -> None:
        self._redis.close()


@pytest.fixture(scope="module")
def receiver_url() -> Iterator[str]:
    """Yields the URL of the bench's receiver process."""
    process, url = receiver.start()
    yield url
    process.terminate()
    process.join(timeout=10)


@pytest.fixture
def tiny_scale(monkeypatch: pytest.MonkeyPatch, receiver_url: str) -> None:
    """Runs every scenario with 10 jobs, 2 to warm up and a short lead; post() reads the receiver from the
    environment."""
    monkeypatch.setenv("BENCH_SCALE", "0.001")
    monkeypatch.setenv("BENCH_RECEIVER", receiver_url)
    monkeypatch.setattr(scenarios, "MIN_LEAD_S", 0.5)
    monkeypatch.setattr(scenarios, "WARM_UP_JOBS", 2)


@pytest.mark.usefixtures("tiny_scale")
def test_given_a_tiny_queue_when_every_scenario_runs_then_the_report_holds_its_figures(
    redis_client: redis.Redis, redis_url: str, receiver_url: str, tmp_path: Path
) -> None:
    figures = run.run_system(TinyQueue(redis_url), redis_client, receiver_url)
    printed = report.write([figures], tmp_path, elapsed_s=1.0)

    assert [note for note in figures.notes if "failed" in note] == []
    values = figures.values
    assert values["dispatch_per_s"] > 0 and values["drain_per_s"] > 0
    assert values["batch_dispatch_per_s"] > 0 and values["batch_dispatch_lost"] == 0
    # The client (this process here) and the receiver read their CPU from their process clocks.
    assert values["client_cpu_ms_per_job"] > 0 and values["receiver_cpu_ms_per_job"] > 0
    assert values["total_cpu_ms_per_job"] >= values["client_cpu_ms_per_job"]
    assert values["redis_commands_per_job"] > 0 and values["redis_bytes_per_scheduled_job"] > 0
    scenarios_run = ("dispatch", "batch_dispatch", "drain", "lag5000", "lag1000", "lag100")
    assert [values[f"{s}_lost"] for s in scenarios_run] == [0] * 6
    assert [values[f"{s}_duplicates"] for s in scenarios_run] == [0] * 6
    assert [len(figures.lags_ms[label]) for label in ("lag5000", "lag1000", "lag100")] == [10, 10, 10]
    document = json.loads((tmp_path / "compare.json").read_text())
    assert document["results"][0]["values"]["dispatch_per_s"] == values["dispatch_per_s"]
    assert (tmp_path / "fire_lag.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| tiny |" in (tmp_path / "compare.md").read_text()
    assert "tiny" in printed and "Throughput and fire lag" in printed and "Batch submit" in printed
    # The dispatch's commands by name add up to its total (the tiny queue ZADDs every job it is given).
    by_name = {k: v for k, v in values.items() if k.startswith(scenarios.REDIS_COMMAND_PREFIX)}
    assert sum(by_name.values()) == pytest.approx(values["redis_commands_per_job"])
    assert values[f"{scenarios.REDIS_COMMAND_PREFIX}zadd"] > 0
    assert "tiny: " in printed.split("Redis commands per job by name (dispatch)\n", 1)[1]


@pytest.mark.usefixtures("tiny_scale")
def test_given_the_in_memory_engine_when_dispatching_then_its_store_requests_are_metered(
    redis_client: redis.Redis, redis_url: str, receiver_url: str
) -> None:
    system = HooklineMemory(redis_url, receiver_url)
    figures = scenarios.Figures(system.name)
    try:
        scenarios.dispatch(system, redis_client, receiver_url, 10, figures, None)
    finally:
        system.close()

    values = figures.values
    assert values["dispatch_lost"] == 0 and values["dispatch_duplicates"] == 0
    # One attempt: the submit's PutItem, the claim's UpdateItem, the finish's UpdateItem (the attempt's record
    # goes into the job item: no transaction); every item of the bench's jobs is under 1 KB, so 1 + 1 + 1.
    assert values["dynamodb_PutItem_per_job"] == 1.0
    assert values["dynamodb_UpdateItem_per_job"] == 2.0
    assert values.get("dynamodb_TransactWriteItems_per_job", 0.0) == 0.0
    assert values["dynamodb_wru_per_job"] == 1 + 1 + 1
    # live index: put, changed in place by the claim (status and lease are projected; the key stays), removed
    assert values["dynamodb_index_wru_per_job"] == 1 + 1 + 1
    # Ten jobs cost a few milliseconds: the cells read their CPU from their process clock (nanoseconds)
    # and the submitting thread's from its thread clock, so both are measurable and the worker's share,
    # the one less the other, is above zero (a /proc reading, 10 ms a tick, left it at zero or below).
    assert values["worker_cpu_ms_per_job"] > 0 and values["submit_cpu_ms_per_job"] > 0
    assert measure.arrivals(receiver_url).distinct == 0  # the scenario reset the receiver


@pytest.mark.usefixtures("tiny_scale")
def test_given_jobs_due_later_when_waiting_then_the_quiet_time_before_they_are_due_is_no_stall(
    receiver_url: str,
) -> None:
    # A system that cannot pause gets its drain jobs due minutes after submission; waiting must not give
    # up on it before they are due (it did: the stall cut-off counted from the start of the wait).
    def deliver_late() -> None:
        post.post("late-but-due")
        post.close()

    timer = threading.Timer(0.6, deliver_late)
    timer.start()
    try:
        seen = measure.wait_for(receiver_url, 1, timeout_s=5, stall_s=0.2, quiet_s=1.0)
    finally:
        timer.join()
        measure.reset(receiver_url)

    assert seen.distinct == 1


def test_given_rounds_when_merged_then_medians_with_every_fault_counted_and_every_lag_kept() -> None:
    rounds = [
        scenarios.Figures(
            "x", {"dispatch_per_s": v, "drain_per_s": v * 2, "lag100_early": e}, {"lag100": [v]}
        )
        for v, e in ((100.0, 0), (300.0, 1), (200.0, 0))
    ]
    rounds[1].notes.append("same note")
    rounds[2].notes.append("same note")

    merged = scenarios.median_of_rounds(rounds)

    assert merged.values == {"dispatch_per_s": 200.0, "drain_per_s": 400.0, "lag100_early": 1}
    assert merged.lags_ms == {"lag100": [100.0, 300.0, 200.0]}
    assert merged.notes == [
        "same note",
        "median of 3 rounds, jobs/s per round: dispatch 100, 300, 200; drain 200, 600, 400",
    ]
