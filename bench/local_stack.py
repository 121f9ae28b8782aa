"""Measures the local stack end to end: jobs/s from submit to callback received, and schedule lag.

It starts `hookline dev` as a subprocess (free loopback ports, state in a temporary directory), takes the
development key from its start-up output, and receives callbacks on its own loopback HTTP server.

Phases, each bounded by --jobs and --cap-s:
  burst   --jobs jobs due now, submitted by --clients threads: end-to-end jobs/s (first submit to last
          callback) and the submit rate alone.
  paced   --jobs jobs due at --pace-per-s, all submitted before the first is due: schedule lag (callback
          received - due time) p50/p99/max, with the stack otherwise idle.

Target: at least 50 jobs/s end to end on 2 CPUs (the burst line says whether it was met).

What bounds it: CPU. Every job costs three DynamoDB requests (submit, claim, finish) served by moto in one
Python process, and the gateway, API sandboxes, executors and this script share the same cores; the burst
prints the CPU each of them spent per job (from /proc), so the bound can be read off, not guessed. The
script counts the requests from moto's access log and measures moto alone (with the dev server's
item-level transaction rollback, a transaction costs the same on an empty and on a full table).

--stack deployed (default) measures `hookline dev`: template.yaml deployed on the embedded emulator, where
each job's DynamoDB requests, Lambda invocations and API Gateway events go through ministack; --stack
hand-wired measures `hookline dev --hand-wired` (functions in-process, moto). Start-up is the time from
starting the command to its banner (the API warm; for the deployed stack the layer's dependencies are
cached from an earlier run).

--start-up-only measures start-up and the warm-up alone: the time to the banner, then --clients concurrent
first requests.

Usage: .venv/bin/python bench/local_stack.py [--stack deployed|hand-wired] [--jobs 500] [--clients 8]
       [--pace-per-s 40] [--cap-s 60] [--start-up-only]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import httpx

HOOKLINE = Path(sys.executable).parent / "hookline"
REPO = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 180.0
TARGET_JOBS_PER_S = 50.0


def free_port() -> int:
    """Returns a loopback TCP port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def now_ms() -> int:
    """Returns wall time in Unix milliseconds."""
    return time.time_ns() // 1_000_000


class Arrivals(ThreadingHTTPServer):
    """A loopback receiver that records when each webhook-id first arrived."""

    daemon_threads = True
    request_queue_size = 256

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.first_ms: dict[str, int] = {}
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def url(self) -> str:
        """Returns the callback URL."""
        return f"http://127.0.0.1:{self.server_address[1]}/hook"

    def count(self, ids: set[str]) -> int:
        """Returns how many of ids have arrived."""
        with self.lock:
            return len(ids & self.first_ms.keys())


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: Arrivals

    def do_POST(self) -> None:
        arrived = now_ms()
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:
            self.server.first_ms.setdefault(self.headers.get("webhook-id", ""), arrived)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Stays quiet."""


@dataclass
class Stack:
    """A running `hookline dev` subprocess."""

    process: subprocess.Popen[bytes]
    api_url: str
    api_key: str
    aws_url: str
    moto_log: Path

    def dynamodb_requests(self) -> int:
        """Returns the requests moto has served so far (every AWS call of the stack is DynamoDB); 0 for
        the deployed stack, whose emulator keeps no access log."""
        if not self.moto_log.exists():
            return 0
        return self.moto_log.read_text(encoding="utf-8", errors="replace").count('"POST / HTTP/1.1"')


def start_stack(state_dir: Path, kind: str) -> Stack:
    """Starts `hookline dev` and waits for its banner; prints how long that took."""
    port, aws_port = free_port(), free_port()
    env = {
        **os.environ,
        "HOOKLINE_DEV_PORT": str(port),
        "HOOKLINE_DEV_REDIS_PORT": str(free_port()),
        "HOOKLINE_DEV_AWS_PORT": str(aws_port),
        "HOOKLINE_DEV_DIR": str(state_dir),
        # One key submits everything here; its API rate limit is not what this measures.
        "HOOKLINE_API_RATE_LIMIT_PER_S": "100000",
        "PYTHONUNBUFFERED": "1",
        "HOOKLINE_DEV_STACK": kind,
    }
    args = ["--parameter", "ApiRateLimitPerS=100000"] if kind == "deployed" else []
    env.pop("HOOKLINE_AWS_ENDPOINT", None)
    output = state_dir / "stdout.txt"
    with output.open("wb") as sink:
        process = subprocess.Popen(
            [str(HOOKLINE), "dev", *args], cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT
        )
    started = time.monotonic()
    end = started + START_TIMEOUT_S
    while time.monotonic() < end:
        text = output.read_text(encoding="utf-8", errors="replace")
        key = re.search(r"API key\s+(hl_\S+)", text)
        if key:
            print(f"start-up: {time.monotonic() - started:.1f} s to the banner ({kind} stack)")
            return Stack(
                process,
                f"http://127.0.0.1:{port}",
                key.group(1),
                f"http://127.0.0.1:{aws_port}",
                state_dir / "moto.log",
            )
        if process.poll() is not None:
            raise SystemExit(f"hookline dev exited:\n{text}")
        time.sleep(0.1)
    process.kill()
    raise SystemExit("hookline dev did not start in time")


def stop_stack(stack: Stack) -> None:
    """Stops the stack with Ctrl-C's signal."""
    stack.process.send_signal(signal.SIGINT)
    try:
        stack.process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        stack.process.kill()
        stack.process.wait(timeout=5)


def submit_all(stack: Stack, jobs: list[dict[str, Any]], clients: int) -> list[tuple[str, int]]:
    """Submits jobs from `clients` threads; returns (job id, due ms) per job."""
    local = threading.local()

    def submit(job: dict[str, Any]) -> tuple[str, int]:
        client = getattr(local, "client", None)
        if client is None:
            client = local.client = httpx.Client(
                base_url=stack.api_url, headers={"Authorization": f"Bearer {stack.api_key}"}, timeout=30
            )
            opened.append(client)
        response = client.post("/v1/jobs", json=job)
        response.raise_for_status()
        view = response.json()
        due = datetime.fromisoformat(view["run_at"].replace("Z", "+00:00"))
        return view["id"], int(due.timestamp() * 1000)

    opened: list[httpx.Client] = []
    try:
        with ThreadPoolExecutor(max_workers=clients) as pool:
            return list(pool.map(submit, jobs))
    finally:
        for client in opened:
            client.close()


def warm_up(stack: Stack, clients: int) -> None:
    """Sends `clients` concurrent requests and prints how long they took: on the deployed stack each
    concurrent request beyond the warm workers is a Lambda cold start (a new worker), which the burst
    would otherwise measure."""
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        statuses = list(
            pool.map(lambda _: httpx.get(f"{stack.api_url}/healthz", timeout=180).status_code, range(clients))
        )
    took_s = time.monotonic() - started
    print(f"warm-up: {clients} concurrent requests answered {sorted(set(statuses))} in {took_s:.1f} s")


def wait_arrivals(receiver: Arrivals, ids: set[str], deadline_s: float) -> None:
    """Waits until every id arrived or the deadline passed."""
    while time.monotonic() < deadline_s and receiver.count(ids) < len(ids):
        time.sleep(0.02)


def percentile(values: list[int], q: float) -> float:
    """Returns the q-quantile (0..1) of values."""
    if len(values) == 1:
        return float(values[0])
    return statistics.quantiles(values, n=1000, method="inclusive")[min(998, max(0, int(q * 1000) - 1))]


def _process_tree(pid: int) -> list[int]:
    """Returns pid and its descendants, read from /proc (Linux)."""
    found = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            found += _process_tree(int(child))
    return found


def _role(command: str) -> str:
    """Names what a process of the stack does, from its command line."""
    if "hookline_local.moto_server" in command:
        return "moto"
    if "_worker.py" in command:
        function = re.search(r"ministack-lambda-hookline-([A-Za-z]+)", command)
        return f"Lambda worker: {function.group(1) if function else '?'}"
    if "ministack" in command:
        return "emulator (ministack: API Gateway, Lambda, DynamoDB)"
    if "redis-server" in command:
        return "redis-server"
    if "multiprocessing" in command:
        return "API sandboxes"
    return "hookline dev (hand-wired: gateway, timers, executors; deployed: forwarder)"


def cpu_by_role(root_pid: int) -> dict[str, float]:
    """Returns CPU seconds (user + system) used so far by each role of the stack, plus this script's."""
    tick = os.sysconf("SC_CLK_TCK")
    used: dict[str, float] = {}
    for pid in _process_tree(root_pid):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue  # it ended meanwhile
        fields = stat[stat.rindex(")") + 2 :].split()
        role = _role(command)
        used[role] = used.get(role, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    times = os.times()
    used["this script (clients, receiver)"] = times.user + times.system
    return used


def burst(stack: Stack, receiver: Arrivals, jobs: int, clients: int, cap_s: float) -> None:
    """Runs the burst phase and prints its figures."""
    before = stack.dynamodb_requests()
    cpu_before = cpu_by_role(stack.process.pid)
    body = [{"url": receiver.url(), "body": {"n": n}} for n in range(jobs)]
    started_ms = now_ms()
    submitted = submit_all(stack, body, clients)
    submitted_ms = now_ms()
    ids = {job_id for job_id, _ in submitted}
    wait_arrivals(receiver, ids, time.monotonic() + cap_s)
    time.sleep(1.0)  # let the last finishes reach moto before counting its requests
    with receiver.lock:
        arrived = [receiver.first_ms[i] for i in ids if i in receiver.first_ms]
    requests = stack.dynamodb_requests() - before
    cpu_after = cpu_by_role(stack.process.pid)
    elapsed_s = (max(arrived) - started_ms) / 1000 if arrived else float("nan")
    print(f"burst: {len(arrived)}/{jobs} callbacks received")
    print(
        f"  submit rate          {jobs * 1000 / (submitted_ms - started_ms):7.1f} jobs/s ({clients} clients)"
    )
    rate = len(arrived) / elapsed_s
    verdict = "met" if len(arrived) == jobs and rate >= TARGET_JOBS_PER_S else "NOT met"
    print(
        f"  end to end           {rate:7.1f} jobs/s (first submit to last callback; "
        f"target {TARGET_JOBS_PER_S:g}: {verdict})"
    )
    print(f"  DynamoDB requests    {requests / jobs:7.2f} per job ({requests} in total)")
    print("  CPU per job (includes the 1 s settle after the last callback):")
    total = 0.0
    for role, seconds in sorted(cpu_after.items(), key=lambda kv: -kv[1] + cpu_before.get(kv[0], 0.0)):
        spent = seconds - cpu_before.get(role, 0.0)
        total += spent
        print(f"    {role:<42} {spent * 1000 / jobs:6.1f} ms")
    print(f"    {'total':<42} {total * 1000 / jobs:6.1f} ms ({os.cpu_count()} CPUs)")


def paced(stack: Stack, receiver: Arrivals, jobs: int, pace_per_s: float, clients: int, cap_s: float) -> None:
    """Runs the paced phase and prints its schedule-lag figures."""
    lead_ms = int(jobs / 40 * 1000) + 2000  # time to submit them all before the first falls due
    first_due_ms = now_ms() + lead_ms
    body = [
        {
            "url": receiver.url(),
            "run_at": datetime.fromtimestamp(
                (first_due_ms + int(n * 1000 / pace_per_s)) / 1000, UTC
            ).isoformat(),
        }
        for n in range(jobs)
    ]
    submitted = submit_all(stack, body, clients)
    late = sum(1 for _ in submitted if now_ms() > first_due_ms)
    ids = {job_id for job_id, _ in submitted}
    wait_arrivals(receiver, ids, time.monotonic() + cap_s + lead_ms / 1000 + jobs / pace_per_s)
    with receiver.lock:
        lags = [receiver.first_ms[i] - due for i, due in submitted if i in receiver.first_ms]
    early = sum(1 for lag in lags if lag < 0)
    print(
        f"paced: {len(lags)}/{jobs} callbacks received, {pace_per_s:g} jobs/s due"
        + (" (submitted late)" if late else "")
    )
    if lags:
        print(
            f"  schedule lag         p50 {percentile(lags, 0.5):.0f} ms, "
            f"p99 {percentile(lags, 0.99):.0f} ms, max {max(lags)} ms; fired early: {early}"
        )


def moto_alone(aws_url: str, requests: int, threads: int) -> None:
    """Measures the stack's moto alone: PutItem from `threads` threads, and TransactWriteItems as its
    table grows.

    moto's own TransactWriteItems backs up every table it touches with a deep copy (models/__init__.py),
    so it costs time in proportion to the items stored; the dev server backs up only the items touched,
    and the two transaction figures show that it costs the same on an empty and on a full table.
    """
    client = boto3.client(
        "dynamodb",
        endpoint_url=aws_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    table = "bench-scratch"
    client.create_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )

    def put(n: int) -> None:
        client.put_item(TableName=table, Item={"pk": {"S": str(n)}, "v": {"S": "x" * 200}})

    def transactions_per_s(count: int = 30) -> float:
        started = time.monotonic()
        for n in range(count):
            item = {"Put": {"TableName": table, "Item": {"pk": {"S": f"t{n}"}}}}
            client.transact_write_items(TransactItems=[item])
        return count / (time.monotonic() - started)

    empty = transactions_per_s()
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(put, range(requests)))
    put_rate = requests / (time.monotonic() - started)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(put, range(requests, 2000)))
    full = transactions_per_s()
    client.delete_table(TableName=table)
    client.close()
    print(f"moto alone: {put_rate:.0f} PutItem/s ({threads} threads); TransactWriteItems {empty:.0f}/s")
    print(f"  on an empty table, {full:.0f}/s with 2,000 items")


def main(argv: list[str] | None = None) -> int:
    """Starts the stack, runs both phases, prints the figures, stops the stack."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stack", choices=["deployed", "hand-wired"], default="deployed")
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--pace-per-s", type=float, default=40.0)
    parser.add_argument("--cap-s", type=float, default=60.0, help="longest wait for a phase's callbacks")
    parser.add_argument(
        "--start-up-only", action="store_true", help="start-up and the concurrent first requests only"
    )
    args = parser.parse_args(argv)
    receiver = Arrivals()
    receiver.thread.start()
    with tempfile.TemporaryDirectory(prefix="hookline-bench-") as state:
        stack = start_stack(Path(state), args.stack)
        try:
            print(f"local stack at {stack.api_url}; {args.jobs} jobs per phase; {os.cpu_count()} CPUs")
            warm_up(stack, args.clients)
            if args.start_up_only:
                return 0
            burst(stack, receiver, args.jobs, args.clients, args.cap_s)
            paced(stack, receiver, args.jobs, args.pace_per_s, args.clients, args.cap_s)
            if args.stack == "hand-wired":
                moto_alone(stack.aws_url, 500, args.clients)
        finally:
            stop_stack(stack)
            receiver.shutdown()
            receiver.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
