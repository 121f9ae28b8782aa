"""The DynamoDB adapter's hot path, measured: client CPU per call of claim and finish against moto's server.

    .venv/bin/python -m bench.dynamo_calls            # 300 jobs, each created, claimed and finished
    .venv/bin/python -m bench.dynamo_calls --jobs 1000 --repeat 3
    .venv/bin/python -m bench.dynamo_calls --tracing all        # X-Ray on, as Powertools patches by default
    .venv/bin/python -m bench.dynamo_calls --tracing botocore   # X-Ray on, patched as the functions patch
    .venv/bin/python -m bench.dynamo_calls --tracing http       # ... and http.client: each JSON call traced

moto runs as its own process (`moto_server`), so the CPU measured is only this thread's (time.thread_time):
building the request, botocore's validation, serialisation, signing, sending, parsing the reply and the
adapter's decoding of it; the emulator's work and the wire wait are not in it. Each job is created (put,
not measured), then claimed (update_item, conditional, ALL_OLD) and finished (a first attempt: one fenced
update_item that writes the execution record into the job item), each measured alone. For reference, a
plain `get_item` of the job is measured through the same client: botocore's floor for one call.

Each run measures the clients in turn: boto3's alone ("boto3"), the JSON client the engine wires in
(adapters/dynamo/json_client.py, boto3 behind it for every other operation: "lean"), and the same JSON
client signing with botocore's SigV4Auth instead of its own signer ("lean_sigv4auth"); prints µs of CPU per
call for each step and client, and the ratios of the medians to boto3's.

--tracing turns X-Ray on as in a Lambda function: the Lambda environment variables, a sampled trace header,
Powertools' Tracer built as the functions build it (which patches the modules and sends every subsegment
to the daemon as it ends), and a UDP daemon stub on loopback that counts the datagrams it receives (printed
per call, so a run shows what was traced). Patching is for the life of the process: one mode per run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from hookline.adapters.dynamo.job_store import DynamoJobStore
from hookline.domain.delivery import Finish
from hookline.domain.models import Execution, ExecutionOutcome, Job, JobStatus
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import aws_session, dynamodb_client, dynamodb_json_client
from tests.support.aws import make_tables, use_fake_credentials
from tests.support.jobs import scheduled_job
from tests.support.redis_server import free_port

DONE = Finish(JobStatus.SUCCEEDED, 200, None)
CLIENTS = ("boto3", "lean", "lean_sigv4auth")
TRACE_HEADER = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"


class BotocoreSigner:
    """Signs as the JSON client's own signer does, with botocore's SigV4Auth (the alternative measured)."""

    def __init__(self, credentials: Any, region: str) -> None:
        self._auth = SigV4Auth(credentials, "dynamodb", region)

    def headers(
        self,
        host: str,
        target: str,
        body: bytes,
        access_key: str,
        secret_key: str,
        token: str | None,
        now: datetime.datetime,
    ) -> dict[str, str]:
        """Returns the signed headers (SigV4Auth reads the credentials and the time itself)."""
        request = AWSRequest(
            method="POST",
            url=f"http://{host}/",
            data=body,
            headers={"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": target},
        )
        self._auth.add_auth(request)
        return {**dict(request.headers.items()), "Host": host}


class DaemonStub:
    """A UDP socket on loopback standing for the X-Ray daemon: receives and counts datagrams."""

    def __init__(self) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._socket.getsockname()[1]}"
        self.datagrams = 0
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        while True:
            self._socket.recv(65536)
            self.datagrams += 1


def enable_tracing(mode: str) -> DaemonStub:
    """Turns X-Ray on as in a Lambda function and patches as Powertools' Tracer does for mode."""
    daemon = DaemonStub()
    os.environ.update(
        {
            "LAMBDA_TASK_ROOT": "/var/task",
            "AWS_LAMBDA_FUNCTION_NAME": "bench",
            "_X_AMZN_TRACE_ID": TRACE_HEADER,
            "AWS_XRAY_DAEMON_ADDRESS": daemon.address,
            "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
            "POWERTOOLS_TRACE_DISABLED": "false",
        }
    )
    from aws_lambda_powertools import Tracer

    from hookline.plumbing.tracing import TRACED_MODULES

    modules = {"all": None, "botocore": TRACED_MODULES, "http": (*TRACED_MODULES, "httplib")}[mode]
    Tracer(service="bench", patch_modules=modules)
    return daemon


def _moto(port: int) -> subprocess.Popen[bytes]:
    binary = os.path.join(os.path.dirname(sys.executable), "moto_server")
    process = subprocess.Popen(
        [binary, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=1).close()
            return process
        except OSError:
            time.sleep(0.1)
    process.terminate()
    raise RuntimeError("moto_server did not start")


def _job(n: int, now_ms: int) -> Job:
    return scheduled_job(
        now_ms,
        job_id=f"dc-{n}-{now_ms}",
        body=json.dumps({"id": n, "payload": {"order": 42, "items": [1, 2, 3], "customer": "c_0001"}}),
        due_ms=now_ms - 1,
        timeout_ms=10_000,
    )


def measure(jobs: int, endpoint: str, name: str, daemon: DaemonStub | None = None) -> dict[str, float]:
    """Creates, claims and finishes `jobs` jobs through the client `name` (CLIENTS); returns CPU µs per call
    of each step (and, tracing, the datagrams the daemon received per measured call)."""
    settings = Settings.from_env({"HOOKLINE_AWS_ENDPOINT": endpoint})
    client = dynamodb_client(settings)
    if name != "boto3":
        lean = dynamodb_json_client(client)
        if name == "lean_sigv4auth":
            lean._signer = BotocoreSigner(aws_session().get_credentials(), settings.aws_region)  # type: ignore[assignment]
        client = lean
    store = DynamoJobStore(client, settings.jobs_table, settings.executions_table)
    spent: dict[str, float] = {"claim": 0.0, "finish": 0.0, "get_item": 0.0}

    def timed(step: str, call: Callable[[], Any]) -> Any:
        started = time.thread_time()
        result = call()
        spent[step] += time.thread_time() - started
        return result

    failed = 0
    datagrams = 0
    for n in range(-20, jobs):  # the first 20 warm the client up and are not counted
        if n == 0:
            spent.update(dict.fromkeys(spent, 0.0))
            datagrams = daemon.datagrams if daemon else 0
        try:
            _one_job(store, timed, n)
        except Exception:  # moto answers a 500 now and then under load: counted, and the job skipped
            failed += 1
    figures: dict[str, float] = {
        f"{step}_cpu_us_per_call": round(total * 1e6 / jobs, 1) for step, total in spent.items()
    }
    if daemon is not None:
        time.sleep(0.2)  # the stub drains what is still in flight
        # Four calls a job (create, claim, finish, get).
        figures["xray_datagrams_per_call"] = round((daemon.datagrams - datagrams) / (4 * jobs), 2)
    return {**figures, "failed_jobs": failed}


def _one_job(store: DynamoJobStore, timed: Callable[[str, Callable[[], Any]], Any], n: int) -> None:
    """Creates one job (not measured), then claims, finishes and reads it, each measured."""
    now_ms = int(time.time() * 1000)
    job = _job(n, now_ms)
    store.create(job, "", now_ms)
    claim = timed("claim", lambda: store.claim(job.member(), now_ms))
    execution = Execution(
        job.tenant,
        job.job_id,
        claim.job.attempt,
        job.generation,
        now_ms,
        now_ms + 3,
        ExecutionOutcome.SUCCEEDED,
        latency_ms=3,
        status_code=200,
        response_preview="ok",
    )
    timed("finish", lambda: store.finish(claim.job, DONE, [execution], now_ms + 4))
    timed("get_item", lambda: store.get(job.tenant, job.job_id))


def main() -> None:
    """Starts moto, makes the tables, measures, prints JSON lines (and ratios to a baseline)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=int(300 * float(os.environ.get("BENCH_SCALE", "1"))))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--tracing", choices=["off", "all", "botocore", "http"], default="off")
    args = parser.parse_args()
    use_fake_credentials()
    daemon = None if args.tracing == "off" else enable_tracing(args.tracing)
    port = free_port()
    server = _moto(port)
    try:
        endpoint = f"http://127.0.0.1:{port}"
        make_tables(Settings.from_env({"HOOKLINE_AWS_ENDPOINT": endpoint}))
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in CLIENTS}
        for _ in range(args.repeat):
            for name, results in runs.items():
                results.append(measure(args.jobs, endpoint, name, daemon))
                print(name, f"tracing={args.tracing}", json.dumps(results[-1]), flush=True)
    finally:
        server.kill()
        server.wait(10)
    medians = {
        name: {key: statistics.median(run[key] for run in results) for key in results[0]}
        for name, results in runs.items()
    }
    for name, figures in medians.items():
        print(f"median {name}:", json.dumps(figures))
    for name in CLIENTS[1:]:
        ratios = {
            key: round(medians[name][key] / medians["boto3"][key], 2)
            for key in medians[name]
            if key.endswith("_cpu_us_per_call")
        }
        print(f"{name}/boto3:", json.dumps(ratios))


if __name__ == "__main__":
    main()
