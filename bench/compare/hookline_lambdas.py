"""Hookline as deployed, the headline row: its Lambda handler modules as processes, the store in its own.

Processes, each measured on its own:
- the store server (store_server.py): the job, key and schedule stores, reached over loopback by every
  other process, each call a round trip; its CPU is the "store CPU";
- CLIENT_THREADS API sandboxes (lambda_process.py SubmitFunction: functions/submit/app.py with
  Powertools as deployed: authentication, the API rate limiter, validation, the submit use case), one per
  client thread as Lambda gives each concurrent request a sandbox; their CPU is the "API CPU";
- the promoter and EXECUTORS executors (PromoteFunction, ExecuteFunction), each invoked back to back;
  their CPU is the "worker CPU";
- the bench's client (client.py with hookline_sender.py): one POST /v1/jobs per job, or POST
  /v1/jobs/batch of BATCH in the batch scenario.

The reaper (one pass a minute in AWS) does not run: nothing is abandoned in a run. Lambda invocations per
job are computed: one API invocation per request, and the three schedules' ticks.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.compare import measure, store_server
from bench.compare.client import BATCH, CLIENT_THREADS, ClientProcess
from bench.compare.hookline_system import (
    EXECUTOR_THREADS,
    EXECUTORS,
    SCHEDULED_INVOCATIONS_PER_S,
    TENANT,
    engine_env,
)
from hookline.domain import constants
from hookline.usecases.auth import mint_key

START_TIMEOUT_S = 120.0  # a cold start imports Powertools and boto3: seconds on a loaded machine


class HooklineLambdas:
    """The headline Hookline system (a System)."""

    name = "hookline"
    redis_url: str | None = None
    pausable = True
    batch_submit = True

    def __init__(self, redis_url: str, receiver_url: str, log_dir: str) -> None:
        self._store, address = store_server.start(constants.LEASE_MS)
        record, api_key = mint_key(TENANT, int(time.time() * 1000))
        store_server.RemoteStore(address, "keys").put_key(record)
        self._meter = store_server.RemoteStore(address, "meter")
        self._dir = tempfile.TemporaryDirectory(prefix="bench-hookline-")
        self._log = open(os.path.join(log_dir, "hookline-lambdas.log"), "ab")  # noqa: SIM115
        self._env = {
            **os.environ,
            **engine_env(redis_url),
            # One key submits everything; the per-key API limit (100/s by default) is not what is measured.
            "HOOKLINE_API_RATE_LIMIT_PER_S": "1000000",
            "POWERTOOLS_SERVICE_NAME": "hookline",
            "POWERTOOLS_METRICS_NAMESPACE": "Hookline",
            "POWERTOOLS_TRACE_DISABLED": "true",
            "BENCH_STORE_ADDRESS": f"{address[0]}:{address[1]}",
            "BENCH_RECEIVER": receiver_url,
            "PYTHONPATH": os.getcwd(),
        }
        self._api = [self._spawn("SubmitFunction", f"api-{i}") for i in range(CLIENT_THREADS)]
        try:
            ports = [self._ready(process, name) for process, name in self._api]
        except Exception:
            _terminate([process for process, _ in self._api])
            self._store.kill()
            raise
        self._client = ClientProcess(
            sys.executable,
            "bench.compare.hookline_sender",
            {**self._env, "BENCH_API_PORTS": ",".join(ports), "BENCH_API_KEY": api_key},
            self._log,
        )
        self._workers: list[tuple[subprocess.Popen[bytes], str]] = []
        self._created_s, self._requests = time.monotonic(), 0
        self.cpu_skip_pids: set[int] = set()
        self.notes = [
            "functions/*/app.py as Lambda runs them (Powertools logging and metrics as deployed; tracing "
            f"off, its cost not measured): {CLIENT_THREADS} API sandboxes, a promoter, {EXECUTORS} executors "
            f"x {EXECUTOR_THREADS} threads; the job store in a process of its own over loopback (store CPU); "
            "the reaper not running; λ invocations computed (one per API request, the schedules' ticks)"
        ]

    def _spawn(self, function_id: str, name: str) -> tuple[subprocess.Popen[bytes], str]:
        ready = os.path.join(self._dir.name, name)
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.compare.lambda_process", function_id, ready],
            env=self._env,
            stdout=self._log,
            stderr=self._log,
            start_new_session=True,
        )
        return process, ready

    def _ready(self, process: subprocess.Popen[bytes], ready: str) -> str:
        """Waits for a process's ready file; returns what it wrote (an API sandbox's port)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        path = Path(ready)
        while time.monotonic() < deadline:
            if path.exists() and (text := path.read_text()):
                path.unlink()
                return text
            if process.poll() is not None:
                raise RuntimeError(f"{ready} exited with {process.returncode} (see hookline-lambdas.log)")
            time.sleep(0.05)
        raise RuntimeError(f"{ready} did not start within {START_TIMEOUT_S:.0f} s")

    def start(self) -> list[int]:
        """Starts the promoter and the executors; returns their pids once every one is wired."""
        self._workers = [self._spawn("PromoteFunction", "promote")]
        self._workers += [self._spawn("ExecuteFunction", f"execute-{i}") for i in range(EXECUTORS)]
        try:
            for process, ready in self._workers:
                self._ready(process, ready)
        except Exception:
            self.stop()
            raise
        return [process.pid for process, _ in self._workers]

    def stop(self) -> None:
        """Stops the promoter and the executors; what they held stays pending for the next start."""
        _terminate([process for process, _ in self._workers])
        self._workers = []

    def submit(self, jobs: list[tuple[str, float | None]], batch: bool = False) -> float:
        """Submits through the API from the client; returns the client's CPU seconds."""
        cpu_s = self._client.submit(jobs, batch)
        self._requests += -(-len(jobs) // BATCH) if batch else len(jobs)
        return cpu_s

    def counters(self) -> dict[str, float]:
        """Returns the store's DynamoDB meter, the store's and the API sandboxes' CPU, the λ invocations."""
        elapsed_s = time.monotonic() - self._created_s
        return {
            **self._meter.snapshot(),
            "store_cpu_s": measure.tree_cpu_s([self._store.pid]),  # type: ignore[list-item]
            "api_cpu_s": measure.tree_cpu_s([process.pid for process, _ in self._api]),
            "lambda_invocations": self._requests + SCHEDULED_INVOCATIONS_PER_S * elapsed_s,
            "lambda_api_invocations": float(self._requests),
        }

    def close(self) -> None:
        """Stops every process."""
        self.stop()
        self._client.close()
        _terminate([process for process, _ in self._api])
        self._store.kill()
        self._store.join(timeout=10)
        self._log.close()
        self._dir.cleanup()


def _terminate(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERMs each process group, then kills what is left after 15 s."""
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
