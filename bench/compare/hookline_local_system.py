"""Hookline's whole hand-wired local stack through its HTTP API: `hookline dev --hand-wired` on free ports.

Everything a user's request goes through is in the path: the gateway, the API function in its sandbox
processes (authentication, the API rate limiter, validation), the submit use case, moto as DynamoDB, and
the promote, execute and reap functions on the template's schedules with fan-out, all in the `hookline dev`
process tree. Bulk submissions use POST /v1/jobs/batch (25 jobs a request, one request per API sandbox at
a time, over keep-alive connections); submit_latencies() times single requests and batches of 100 (the
route's limit), one after another.

It runs a fifth of the others' jobs in dispatch, drain, latency and memory (job_scale): moto answers a
query of the live index by scanning the whole table, so the reaper's pass over thousands of live jobs,
every minute, holds moto for seconds while every submit waits behind it; with 5,000 live jobs batches of
100 ran past the gateway's 29 s timeout (504). That is the emulator's limit, not DynamoDB's.

The stack cannot hold jobs back while "stopped" (its executors run on its own timers), so it is not
pausable: the drain scenario releases its jobs by one common due time instead. Lambda invocations are
counted as the stack makes them: API requests sent, timer ticks from the template's rates since start-up,
fan-out invocations from the stack's own report lines.
"""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from bench.compare.hookline_system import BULK_BATCH, job_fields, store_counters
from bench.compare.receiver import free_port
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import dynamodb_client
from tests.support.aws import use_fake_credentials

REPO = Path(__file__).resolve().parents[2]
LATENCY_BATCH = 100  # POST /v1/jobs/batch's limit
# One submit request per API sandbox (hookline dev starts one per CPU, at least 2): a request beyond them
# waits in the gateway, and that wait counts against the function's 29 s timeout.
SUBMITTERS = 2
START_TIMEOUT_S = 90.0


class HooklineLocal:
    """The local stack as a System; started by the constructor, stopped by close()."""

    name = "hookline-local"
    pausable = False
    batch_submit = False
    job_scale = 0.2

    def __init__(self, receiver_url: str) -> None:
        use_fake_credentials()
        self._url = receiver_url + "/hook"
        self._state = tempfile.TemporaryDirectory(prefix="bench-local-")
        state = Path(self._state.name)
        port, redis_port, aws_port = free_port(), free_port(), free_port()
        env = {
            **os.environ,
            "HOOKLINE_DEV_PORT": str(port),
            "HOOKLINE_DEV_REDIS_PORT": str(redis_port),
            "HOOKLINE_DEV_AWS_PORT": str(aws_port),
            "HOOKLINE_DEV_DIR": str(state),
            # One key submits everything; the per-key API limit (100/s by default) is not what is measured.
            "HOOKLINE_API_RATE_LIMIT_PER_S": "1000000",
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("HOOKLINE_AWS_ENDPOINT", None)
        self._output = state / "stdout.txt"
        with self._output.open("wb") as sink:
            self._process = subprocess.Popen(
                [str(Path(sys.executable).parent / "hookline"), "dev", "--hand-wired"],
                cwd=REPO,
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._started_s = time.monotonic()
        banner = self._wait_for_banner()
        self.api_url = f"http://127.0.0.1:{port}"
        self._key = _field(r"API key\s+(hl_\S+)", banner)
        self.redis_url: str | None = f"redis://127.0.0.1:{redis_port}/0"
        moto_pid = int(_field(r"moto pid (\d+)", banner))
        self.cpu_skip_pids = {int(_field(r"redis pid (\d+)", banner)), moto_pid}
        self._timer_rates_s = [float(rate) for rate in re.findall(r"every ([\d.]+) s", banner)]
        settings = Settings.from_env({**_dev_env(state / "dev.env"), "HOOKLINE_AWS_ENDPOINT": ""})
        self._settings = Settings(
            jobs_table=settings.jobs_table,
            executions_table=settings.executions_table,
            aws_endpoint_url=f"http://127.0.0.1:{aws_port}",
        )
        self._sizes_client = dynamodb_client(self._settings, max_connections=2)
        self._moto_log, self._moto_pid = state / "moto.log", moto_pid
        self._api_requests = 0
        self._lock = threading.Lock()
        self._local = threading.local()
        self._clients: list[httpx.Client] = []
        self._pool = ThreadPoolExecutor(max_workers=SUBMITTERS)
        self.notes = [
            f"`hookline dev --hand-wired`: gateway, {len(self._timer_rates_s)} timers, API sandboxes, moto, "
            "redis-server "
            f"on this machine; bulk submits through POST /v1/jobs/batch ({BULK_BATCH} a request, "
            f"{SUBMITTERS} at a time); worker CPU is the whole stack's but moto's (store CPU) and "
            "redis-server's; drain releases jobs by a common due time (the stack cannot pause); a fifth of "
            "the jobs in the bulk scenarios: moto's live-index queries scan the whole table, and the "
            "reaper's minute pass over thousands of live jobs made submits time out at the gateway"
        ]

    def _wait_for_banner(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            text = self._output.read_text(encoding="utf-8", errors="replace")
            if "API key" in text and "signing secret" in text:
                return text
            if self._process.poll() is not None:
                raise RuntimeError(f"hookline dev exited:\n{text}")
            time.sleep(0.1)
        self._process.kill()
        raise RuntimeError("hookline dev did not start in time")

    def _client(self) -> httpx.Client:
        client = getattr(self._local, "client", None)
        if client is None:
            headers = {"Authorization": f"Bearer {self._key}"}
            client = self._local.client = httpx.Client(
                base_url=self.api_url, headers=headers, timeout=60, verify=False
            )
            with self._lock:
                self._clients.append(client)
        return client

    def _post(self, path: str, document: dict[str, Any]) -> httpx.Response:
        response = self._client().post(path, json=document)
        with self._lock:
            self._api_requests += 1
        if response.status_code >= 300:
            raise RuntimeError(f"{path} answered {response.status_code}: {response.text[:300]}")
        return response

    def _post_batch(self, jobs: list[tuple[str, float | None]]) -> None:
        reply = self._post("/v1/jobs/batch", {"jobs": [job_fields(self._url, *job) for job in jobs]}).json()
        refused = [item for item in reply["results"] if item["status"] not in (200, 201)]
        if refused:
            raise RuntimeError(f"{len(refused)} batch items refused, e.g. {refused[0]}")

    def start(self) -> list[int]:
        """The stack runs from construction; its process tree is what works."""
        return [self._process.pid]

    def stop(self) -> None:
        """Cannot hold jobs back (see the module docstring)."""

    def submit(self, jobs: list[tuple[str, float | None]], batch: bool = False) -> float | None:
        """Submits in batches of BULK_BATCH, SUBMITTERS requests at a time."""
        batches = [jobs[i : i + BULK_BATCH] for i in range(0, len(jobs), BULK_BATCH)]
        list(self._pool.map(self._post_batch, batches))

    def submit_latencies(self, singles: int, batches: int) -> tuple[list[float], list[float]]:
        """Times POST /v1/jobs (singles times) and POST /v1/jobs/batch of 100 (batches times), one request
        at a time on one keep-alive connection; returns the milliseconds of each. The jobs are due now."""
        single_ms, batch_ms = [], []
        for n in range(singles):
            started = time.perf_counter()
            self._post("/v1/jobs", job_fields(self._url, f"latency-single-{n}", None))
            single_ms.append((time.perf_counter() - started) * 1000)
        for n in range(batches):
            jobs = [(f"latency-batch-{n}-{i}", None) for i in range(LATENCY_BATCH)]
            started = time.perf_counter()
            self._post_batch(jobs)
            batch_ms.append((time.perf_counter() - started) * 1000)
        return single_ms, batch_ms

    def counters(self) -> dict[str, float]:
        """Returns moto's requests and item sizes, moto's CPU, and the Lambda invocations so far."""
        counters = store_counters(self._moto_log, self._moto_pid, self._sizes_client, self._settings)
        elapsed_s = time.monotonic() - self._started_s
        # Each timer invokes at start-up, then every rate (hookline_local/scheduler.py).
        ticks = sum(math.floor(elapsed_s / rate) + 1 for rate in self._timer_rates_s)
        output = self._output.read_text(encoding="utf-8", errors="replace")
        fan_out = sum(int(n) for n in re.findall(r"fan-out: started (\d+) more executor", output))
        with self._lock:
            api = self._api_requests
        counters.update(
            lambda_invocations=float(api + ticks + fan_out),
            lambda_api_invocations=float(api),
            lambda_fan_out_invocations=float(fan_out),
        )
        return counters

    def close(self) -> None:
        """Stops the stack as Ctrl-C does, then closes the clients."""
        self._pool.shutdown(wait=True)
        for client in self._clients:
            client.close()
        self._sizes_client.close()
        self._process.send_signal(signal.SIGINT)
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=10)
        self._state.cleanup()


def _field(pattern: str, text: str) -> str:
    found = re.search(pattern, text)
    if found is None:
        raise RuntimeError(f"hookline dev's banner has no {pattern!r}:\n{text}")
    return found.group(1)


def _dev_env(path: Path) -> dict[str, str]:
    """Reads the NAME=value lines of the stack's dev.env (values are shell-quoted only when needed)."""
    values = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        name, sep, value = line.partition("=")
        if sep and not name.startswith("#"):
            values[name] = value.strip("'")
    return values
