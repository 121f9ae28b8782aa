"""RQ 2 with `enqueue_at` for delayed jobs (its scheduler runs in the workers, `--with-scheduler`)."""

from __future__ import annotations

from datetime import UTC, datetime

from redis import Redis
from rq import Queue

from bench.compare.post import post


class Peer:
    """RQ: 16 SimpleWorker processes (RQ runs one job at a time per worker; forking per job is slower)."""

    name = "rq"

    def __init__(self, redis_url: str) -> None:
        self._redis = Redis.from_url(redis_url)
        self._queue = Queue("bench", connection=self._redis)
        self._url = redis_url

    def worker_commands(self, python: str) -> list[list[str]]:
        """Returns 16 single-job workers, the first one running the scheduler for delayed jobs."""
        base = [
            python,
            "-m",
            "rq.cli",
            "worker",
            "bench",
            "--url",
            self._url,
            "--worker-class",
            "rq.worker.SimpleWorker",
            "--quiet",
        ]
        return [[*base, "--with-scheduler"] if i == 0 else base for i in range(16)]

    def submit(self, jobs: list[tuple[str, float | None]]) -> None:
        """Enqueues jobs now or at their due time (one pipeline per 100 jobs)."""
        for start in range(0, len(jobs), 100):
            with self._redis.pipeline() as pipe:
                for job_id, due_s in jobs[start : start + 100]:
                    if due_s is None:
                        self._queue.enqueue(post, job_id, pipeline=pipe)
                    else:
                        self._queue.enqueue_at(
                            datetime.fromtimestamp(due_s, UTC), post, job_id, pipeline=pipe
                        )
                pipe.execute()

    def close(self) -> None:
        """Closes the connection."""
        self._redis.close()
