"""arq with `_defer_until` for delayed jobs, run from its own virtualenv (.venv-bench-arq).

arq 0.28 needs redis-py < 6 and Celery's kombu needs >= 6.4, so arq cannot share .venv-bench: its workers
and its enqueuing both run under ARQ_PYTHON, and submit() hands the jobs to a child process as JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any, ClassVar

ARQ_PYTHON = os.environ.get("BENCH_ARQ_PYTHON", os.path.abspath(".venv-bench-arq/bin/python"))


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


async def _enqueue(jobs: list[tuple[str, float | None]]) -> None:
    from arq import create_pool

    pool = await create_pool(_settings())
    for job_id, due_s in jobs:
        defer = None if due_s is None else datetime.fromtimestamp(due_s, UTC)
        await pool.enqueue_job("post", job_id, _job_id=job_id, _defer_until=defer)
    await pool.aclose()


class Peer:
    """arq: two worker processes."""

    name = "arq"

    def __init__(self, redis_url: str) -> None:
        self._redis_url = redis_url

    def worker_commands(self, python: str) -> list[list[str]]:
        """Returns two worker processes (under arq's own interpreter, whatever `python` is)."""
        return [[ARQ_PYTHON, "-m", "bench.compare.peers.arq_peer", "worker"] for _ in range(2)]

    def submit(self, jobs: list[tuple[str, float | None]]) -> None:
        """Enqueues jobs now or at their due time, from a child process under arq's interpreter."""
        subprocess.run(
            [ARQ_PYTHON, "-m", "bench.compare.peers.arq_peer", "enqueue"],
            input=json.dumps(jobs).encode(),
            check=True,
            env={**os.environ, "PYTHONPATH": os.getcwd()},
        )

    def close(self) -> None:
        """Nothing to close."""


if __name__ == "__main__":
    if sys.argv[1] == "enqueue":
        asyncio.run(_enqueue([tuple(job) for job in json.load(sys.stdin)]))  # type: ignore[misc]
    else:
        from arq.worker import run_worker

        WorkerSettings.redis_settings = _settings()  # type: ignore[attr-defined]
        run_worker(WorkerSettings)  # type: ignore[arg-type]
