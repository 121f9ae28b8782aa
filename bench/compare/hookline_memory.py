"""Hookline's engine over in-memory stores: its own cost, without a DynamoDB emulator in the way.

The job and key stores are the fakes of tests/fakes (DynamoDB's conditional writes over dicts, checked
against moto by tests/contract), metered by counted_store: every call is counted as the request the
DynamoDB adapter sends for it, priced in capacity units from the item's size. Redis is the bench's real
redis-server, through the real adapter, as for every other system.

An in-memory store cannot be shared between processes, so the engine runs as CELLS independent cells,
each a child process driven over a pipe (bench/compare/child.py) with its own store, its own Redis
database on the shared redis-server, and as threads a submitter, a promoter and one executor of 8
delivery threads: two executors of 8 threads in all, as Dramatiq's 2 processes x 8 threads and
hookline-moto's two executor processes. The bench deals the jobs out to the cells in turn and submits to
them at once. In AWS every submit and executor invocation runs in a process of its own over one shared
DynamoDB; here each cell's submitting still competes with its delivering for its interpreter lock (a
single cell, all threads under one lock, ran at about half the rate). Each child reports the CPU its
submitting took, which the scenarios count as submit CPU, not worker CPU.
"""

from __future__ import annotations

import threading
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench.compare.child import ChildProcess
from bench.compare.counted_store import DynamoMeter, MeteredJobStore, MeteredKeyStore
from bench.compare.hookline_system import BULK_BATCH, aws_invocations, engine_env, submit_in_batches
from hookline.plumbing.heap import freeze_start_up_heap
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from tests.fakes.jobs import FakeJobStore
from tests.fakes.keys import FakeKeyStore
from tests.fakes.schedules import FakeScheduleStore
from tests.fakes.tables import JobsTables

CELLS = 2  # independent engines, one process each (see the module's docstring)
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
        self._containers = [Container(self._settings)]
        for container in self._containers:
            # Container builds each dependency on first use and keeps it in the instance's __dict__
            # (cached_property); seeding it there swaps the DynamoDB adapters for the metered fakes, and
            # the rest of the wiring is the one the Lambda handlers use. No schedule exists, so the cron
            # pass never reads its (unmetered) store.
            vars(container).update(jobs=jobs, keys=keys, schedule_store=FakeScheduleStore(tables))
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        freeze_start_up_heap()  # as every function module does once wired (hookline/plumbing/heap.py)

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
        started = time.thread_time()
        submit_in_batches(self._containers[0].submitter, self._url, jobs)
        return time.thread_time() - started

    def counters(self) -> dict[str, float]:
        """Returns the meter's totals and this process's CPU so far (its clock, to the nanosecond: the
        submitting thread's CPU, read from a thread clock, is part of it and is taken out of it)."""
        return {**self.meter.snapshot(), "worker_cpu_s": time.process_time()}

    def close(self) -> None:
        """Stops everything and closes the clients."""
        self.stop()
        for container in self._containers:
            container.close()


class HooklineMemory:
    """The parent's side of the in-memory engine (a System)."""

    name = "hookline-engine-alone"
    redis_url: str | None = None
    pausable = True
    batch_submit = False

    def __init__(self, redis_url: str, receiver_url: str) -> None:
        # Cell k uses Redis database k: the cells share the server (its CPU, memory and command counts are
        # the system's) but no key, as two deployments would.
        self._children = [
            ChildProcess(InMemoryEngine, _database(redis_url, cell), receiver_url) for cell in range(CELLS)
        ]
        self.cpu_skip_pids: set[int] = set()
        self.notes = [
            "ENGINE ALONE, not comparable with the other rows: the use cases driven directly, jobs submitted "
            f"inside the worker processes in batches of {BULK_BATCH}, the store in the same process; "
            f"in-memory store (tests/fakes, metered): {CELLS} independent cells, each a process with its own "
            "store and Redis database running a submitter, a promoter and 1 executor x 8 threads, jobs dealt "
            "out in turn; DynamoDB figures counted per request from the adapter's requests and real item "
            "sizes; "
            f"λ invocations computed: one API invocation per {BULK_BATCH} jobs (as hookline-local submits) "
            "and the 3 schedules' ticks"
        ]
        self._submit_cpu_s = 0.0
        self._created_s, self._submitted = time.monotonic(), 0

    def start(self) -> list[int]:
        """Starts every cell's worker threads; the cells' processes are the ones to measure."""
        self._all("start")
        return [child.pid for child in self._children]

    def stop(self) -> None:
        """Stops the worker threads; the stores keep every job."""
        self._all("stop")

    def submit(self, jobs: list[tuple[str, float | None]], batch: bool = False) -> float | None:
        """Deals the jobs out to the cells in turn, each cell submitting its share at the same time (the
        cells' submit CPU is reported by counters(), as submit_cpu_in_tree_s)."""
        for cell, child in enumerate(self._children):
            child.send("submit", jobs[cell::CELLS])
        self._submit_cpu_s += sum(child.reply("submit") for child in self._children)
        self._submitted += len(jobs)
        return None

    def _all(self, command: str) -> list[Any]:
        """Sends command to every cell at once and returns their replies."""
        for child in self._children:
            child.send(command)
        return [child.reply(command) for child in self._children]

    def counters(self) -> dict[str, float]:
        """Returns the cells' DynamoDB meters summed and the CPU submitting took inside them."""
        totals: dict[str, float] = {}
        for cell_counters in self._all("counters"):
            for name, value in cell_counters.items():
                totals[name] = totals.get(name, 0.0) + value
        return {
            **totals,
            "submit_cpu_in_tree_s": self._submit_cpu_s,
            "lambda_invocations": aws_invocations(self._submitted, time.monotonic() - self._created_s),
        }

    def close(self) -> None:
        """Ends the child."""
        for child in self._children:
            child.close()


def _database(redis_url: str, number: int) -> str:
    """Returns redis_url pointing at database number of the same server."""
    parts = urlsplit(redis_url)
    return urlunsplit(parts._replace(path=f"/{number}"))
