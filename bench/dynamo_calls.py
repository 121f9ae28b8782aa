"""The DynamoDB adapter's hot path, measured: client CPU per call of claim and finish against moto's server.

    .venv/bin/python -m bench.dynamo_calls            # 300 jobs, each created, claimed and finished
    .venv/bin/python -m bench.dynamo_calls --jobs 1000 --repeat 3

moto runs as its own process (`moto_server`), so the CPU measured is only this thread's (time.thread_time):
building the request, botocore's validation, serialisation, signing, sending, parsing the reply and the
adapter's decoding of it; the emulator's work and the wire wait are not in it. Each job is created (put,
not measured), then claimed (update_item, conditional, ALL_OLD) and finished (transact_write_items: the
execution record and the fenced job update), each measured alone. For reference, a plain `get_item` of
the job is measured through the same client: botocore's floor for one call.

Each run measures both clients in turn, boto3's alone and the JSON client the engine wires in
(adapters/dynamo/json_client.py, boto3 behind it for every other operation); prints µs of CPU per call for
each step and client, and the ratio lean/boto3 of the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from hookline.adapters.dynamo.job_store import DynamoJobStore
from hookline.domain.delivery import Finish
from hookline.domain.models import Execution, ExecutionOutcome, Job, JobStatus
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import dynamodb_client, lean_client
from tests.support.aws import make_tables, use_fake_credentials
from tests.support.jobs import scheduled_job
from tests.support.redis_server import free_port

DONE = Finish(JobStatus.SUCCEEDED, 200, None)


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


def measure(jobs: int, endpoint: str, lean: bool) -> dict[str, float]:
    """Creates, claims and finishes `jobs` jobs; returns CPU µs per call of each step.

    lean: through the lean client the engine wires in (adapters/dynamo/json_client.py), else boto3's alone.
    """
    settings = Settings.from_env({"HOOKLINE_AWS_ENDPOINT": endpoint})
    client = dynamodb_client(settings)
    if lean:
        client = lean_client(client)
    store = DynamoJobStore(client, settings.jobs_table, settings.executions_table)
    spent: dict[str, float] = {"claim": 0.0, "finish": 0.0, "get_item": 0.0}

    def timed(step: str, call: Callable[[], Any]) -> Any:
        started = time.thread_time()
        result = call()
        spent[step] += time.thread_time() - started
        return result

    failed = 0
    for n in range(-20, jobs):  # the first 20 warm the client up and are not counted
        if n == 0:
            spent.update(dict.fromkeys(spent, 0.0))
        try:
            _one_job(store, timed, n)
        except Exception:  # moto answers a 500 now and then under load: counted, and the job skipped
            failed += 1
    figures: dict[str, float] = {
        f"{step}_cpu_us_per_call": round(total * 1e6 / jobs, 1) for step, total in spent.items()
    }
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
    args = parser.parse_args()
    use_fake_credentials()
    port = free_port()
    server = _moto(port)
    try:
        endpoint = f"http://127.0.0.1:{port}"
        make_tables(Settings.from_env({"HOOKLINE_AWS_ENDPOINT": endpoint}))
        runs: dict[str, list[dict[str, float]]] = {"boto3": [], "lean": []}
        for _ in range(args.repeat):
            for name, results in runs.items():
                results.append(measure(args.jobs, endpoint, lean=name == "lean"))
                print(name, json.dumps(results[-1]), flush=True)
    finally:
        server.kill()
        server.wait(10)
    medians = {
        name: {key: statistics.median(run[key] for run in results) for key in results[0]}
        for name, results in runs.items()
    }
    for name, figures in medians.items():
        print(f"median {name}:", json.dumps(figures))
    ratios = {
        key: round(medians["lean"][key] / medians["boto3"][key], 2)
        for key in medians["lean"]
        if key.endswith("_per_call")
    }
    print("lean/boto3:", json.dumps(ratios))


if __name__ == "__main__":
    main()
