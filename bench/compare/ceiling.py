"""The machine's ceiling: a raw aiohttp client posting the same payload at the same concurrency, no queue.

Jobs wait in an in-memory queue of one child process (a timer each, for those due later) and 16 tasks post
them to the receiver, as the peers run 16 delivery threads. Nothing is stored, retried or acknowledged,
so what it reaches is what this machine, this receiver and Python's HTTP stack allow: the "ceiling" row.
"""

from __future__ import annotations

import asyncio
import threading
import time

import aiohttp

from bench.compare.child import ChildProcess
from bench.compare.post import body

CONCURRENCY = 16


class RawPoster:
    """The child's side: an event loop in a thread, a queue of job ids, CONCURRENCY posting tasks."""

    def __init__(self, receiver_url: str) -> None:
        self._url = receiver_url + "/hook"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._queue: asyncio.Queue[str] = self._run(self._make_queue())
        self._session: aiohttp.ClientSession | None = None
        self._tasks: list[asyncio.Task[None]] = []

    def _run(self, coroutine):  # type: ignore[no-untyped-def]
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=60)

    async def _make_queue(self) -> asyncio.Queue[str]:
        return asyncio.Queue()

    async def _post(self) -> None:
        assert self._session is not None
        while True:
            job_id = await self._queue.get()
            async with self._session.post(
                self._url, data=body(job_id), headers={"Content-Type": "application/json"}
            ) as response:
                await response.read()

    async def _start(self) -> None:
        self._session = aiohttp.ClientSession()
        self._tasks = [asyncio.create_task(self._post()) for _ in range(CONCURRENCY)]

    async def _stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _enqueue(self, jobs: list[tuple[str, float | None]]) -> None:
        for job_id, due_s in jobs:
            delay_s = 0.0 if due_s is None else due_s - time.time()
            if delay_s <= 0:
                self._queue.put_nowait(job_id)
            else:
                self._loop.call_later(delay_s, self._queue.put_nowait, job_id)

    def start(self) -> None:
        """Starts the posting tasks."""
        self._run(self._start())

    def stop(self) -> None:
        """Cancels the posting tasks; queued ids stay queued."""
        self._run(self._stop())

    def submit(self, jobs: list[tuple[str, float | None]]) -> float:
        """Queues jobs (now, or by a timer at their due time); returns the CPU this thread spent."""
        started = time.thread_time()
        self._run(self._enqueue(jobs))
        return time.thread_time() - started

    def counters(self) -> dict[str, float]:
        """Nothing to count."""
        return {}

    def close(self) -> None:
        """Stops the tasks and the loop."""
        self._run(self._stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)


class Ceiling:
    """The parent's side (a System)."""

    name = "ceiling"
    redis_url: str | None = None
    pausable = True
    batch_submit = False

    def __init__(self, receiver_url: str) -> None:
        self._child = ChildProcess(RawPoster, receiver_url)
        self.cpu_skip_pids: set[int] = set()
        self.notes = [
            f"raw aiohttp, {CONCURRENCY} posts at a time from an in-memory queue: no Redis, no store"
        ]

    def start(self) -> list[int]:
        """Starts posting."""
        self._child.call("start")
        return [self._child.pid]

    def stop(self) -> None:
        """Stops posting."""
        self._child.call("stop")

    def submit(self, jobs: list[tuple[str, float | None]], batch: bool = False) -> float | None:
        """Queues jobs in the child."""
        self._child.call("submit", jobs)
        return None

    def counters(self) -> dict[str, float]:
        """Nothing to count."""
        return {}

    def close(self) -> None:
        """Ends the child."""
        self._child.close()
