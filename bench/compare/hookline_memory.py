"""Hookline's engine over in-memory stores: its own cost, without a DynamoDB emulator in the way.

The job and key stores are the fakes of tests/fakes (DynamoDB's conditional writes over dicts, checked
against moto by tests/contract), metered by counted_store: every call is counted as the request the
DynamoDB adapter sends for it, priced in capacity units from the item's size. Redis is the bench's real
redis-server, through the real adapter, as for every other system.

An in-memory store cannot be shared between processes, so the submitter, the promoter and two executors
(8 delivery threads each, as in hookline-moto) run as threads of ONE child process, driven over a pipe
(bench/compare/child.py). They share one interpreter lock: submitting competes with delivering, which the
process-per-role variants do not; the child reports the CPU its submitting took, which the scenarios count
as submit CPU, not worker CPU.
"""

from __future__ import annotations

import threading
import time

from bench.compare.child import ChildProcess
from bench.compare.counted_store import DynamoMeter, MeteredJobStore, MeteredKeyStore
from bench.compare.hookline_system import BULK_BATCH, TENANT, aws_invocations, engine_env, job_request
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from tests.fakes.jobs import FakeJobStore
from tests.fakes.keys import FakeKeyStore
from tests.fakes.schedules import FakeScheduleStore
from tests.fakes.tables import JobsTables

EXECUTORS = 2
# Each use case runs in invocations this long, so a stop takes effect within about one of them.
INVOCATION_MS = 1_000


class InMemoryEngine:
    """The child's side: one set of metered stores, containers wired over them, worker threads."""

    def __init__(self, redis_url: str, receiver_url: str) -> None:
        self._settings = Settings.from_env(engine_env(redis_url))
        self._url = receiver_url + "/hook"
        self.meter = DynamoMeter()
        tables = JobsTables()
        jobs = MeteredJobStore(FakeJobStore(tables, self._settings.lease_ms), self.meter)
        keys = MeteredKeyStore(FakeKeyStore(), self.meter)
        self._containers = [Container(self._settings) for _ in range(EXECUTORS)]
        for container in self._containers:
            # Container builds each dependency on first use and keeps it in the instance's __dict__
            # (cached_property); seeding it there swaps the DynamoDB adapters for the metered fakes, and
            # the rest of the wiring is the one the Lambda handlers use. No schedule exists, so the cron
            # pass never reads its (unmetered) store.
            vars(container).update(jobs=jobs, keys=keys, schedule_store=FakeScheduleStore(tables))
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Starts the promoter and the executors, each looping one-second invocations until stop()."""
        self._stop.clear()
        first = self._containers[0]
        loops = [first.promoter.run]
        loops += [lambda deadline, c=c: c.executor.run(deadline) for c in self._containers]
        for loop in loops:
            thread = threading.Thread(target=self._loop, args=(loop,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _loop(self, invoke: object) -> None:
        assert callable(invoke)
        clock = self._containers[0].clock
        while not self._stop.is_set():
            invoke(clock.now_ms() + INVOCATION_MS)

    def stop(self) -> None:
        """Stops the loops after their current invocation (what they took is finished first)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)
        self._threads = []

    def submit(self, jobs: list[tuple[str, float | None]]) -> float:
        """Submits through the submit use case; returns the CPU this thread spent on it."""
        submitter = self._containers[0].submitter
        started = time.thread_time()
        for job_id, due_s in jobs:
            submitter.submit(TENANT, job_request(self._url, job_id, due_s))
        return time.thread_time() - started

    def counters(self) -> dict[str, float]:
        """Returns the meter's totals."""
        return self.meter.snapshot()

    def close(self) -> None:
        """Stops everything and closes the clients."""
        self.stop()
        for container in self._containers:
            container.close()


class HooklineMemory:
    """The parent's side of the in-memory engine (a System)."""

    name = "hookline-memory"
    redis_url: str | None = None
    pausable = True

    def __init__(self, redis_url: str, receiver_url: str) -> None:
        self._child = ChildProcess(InMemoryEngine, redis_url, receiver_url)
        self.cpu_skip_pids: set[int] = set()
        self.notes = [
            "in-memory store (tests/fakes, metered): submitter, promoter and 2 executors x 8 threads in one "
            "process; DynamoDB figures counted per request from the adapter's requests and real item sizes; "
            f"λ invocations computed: one API invocation per {BULK_BATCH} jobs (as hookline-local submits) "
            "and the 3 schedules' ticks"
        ]
        self._submit_cpu_s = 0.0
        self._created_s, self._submitted = time.monotonic(), 0

    def start(self) -> list[int]:
        """Starts the worker threads; the child is the process to measure."""
        self._child.call("start")
        return [self._child.pid]

    def stop(self) -> None:
        """Stops the worker threads; the store keeps every job."""
        self._child.call("stop")

    def submit(self, jobs: list[tuple[str, float | None]]) -> None:
        """Submits in the child, in one batch."""
        self._submit_cpu_s += self._child.call("submit", jobs)
        self._submitted += len(jobs)

    def counters(self) -> dict[str, float]:
        """Returns the DynamoDB meter's totals and the CPU submitting took inside the child."""
        return {
            **self._child.call("counters"),
            "submit_cpu_in_tree_s": self._submit_cpu_s,
            "lambda_invocations": aws_invocations(self._submitted, time.monotonic() - self._created_s),
        }

    def close(self) -> None:
        """Ends the child."""
        self._child.close()
