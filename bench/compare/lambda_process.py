"""One Hookline function as Lambda runs it: its template handler module, imported once, invoked in a loop.

    python -m bench.compare.lambda_process SubmitFunction|PromoteFunction|ExecuteFunction <port file>

The module (functions/*/app.py, found through template.yaml's Handler) is imported as a cold start does:
Powertools' Logger, Metrics and Tracer, the container, the start-up checks; each invocation gets a
context whose remaining time starts at the template's Timeout. Logs and EMF metric lines go to stdout,
which the bench sends to a file, as Lambda sends them to CloudWatch. Tracing is off
(POWERTOOLS_TRACE_DISABLED): with no X-Ray daemon to send to, its cost could not be measured here.

One substitution: the container's DynamoDB stores are the bench's store server, reached over loopback
(BENCH_STORE_ADDRESS, store_server.RemoteStore), instead of the DynamoDB adapters.

PromoteFunction and ExecuteFunction invoke back to back until SIGTERM, as EventBridge and fan-out keep
them running. SubmitFunction is one API sandbox: it listens on a loopback port (written to the port file)
and serves one client connection at a time, one request after another, as a Lambda sandbox serves one
invocation at a time. A request is (method, path, headers, body); the sandbox builds the proxy event from
it as API Gateway would (that work is counted in the sandbox's CPU) and answers (status, body).
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
import time
from multiprocessing.connection import Listener
from pathlib import Path
from typing import Any

from bench.compare.store_server import BACKLOG, RemoteStore
from hookline.plumbing import wiring
from hookline_local.gateway import HttpRequest, build_event
from hookline_local.runtime import LambdaFunction, function_spec, load_function
from hookline_local.template import load_template

REPO = Path(__file__).resolve().parents[2]
STAGE = "v1"


def use_store_server(address: tuple[str, int]) -> None:
    """Makes every Container of this process use the store server for its DynamoDB stores."""
    remote = {name: RemoteStore(address, name) for name in ("jobs", "keys", "schedules")}
    wiring.Container.jobs = property(lambda _: remote["jobs"])  # type: ignore[assignment,method-assign]
    wiring.Container.keys = property(lambda _: remote["keys"])  # type: ignore[assignment,method-assign]
    wiring.Container.schedule_store = property(lambda _: remote["schedules"])  # type: ignore[assignment,method-assign]


def load(function_id: str) -> LambdaFunction:
    """Imports the function's module as its cold start does."""
    host, port = os.environ["BENCH_STORE_ADDRESS"].rsplit(":", 1)
    use_store_server((host, int(port)))
    spec = function_spec(
        load_template(REPO / "template.yaml"), REPO, function_id, "us-east-1", Path("/dev/null")
    )
    return load_function(spec)


def serve_api(function: LambdaFunction, port_file: Path) -> None:
    """Answers requests, one connection at a time, one request at a time."""
    with Listener(("127.0.0.1", 0), backlog=BACKLOG) as listener:
        port_file.write_text(str(listener.address[1]))
        while True:
            with listener.accept() as connection:
                while True:
                    try:
                        method, path, headers, body = connection.recv()
                    except (EOFError, OSError):
                        break
                    request = HttpRequest(method, path, headers, body)
                    reply: Any = function.invoke(build_event(request, path, {}, STAGE))
                    connection.send((int(reply["statusCode"]), reply.get("body") or ""))


def _end_with_parent() -> None:
    """Ends this process once the bench that started it is gone (it runs in a session of its own, so a
    bench killed mid-run would otherwise leave it running)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def main(function_id: str, port_file: str) -> None:
    """Loads the function, then invokes it until SIGTERM (or until the bench is gone)."""
    _end_with_parent()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1 <pid>`: every thread's stack
    function = load(function_id)
    if function_id == "SubmitFunction":
        serve_api(function, Path(port_file))
        return
    Path(port_file).write_text("ready")
    while True:
        function.invoke({})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
