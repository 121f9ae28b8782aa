"""Hookline as the comparison drives it: the engine's use cases as processes over Redis and moto's server.

Jobs are submitted through the submit use case (JobSubmitter: the DynamoDB put, then the Redis index) in
the bench process; the promoter and two executor processes run as hookline_worker. The store is the local
stack's moto server, so every job pays its DynamoDB requests to an emulator that serves a few hundred
requests/s on this machine: this variant shows the engine with a DynamoDB in the way, not its own ceiling.

DynamoDB requests are counted by operation from moto's access log; capacity units are estimated from those
counts and the average sizes of the items the run wrote (dynamo_units.estimated_units says how).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.compare import dynamo_units, measure
from bench.compare.post import PAYLOAD
from hookline.domain.models import JobRequest
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container, dynamodb_client
from hookline.usecases.submit import JobSubmitter
from tests.support.aws import make_tables, use_fake_credentials

TENANT = "bench"
EXECUTORS = 2
EXECUTOR_THREADS = 8  # 2 x 8 delivery threads, as the peers run 2 processes x 8 threads


def engine_env(redis_url: str) -> dict[str, str]:
    """Returns the environment every bench variant of the engine runs with (as template.yaml sets it)."""
    return {
        "HOOKLINE_REDIS_URL": redis_url,
        "HOOKLINE_ALLOW_LOOPBACK": "true",
        "HOOKLINE_EXECUTOR_CONCURRENCY": str(EXECUTOR_THREADS),
    }


# Promote, execute and reap each run on a 1-minute schedule in AWS (template.yaml).
SCHEDULED_INVOCATIONS_PER_S = 3 / 60
BULK_BATCH = 25  # jobs per POST /v1/jobs/batch when hookline-local submits in bulk


def aws_invocations(submitted: int, elapsed_s: float) -> float:
    """Returns the Lambda invocations AWS would make for this many jobs over elapsed_s, submitted as the
    local stack's bulk path does (one API invocation per batch of BULK_BATCH), plus the schedules' ticks
    (fan-out is not modelled: these variants run a fixed set of executors)."""
    return submitted / BULK_BATCH + SCHEDULED_INVOCATIONS_PER_S * elapsed_s


def job_fields(url: str, job_id: str, due_s: float | None) -> dict[str, Any]:
    """Returns the request of one bench job: POST the shared payload, with the bench's id, now or at due_s."""
    fields: dict[str, Any] = {"url": url, "body": {"id": job_id, "payload": PAYLOAD}}
    if due_s is not None:
        fields["run_at"] = datetime.fromtimestamp(due_s, UTC).isoformat(timespec="milliseconds")
    return fields


def submit_in_batches(submitter: JobSubmitter, url: str, jobs: list[tuple[str, float | None]]) -> None:
    """Submits jobs one by one, BULK_BATCH to a batch as POST /v1/jobs/batch does for one API invocation
    (the invocations the λ figures count): the batch's statistics are written once, at its end."""
    for start in range(0, len(jobs), BULK_BATCH):
        with submitter.batch() as batch:
            for job_id, due_s in jobs[start : start + BULK_BATCH]:
                batch.submit(TENANT, job_request(url, job_id, due_s))


def job_request(url: str, job_id: str, due_s: float | None) -> JobRequest:
    """Returns the validated request of one bench job, as the API hands it to the submit use case."""
    return JobRequest.model_validate(job_fields(url, job_id, due_s))


def store_counters(moto_log: Path, moto_pid: int | None, client: Any, settings: Settings) -> dict[str, float]:
    """Returns moto's requests by operation, the average item sizes so far, and moto's CPU.

    The size reads are Scans, which the engine never sends; they are left out of the counts.
    """
    operations = dynamo_units.operations_in_log(moto_log)
    operations.pop("Scan", None)
    counters = {f"dynamodb_{name}": float(count) for name, count in operations.items()}
    counters["dynamodb_requests"] = float(sum(operations.values()))
    counters["job_item_bytes"] = dynamo_units.average_item_bytes(client, settings.jobs_table)
    counters["execution_item_bytes"] = dynamo_units.average_item_bytes(client, settings.executions_table)
    if moto_pid is not None:
        counters["store_cpu_s"] = measure.tree_cpu_s([moto_pid])
    return counters


class HooklineMoto:
    """The engine over moto's server (started by the caller)."""

    name = "hookline-moto"
    redis_url: str | None = None
    pausable = True
    batch_submit = False

    def __init__(
        self,
        redis_url: str,
        receiver_url: str,
        aws_endpoint: str,
        log_dir: str,
        moto_log: Path | None = None,
        moto_pid: int | None = None,
    ) -> None:
        use_fake_credentials()
        suffix = str(int(time.time() * 1000))
        self._env = {
            **os.environ,
            **engine_env(redis_url),
            "HOOKLINE_AWS_ENDPOINT": aws_endpoint,
            "HOOKLINE_JOBS_TABLE": f"bench-jobs-{suffix}",
            "HOOKLINE_EXECUTIONS_TABLE": f"bench-executions-{suffix}",
            "HOOKLINE_API_KEYS_TABLE": f"bench-keys-{suffix}",
            "PYTHONPATH": os.getcwd(),
        }
        self._settings = Settings.from_env(self._env)
        make_tables(self._settings)
        self._container = Container(self._settings)
        self._sizes_client = dynamodb_client(self._settings, max_connections=2)
        self._url = receiver_url + "/hook"
        self._moto_log = moto_log
        self._moto_pid = moto_pid
        self._log = open(os.path.join(log_dir, "hookline.log"), "ab")  # noqa: SIM115
        self._processes: list[subprocess.Popen[bytes]] = []
        self._created_s, self._submitted = time.monotonic(), 0
        self.cpu_skip_pids: set[int] = set()
        self.notes = [
            "DynamoDB on the local stack's moto server (a separate process, its CPU reported as store CPU); "
            "requests counted by operation from its access log, units estimated from the items' sizes; "
            "λ invocations computed as for hookline-memory"
        ]

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

    def submit(self, jobs: list[tuple[str, float | None]], batch: bool = False) -> float | None:
        """Submits through the use case, as the API does after validation (see submit_in_batches)."""
        submit_in_batches(self._container.submitter, self._url, jobs)
        self._submitted += len(jobs)

    def counters(self) -> dict[str, float]:
        """Returns moto's request counts, item sizes and CPU (empty without a moto log to read)."""
        if self._moto_log is None:
            return {}
        counters = store_counters(self._moto_log, self._moto_pid, self._sizes_client, self._settings)
        counters["lambda_invocations"] = aws_invocations(self._submitted, time.monotonic() - self._created_s)
        return counters

    def close(self) -> None:
        """Closes the clients."""
        self._container.close()
        self._sizes_client.close()
        self._log.close()
