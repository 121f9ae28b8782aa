"""Measures callback deliveries per second for the candidate HTTP transports, in one run.

Receiver: an aiohttp web server in a separate process (one asyncio loop, access log off), so that its
CPU is not shared with the client's GIL; it answers every POST with 200 "ok". Raw aiohttp with 50
concurrent requests sets the ceiling: if the receiver were the bottleneck, every client would converge
on the same figure.

Variants (each bounded by --requests and --cap-s, after a short warm-up on the same client):
  a   HttpCallbackClient shared by a ThreadPoolExecutor of --threads threads (what the executor does)
  a2  plain httpx.Client shared by the same threads (the pinning backend's overhead, by difference)
  b   sync httpx.Client, sequential
  c   httpx.AsyncClient, --concurrency concurrent
  c2  httpx.AsyncClient on the httpx-aiohttp transport, --concurrency concurrent
  d   raw aiohttp ClientSession, --concurrency concurrent (the reference for ratios)

Usage: .venv/bin/python bench/callback_transport.py [--requests 2000] [--cap-s 15] [--receiver-delay-ms 0]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import aiohttp
import httpx
import httpx_aiohttp
from aiohttp import web

from hookline.adapters.http.client import HttpCallbackClient
from hookline.domain.callbacks import CallbackRequest

BODY = b'{"job_id": "job_01HZX", "payload": {"order": 42, "items": [1, 2, 3]}, "note": "bench"}'
HEADERS = {
    "Content-Type": "application/json",
    "webhook-id": "job_01HZX",
    "webhook-timestamp": "1700000000",
    "webhook-signature": "v1," + "A" * 44,
    "Hookline-Attempt": "1",
}
WARMUP_REQUESTS = 50
TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Run:
    """Holds the outcome of one variant."""

    label: str
    done: int
    failed: int
    elapsed_s: float
    cpu_s: float  # this process's CPU time over all threads; steadier than req/s on a busy machine

    @property
    def rate(self) -> float:
        """Returns successful deliveries per second."""
        return self.done / self.elapsed_s if self.elapsed_s else 0.0

    @property
    def cpu_us_per_request(self) -> float:
        """Returns client CPU microseconds spent per delivery."""
        return 1e6 * self.cpu_s / max(1, self.done + self.failed)


def serve(port_out: multiprocessing.connection.Connection, delay_s: float) -> None:
    """Runs the aiohttp receiver on a free loopback port until the process is terminated."""

    async def hook(request: web.Request) -> web.Response:
        await request.read()
        if delay_s:
            await asyncio.sleep(delay_s)
        return web.Response(text="ok")

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/hook", hook)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        port_out.send(runner.addresses[0][1])
        await asyncio.Event().wait()

    asyncio.run(main())


def threaded(label: str, deliver: Callable[[], bool], total: int, threads: int, cap_s: float) -> Run:
    """Calls deliver from a ThreadPoolExecutor of threads workers until total calls or cap_s pass."""
    lock, issued, done, failed = threading.Lock(), [0], [0], [0]
    deadline = time.monotonic() + cap_s

    def worker() -> None:
        while True:
            with lock:
                if issued[0] >= total or time.monotonic() > deadline:
                    return
                issued[0] += 1
            ok = deliver()
            with lock:
                (done if ok else failed)[0] += 1

    started, cpu_started = time.monotonic(), time.process_time()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for _ in range(threads):
            pool.submit(worker)
    return Run(label, done[0], failed[0], time.monotonic() - started, time.process_time() - cpu_started)


async def concurrent(
    label: str, deliver: Callable[[], Awaitable[bool]], total: int, concurrency: int, cap_s: float
) -> Run:
    """Awaits deliver from concurrency tasks until total calls are made or cap_s passes."""
    issued, done, failed = 0, 0, 0
    deadline = time.monotonic() + cap_s

    async def worker() -> None:
        nonlocal issued, done, failed
        while issued < total and time.monotonic() <= deadline:
            issued += 1
            if await deliver():
                done += 1
            else:
                failed += 1

    started, cpu_started = time.monotonic(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Run(label, done, failed, time.monotonic() - started, time.process_time() - cpu_started)


def bench_hookline(url: str, args: argparse.Namespace) -> Run:
    """Variant a: the production client shared by a thread pool."""
    request = CallbackRequest(url=url, method="POST", headers=HEADERS, body=BODY, timeout_s=TIMEOUT_S)
    with HttpCallbackClient(allow_loopback=True) as client:

        def deliver() -> bool:
            return client.deliver(request).succeeded

        threaded("warmup", deliver, WARMUP_REQUESTS, args.threads, args.cap_s)
        label = f"a  HttpCallbackClient, {args.threads} threads"
        return threaded(label, deliver, args.requests, args.threads, args.cap_s)


def bench_httpx_threads(url: str, args: argparse.Namespace) -> Run:
    """Variant a2: plain httpx.Client shared by the same thread pool."""
    limits = httpx.Limits(max_connections=2 * args.threads, max_keepalive_connections=2 * args.threads)
    with httpx.Client(limits=limits, timeout=TIMEOUT_S) as client:

        def deliver() -> bool:
            return client.post(url, content=BODY, headers=HEADERS).status_code == 200

        threaded("warmup", deliver, WARMUP_REQUESTS, args.threads, args.cap_s)
        label = f"a2 httpx.Client, {args.threads} threads"
        return threaded(label, deliver, args.requests, args.threads, args.cap_s)


def bench_httpx_sequential(url: str, args: argparse.Namespace) -> Run:
    """Variant b: one sync httpx.Client, one request at a time."""
    with httpx.Client(timeout=TIMEOUT_S) as client:

        def deliver() -> bool:
            return client.post(url, content=BODY, headers=HEADERS).status_code == 200

        threaded("warmup", deliver, WARMUP_REQUESTS, 1, args.cap_s)
        return threaded("b  httpx.Client, sequential", deliver, args.requests, 1, args.cap_s)


async def bench_httpx_async(url: str, args: argparse.Namespace, aiohttp_transport: bool) -> Run:
    """Variants c and c2: httpx.AsyncClient on its own transport or on httpx-aiohttp's."""
    limits = httpx.Limits(max_connections=args.concurrency, max_keepalive_connections=args.concurrency)
    transport = httpx_aiohttp.AiohttpTransport(limits=limits) if aiohttp_transport else None
    async with httpx.AsyncClient(limits=limits, timeout=TIMEOUT_S, transport=transport) as client:

        async def deliver() -> bool:
            return (await client.post(url, content=BODY, headers=HEADERS)).status_code == 200

        await concurrent("warmup", deliver, WARMUP_REQUESTS, args.concurrency, args.cap_s)
        name = "c2 httpx.AsyncClient + httpx-aiohttp" if aiohttp_transport else "c  httpx.AsyncClient"
        return await concurrent(
            f"{name}, {args.concurrency} conc", deliver, args.requests, args.concurrency, args.cap_s
        )


async def bench_aiohttp(url: str, args: argparse.Namespace) -> Run:
    """Variant d: raw aiohttp, the reference."""
    connector = aiohttp.TCPConnector(limit=args.concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def deliver() -> bool:
            async with session.post(url, data=BODY, headers=HEADERS) as response:
                await response.read()
                return response.status == 200

        await concurrent("warmup", deliver, WARMUP_REQUESTS, args.concurrency, args.cap_s)
        label = f"d  aiohttp, {args.concurrency} concurrent"
        return await concurrent(label, deliver, args.requests, args.concurrency, args.cap_s)


def main() -> None:
    """Starts the receiver, runs every variant and prints the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--cap-s", type=float, default=15.0)
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=50)
    # A real receiver takes tens of milliseconds; with a delay, concurrency matters more than CPU per call.
    parser.add_argument("--receiver-delay-ms", type=float, default=0.0)
    args = parser.parse_args()

    port_in, port_out = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.get_context("spawn").Process(
        target=serve, args=(port_out, args.receiver_delay_ms / 1000), daemon=True
    )
    server.start()
    try:
        url = f"http://127.0.0.1:{port_in.recv()}/hook"
        print(
            f"receiver: aiohttp in pid {server.pid}, answering after {args.receiver_delay_ms:g} ms; "
            f"{os.cpu_count()} CPUs; {args.requests} requests per variant"
        )
        runs = [
            bench_hookline(url, args),
            bench_httpx_threads(url, args),
            bench_httpx_sequential(url, args),
            asyncio.run(bench_httpx_async(url, args, aiohttp_transport=False)),
            asyncio.run(bench_httpx_async(url, args, aiohttp_transport=True)),
            asyncio.run(bench_aiohttp(url, args)),
        ]
    finally:
        server.terminate()
        server.join()
        port_in.close()
        port_out.close()
    reference = runs[-1].rate
    print(f"{'variant':<48}{'done':>6}{'failed':>7}{'seconds':>8}{'req/s':>7}{'vs d':>6}{'cpu us/req':>11}")
    for run in runs:
        ratio = run.rate / reference if reference else 0.0
        print(
            f"{run.label:<48}{run.done:>6}{run.failed:>7}{run.elapsed_s:>8.2f}{run.rate:>7.0f}{ratio:>6.2f}"
            f"{run.cpu_us_per_request:>11.0f}"
        )


if __name__ == "__main__":
    main()
