"""The receiver every system posts to: an aiohttp server in its own process that records each arrival.

POST /hook   records (job id from the JSON body's "id", arrival wall time in ns) and answers 200
GET /arrivals returns every arrival since the last reset as [[id, ns], ...]
GET /count   returns how many distinct jobs arrived since the last reset, with ?run=R only jobs of that run
             (ids "R-<n>"); cheap enough to poll: the bench polls it ten times a second, on the same cores
             as the systems it measures
POST /reset  forgets every arrival
GET /cpu     returns the CPU seconds the receiver's process has used (its clock, to the nanosecond)
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import socket
import time
from multiprocessing.connection import Connection

from aiohttp import web


def serve(port: int, ready: Connection) -> None:
    """Runs the receiver on 127.0.0.1:port until the process is terminated."""
    arrivals: list[tuple[str, int]] = []
    distinct: set[str] = set()
    by_run: dict[str, set[str]] = {}

    async def hook(request: web.Request) -> web.Response:
        body = await request.read()
        job_id = json.loads(body)["id"]
        arrivals.append((job_id, time.time_ns()))
        distinct.add(job_id)
        by_run.setdefault(job_id.rsplit("-", 1)[0], set()).add(job_id)
        return web.Response(text="ok")

    async def listing(_: web.Request) -> web.Response:
        return web.json_response(arrivals)

    async def count(request: web.Request) -> web.Response:
        run = request.query.get("run")
        return web.Response(text=str(len(distinct if run is None else by_run.get(run, ()))))

    async def cpu(_: web.Request) -> web.Response:
        return web.Response(text=repr(time.process_time()))

    async def reset(_: web.Request) -> web.Response:
        arrivals.clear()
        distinct.clear()
        by_run.clear()
        return web.Response(text="ok")

    async def main() -> None:
        app = web.Application()
        app.add_routes(
            [
                web.post("/hook", hook),
                web.get("/arrivals", listing),
                web.get("/count", count),
                web.get("/cpu", cpu),
                web.post("/reset", reset),
            ]
        )
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port, backlog=1024).start()
        ready.send(True)
        await asyncio.Event().wait()

    asyncio.run(main())


def free_port() -> int:
    """Returns a free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start() -> tuple[multiprocessing.Process, str]:
    """Starts the receiver process; returns it and its base URL."""
    port = free_port()
    ours, theirs = multiprocessing.Pipe()
    process = multiprocessing.get_context("spawn").Process(target=serve, args=(port, theirs), daemon=True)
    process.start()
    if not ours.poll(30):
        raise RuntimeError("receiver did not start")
    return process, f"http://127.0.0.1:{port}"
