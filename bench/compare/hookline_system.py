"""Hookline as the comparison drives it: the engine's use cases as processes over Redis and moto's server.

Jobs are submitted through the submit use case (JobSubmitter: the DynamoDB put, then the Redis index) in
the bench process; the promoter and two executor processes run as hookline_worker. The store is moto's
server here, so every job pays three DynamoDB requests to an emulator that does ~200 writes/s on this
machine: this variant shows the whole path, not the engine's own ceiling.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime

from bench.compare.post import PAYLOAD
from hookline.domain.models import JobRequest
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from tests.support.aws import make_tables, use_fake_credentials

TENANT = "bench"
EXECUTORS = 2


class HooklineMoto:
    """The engine over moto's server (started by the caller)."""

    name = "hookline-moto"

    def __init__(self, redis_url: str, receiver_url: str, aws_endpoint: str, log_dir: str) -> None:
        use_fake_credentials()
        suffix = str(int(time.time() * 1000))
        self._env = {
            **os.environ,
            "HOOKLINE_REDIS_URL": redis_url,
            "HOOKLINE_AWS_ENDPOINT": aws_endpoint,
            "HOOKLINE_JOBS_TABLE": f"bench-jobs-{suffix}",
            "HOOKLINE_EXECUTIONS_TABLE": f"bench-executions-{suffix}",
            "HOOKLINE_API_KEYS_TABLE": f"bench-keys-{suffix}",
            "HOOKLINE_ALLOW_LOOPBACK": "true",
            "HOOKLINE_EXECUTOR_CONCURRENCY": "8",
            "PYTHONPATH": os.getcwd(),
        }
        self._settings = Settings.from_env(self._env)
        make_tables(self._settings)
        self._container = Container(self._settings)
        self._url = receiver_url + "/hook"
        self._log = open(os.path.join(log_dir, "hookline.log"), "ab")  # noqa: SIM115
        self._processes: list[subprocess.Popen[bytes]] = []

    def start(self) -> list[int]:
        """Starts the promoter and the executors."""
        for role in ["promote", *["execute"] * EXECUTORS]:
            self._processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "bench.compare.hookline_worker", role],
                    env=self._env,
                    stdout=self._log,
                    stderr=self._log,
                    start_new_session=True,
                )
            )
        return [process.pid for process in self._processes]

    def stop(self) -> None:
        """Stops every worker; what they held stays pending for the next start's redelivery."""
        for process in self._processes:
            os.killpg(process.pid, signal.SIGTERM)
        for process in self._processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self._processes = []

    def submit(self, jobs: list[tuple[str, float | None]]) -> None:
        """Submits through the use case, as the API does after validation."""
        for job_id, due_s in jobs:
            fields: dict[str, object] = {"url": self._url, "body": {"id": job_id, "payload": PAYLOAD}}
            if due_s is not None:
                fields["run_at"] = datetime.fromtimestamp(due_s, UTC).isoformat(timespec="milliseconds")
            self._container.submitter.submit(TENANT, JobRequest.model_validate(fields))

    def close(self) -> None:
        """Closes the clients."""
        self._container.close()
        self._log.close()


_ = json
