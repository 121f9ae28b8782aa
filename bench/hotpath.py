"""The executor's hot path, measured: CPU, Redis commands and DynamoDB requests per delivered job.

    .venv/bin/python -m bench.hotpath                  # engine: N jobs drained by one executor
    .venv/bin/python -m bench.hotpath --jobs 2000 --concurrency 16 --shards 1
    .venv/bin/python -m bench.hotpath --mode callback  # the callback client beside a raw http.client
    .venv/bin/python -m bench.hotpath --tracing botocore  # X-Ray on, patched as the functions patch
    .venv/bin/python -m bench.hotpath --tracing http   # ... and http.client patched too

engine: a private redis-server, a receiver process (a minimal asyncio HTTP/1.1 server answering 200),
and in this process the engine's use cases over the in-memory stores of tests/fakes (metered as
bench/compare/counted_store.py meters them, so DynamoDB requests are the adapter's). N jobs due now are
submitted and promoted first; then the counters are reset and ONE executor (concurrency C, one reader per
shard) drains them, in invocations of INVOCATION_MS, until the receiver has every job. Reported per
delivered job: this process's CPU during the drain (the executor's threads: readers, delivery pool,
heartbeat; nothing else runs in it then), redis-server's commands by name (`INFO commandstats`, commands
run inside scripts included), the metered DynamoDB requests; and the drain's jobs/s.

--tracing turns X-Ray on as bench/dynamo_calls.py does (Powertools' Tracer as the functions build it, a
UDP daemon stub on loopback) and reports the datagrams the daemon received per delivered job: what the
executor's own path (Redis, the callback client's sockets) sends to X-Ray, the DynamoDB calls aside (the
in-memory stores make none; bench/dynamo_calls.py --tracing measures those).

callback: one thread posting the same ~200-byte JSON to the receiver M times through HttpCallbackClient,
then through a kept-alive http.client.HTTPConnection (no safety checks at all: the raw floor), each
reported as CPU µs per request. "client_ip_new_tenant" posts each request for a tenant the client has not
served: connections are kept per tenant, so each opens a connection of its own (the cost of not sharing a
kept-alive connection across tenants, when tenants do not repeat). "reuse_check" is the check for unread
bytes a kept connection passes right before its reuse, timed alone (µs a call).

Figures are this machine's, shared with other work: compare runs made side by side, not absolutes.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import multiprocessing
import os
import statistics
import tempfile
import time
from dataclasses import replace
from multiprocessing.sharedctypes import Synchronized
from typing import Any

from bench.compare.counted_store import DynamoMeter, MeteredJobStore, MeteredKeyStore
from bench.compare.hookline_system import TENANT, job_request
from bench.compare.post import body as job_body
from bench.dynamo_calls import DaemonStub, enable_tracing
from hookline.adapters.http.client import HttpCallbackClient
from hookline.adapters.sockets import idle_socket_unusable
from hookline.domain.callbacks import CallbackRequest
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from tests.fakes.jobs import FakeJobStore
from tests.fakes.keys import FakeKeyStore
from tests.fakes.schedules import FakeScheduleStore
from tests.fakes.tables import JobsTables
from tests.support.redis_server import RedisServer, free_port

INVOCATION_MS = 1_000
REUSE_CHECKS = 100_000
_RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"


def _serve(port: int, arrivals: Synchronized[int], ready: Any) -> None:
    """Answers every HTTP/1.1 request with 200 "ok", counting them; runs until terminated."""

    class Receiver(asyncio.Protocol):
        def __init__(self) -> None:
            self.buffer = b""

        def connection_made(self, transport: Any) -> None:
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            self.buffer += data
            while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
                head = self.buffer[:end].lower()
                length = 0
                at = head.find(b"content-length:")
                if at >= 0:
                    length = int(head[at + 15 :].split(b"\r\n", 1)[0])
                if len(self.buffer) < end + 4 + length:
                    return
                self.buffer = self.buffer[end + 4 + length :]
                with arrivals.get_lock():
                    arrivals.value += 1
                self.transport.write(_RESPONSE)

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(Receiver, "127.0.0.1", port, backlog=1024)
        ready.set()
        async with server:
            await server.serve_forever()

    asyncio.run(main())


class ReceiverProcess:
    """The receiver in a child process; `arrivals` counts the requests it answered."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.arrivals: Synchronized[int] = multiprocessing.Value("q", 0)
        ready = multiprocessing.Event()
        self._process = multiprocessing.Process(
            target=_serve, args=(self.port, self.arrivals, ready), daemon=True
        )
        self._process.start()
        if not ready.wait(10):
            raise RuntimeError("the receiver did not start")

    def close(self) -> None:
        """Stops the receiver."""
        self._process.terminate()
        self._process.join(5)


def engine(
    jobs: int, concurrency: int, shards: int, metered: bool = True, daemon: DaemonStub | None = None
) -> dict[str, Any]:
    """Drains `jobs` promoted jobs with one executor; returns the per-job figures (and, tracing, the
    datagrams the X-Ray daemon received per delivered job)."""
    receiver = ReceiverProcess()
    with tempfile.TemporaryDirectory() as data_dir:
        server = RedisServer(data_dir)
        server.start()
        try:
            datagrams = daemon.datagrams if daemon else 0
            figures = _drain(server.url, receiver, jobs, concurrency, shards, metered)
            if daemon is not None:
                time.sleep(0.2)  # the stub drains what is still in flight
                figures["xray_datagrams_per_job"] = round((daemon.datagrams - datagrams) / figures["jobs"], 2)
            return figures
        finally:
            server.stop()
            receiver.close()


def _drain(
    redis_url: str, receiver: ReceiverProcess, jobs: int, concurrency: int, shards: int, metered: bool = True
) -> dict[str, Any]:
    env = {
        "HOOKLINE_REDIS_URL": redis_url,
        "HOOKLINE_ALLOW_LOOPBACK": "true",
        "HOOKLINE_EXECUTOR_CONCURRENCY": str(concurrency),
        "HOOKLINE_SHARDS": str(shards),
    }
    settings = Settings.from_env(env)
    meter = DynamoMeter()
    tables = JobsTables()
    container = Container(settings)
    vars(container).update(
        # The meter prices every write from the item's size: its own CPU lands in the executor's figure,
        # so --unmetered leaves it out (and reports no DynamoDB requests).
        jobs=MeteredJobStore(FakeJobStore(tables, settings.lease_ms), meter)
        if metered
        else FakeJobStore(tables, settings.lease_ms),
        keys=MeteredKeyStore(FakeKeyStore(), meter),
        schedule_store=FakeScheduleStore(tables),
    )
    try:
        url = receiver.url + "/hook"
        executor = container.executor  # built (and its groups made) before the counters start
        container.redis.config_resetstat()
        for n in range(jobs):
            container.submitter.submit(TENANT, job_request(url, f"hp-{n}", None))
        submit_commands = _commandstats(container)
        deadline_ms = container.clock.now_ms() + 60_000
        while sum(container.index.undelivered(shard) for shard in container.shards) < jobs:
            container.promoter.tick()
            if container.clock.now_ms() > deadline_ms:
                raise RuntimeError("promotion did not finish")
        requests_before = meter.snapshot()
        container.redis.config_resetstat()
        cpu_started, wall_started = time.process_time(), time.monotonic()
        while receiver.arrivals.value < jobs:
            executor.run(container.clock.now_ms() + INVOCATION_MS)
            if time.monotonic() - wall_started > 600:
                raise RuntimeError(f"only {receiver.arrivals.value} of {jobs} arrived")
        cpu_s, wall_s = time.process_time() - cpu_started, time.monotonic() - wall_started
        commands = _commandstats(container)
        requests_after = meter.snapshot()
    finally:
        container.close()
    delivered = receiver.arrivals.value
    dynamo = {
        name.removeprefix("dynamodb_"): (requests_after[name] - requests_before.get(name, 0.0)) / delivered
        for name in requests_after
        if name.startswith("dynamodb_") and name not in ("dynamodb_wru", "dynamodb_rru")
    }
    return {
        "jobs": delivered,
        "concurrency": concurrency,
        "shards": shards,
        "executor_cpu_ms_per_job": round(cpu_s * 1000 / delivered, 3),
        "jobs_per_s": round(delivered / wall_s, 1),
        "redis_commands_per_job": round(sum(commands.values()) / delivered, 2),
        # Submitting a job due now (the DynamoDB put, then index.lua straight onto the ready stream, and
        # the submitted statistic): with the executor's, what one job costs Redis end to end.
        "submit_redis_commands_per_job": round(sum(submit_commands.values()) / delivered, 2),
        "redis_commands_by_name_per_job": {k: round(v / delivered, 3) for k, v in sorted(commands.items())},
        "dynamodb_requests_per_job": {k: round(v, 3) for k, v in sorted(dynamo.items())},
    }


def _commandstats(container: Container) -> dict[str, int]:
    """Returns redis-server's calls by command since the last reset, less this bench's own INFO."""
    stats = container.redis.info("commandstats")
    calls = {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}
    calls.pop("info", None)
    calls.pop("config|resetstat", None)
    return calls


def _client_cpu_us(
    client: HttpCallbackClient, url: str, payload: bytes, requests: int, new_tenants: bool = False
) -> float:
    """Returns this thread's CPU µs per deliver() of payload to url (after one untimed warm-up); with
    new_tenants, each request is another tenant's."""
    request = CallbackRequest(url, "POST", {"Content-Type": "application/json"}, payload, 10.0)
    client.deliver(request)  # the thread's pool and connection made before timing
    tenants = [f"tenant-{n}" if new_tenants else request.tenant for n in range(requests)]
    started = time.thread_time()
    for tenant in tenants:
        result = client.deliver(request if tenant == request.tenant else replace(request, tenant=tenant))
        assert result.succeeded, result
    return (time.thread_time() - started) * 1e6 / requests


def callback(requests: int) -> dict[str, Any]:
    """CPU µs per request: HttpCallbackClient (to an IP, and to a host name with and without its DNS
    cache; the resolver answers at once, so only the client's own lookup work counts) against a raw
    kept-alive http.client, one thread each."""
    receiver = ReceiverProcess()
    try:
        payload = job_body("cb-0")
        figures: dict[str, float] = {}
        with HttpCallbackClient(allow_loopback=True) as client:
            figures["client_ip"] = _client_cpu_us(client, receiver.url + "/hook", payload, requests)
        with HttpCallbackClient(allow_loopback=True) as client:
            figures["client_ip_new_tenant"] = _client_cpu_us(
                client, receiver.url + "/hook", payload, requests, new_tenants=True
            )
        named_url = f"http://receiver.test:{receiver.port}/hook"
        for name, cache_s in (("client_name_uncached", 0.0), ("client_name_cached", 5.0)):
            with HttpCallbackClient(
                allow_loopback=True, resolver=lambda host, port: ["127.0.0.1"], dns_cache_s=cache_s
            ) as client:
                figures[name] = _client_cpu_us(client, named_url, payload, requests)
        raw = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=10)
        headers = {"Content-Type": "application/json"}
        raw.request("POST", "/hook", payload, headers)
        raw.getresponse().read()
        started = time.thread_time()
        for _ in range(requests):
            raw.request("POST", "/hook", payload, headers)
            response = raw.getresponse()
            response.read()
            assert response.status == 200
        figures["raw_http_client"] = (time.thread_time() - started) * 1e6 / requests
        # The check a kept connection passes right before its reuse, alone, on the idle kept-alive socket.
        started = time.thread_time()
        for _ in range(REUSE_CHECKS):
            assert not idle_socket_unusable(raw.sock)
        figures["reuse_check"] = (time.thread_time() - started) * 1e6 / REUSE_CHECKS
        raw.close()
    finally:
        receiver.close()
    return {
        "requests": requests,
        **{f"{name}_cpu_us_per_request": round(value, 1) for name, value in figures.items()},
        "client_ip_vs_raw": round(figures["client_ip"] / figures["raw_http_client"], 2),
    }


def main() -> None:
    """Runs the chosen measurement and prints its figures as JSON."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mode", choices=("engine", "callback"), default="engine")
    parser.add_argument("--jobs", type=int, default=int(1000 * float(os.environ.get("BENCH_SCALE", "1"))))
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--shards", type=int, default=1)
    parser.add_argument("--unmetered", action="store_true", help="the job store without the DynamoDB meter")
    parser.add_argument("--repeat", type=int, default=1, help="runs; each printed, then the medians")
    parser.add_argument("--tracing", choices=["off", "botocore", "http"], default="off")
    args = parser.parse_args()
    daemon = None if args.tracing == "off" else enable_tracing(args.tracing)
    runs = []
    for _ in range(args.repeat):
        figures = (
            engine(args.jobs, args.concurrency, args.shards, not args.unmetered, daemon)
            if args.mode == "engine"
            else callback(args.jobs)
        )
        print(json.dumps(figures), flush=True)
        runs.append(figures)
    numbers = [key for key, value in runs[0].items() if isinstance(value, float)]
    medians = {key: statistics.median(run[key] for run in runs) for key in numbers}
    if args.mode == "engine":
        medians["submit_redis_commands_per_job"] = statistics.median(
            run["submit_redis_commands_per_job"] for run in runs
        )
        medians["xreadgroup_per_job"] = statistics.median(
            run["redis_commands_by_name_per_job"].get("xreadgroup", 0.0) for run in runs
        )
    print("median:", json.dumps(medians))


if __name__ == "__main__":
    main()
