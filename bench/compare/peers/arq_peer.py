"""arq with `_defer_until` for delayed jobs, run from its own virtualenv (.venv-bench-arq).

arq 0.28 needs redis-py < 6 and Celery's kombu needs >= 6.4, so arq cannot share .venv-bench: its workers
and the bench's client (client.py) run under PYTHON when they drive arq.
"""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime
from typing import Any, ClassVar

PYTHON = os.environ.get("BENCH_ARQ_PYTHON", os.path.abspath(".venv-bench-arq/bin/python"))


async def post(ctx: dict[str, Any], job_id: str) -> None:
    """Delivers one job."""
    from bench.compare.post import body

    async with ctx["session"].post(
        os.environ["BENCH_RECEIVER"] + "/hook",
        data=body(job_id),
        headers={"Content-Type": "application/json"},
    ) as response:
        response.raise_for_status()


async def startup(ctx: dict[str, Any]) -> None:
    """Opens one aiohttp session per worker."""
    import aiohttp

    ctx["session"] = aiohttp.ClientSession()


async def shutdown(ctx: dict[str, Any]) -> None:
    """Closes the session."""
    await ctx["session"].close()


def _settings() -> Any:
    from arq.connections import RedisSettings

    return RedisSettings.from_dsn(os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"))


class WorkerSettings:
    """arq worker: 16 concurrent jobs, polling every 50 ms (default 500 ms) so delayed jobs fire promptly."""

    functions: ClassVar[list[Any]] = [post]
    on_startup = startup
    on_shutdown = shutdown
    max_jobs = 16
    poll_delay = 0.05
    keep_result = 0

    @classmethod
    def redis(cls) -> Any:
        """Returns the settings for the bench's Redis."""
        return _settings()


class Sender:
    """One client thread: its own event loop and pool; enqueue_job per job, or a batch's enqueue_job calls
    all at once (asyncio.gather: arq has no batch enqueue)."""

    def __init__(self) -> None:
        from arq import create_pool

        self._loop = asyncio.new_event_loop()
        self._pool = self._loop.run_until_complete(create_pool(_settings()))

    async def _enqueue(self, job_id: str, due_s: float | None) -> None:
        defer = None if due_s is None else datetime.fromtimestamp(due_s, UTC)
        await self._pool.enqueue_job("post", job_id, _job_id=job_id, _defer_until=defer)

    def one(self, job_id: str, due_s: float | None) -> None:
        """Enqueues one job now or at its due time (_defer_until)."""
        self._loop.run_until_complete(self._enqueue(job_id, due_s))

    def many(self, jobs: list[tuple[str, float | None]]) -> None:
        """Enqueues the jobs concurrently."""

        async def every() -> None:
            await asyncio.gather(*(self._enqueue(job_id, due_s) for job_id, due_s in jobs))

        self._loop.run_until_complete(every())

    def close(self) -> None:
        """Closes the pool and the loop."""
        self._loop.run_until_complete(self._pool.aclose())
        self._loop.close()


def open_sender(index: int) -> Sender:
    """Returns a client thread's sender."""
    return Sender()


class Peer:
    """arq: two worker processes."""

    name = "arq"

    def __init__(self, redis_url: str) -> None:
        self._redis_url = redis_url

    def worker_commands(self, python: str) -> list[list[str]]:
        """Returns two worker processes (under arq's own interpreter, whatever `python` is)."""
        return [[PYTHON, "-m", "bench.compare.peers.arq_peer", "worker"] for _ in range(2)]

    def close(self) -> None:
        """Nothing to close."""


if __name__ == "__main__":
    from arq.worker import run_worker

    WorkerSettings.redis_settings = _settings()  # type: ignore[attr-defined]
    run_worker(WorkerSettings)  # type: ignore[arg-type]
