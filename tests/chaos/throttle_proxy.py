"""An HTTP proxy in front of moto that throttles DynamoDB.

    python -m tests.chaos.throttle_proxy --listen-port P --target-port T

Each DynamoDB request (an `X-Amz-Target: DynamoDB_20120810.*` POST) is refused, with the probability the
proxy is set to, as DynamoDB refuses a request over its throughput: HTTP 400 with the JSON error
ProvisionedThroughputExceededException, which the AWS clients retry with back-off and then raise. A refused
request never reaches moto, so nothing was written. Everything else is forwarded as it came.

`PUT /__chaos/throttle` with the fraction as its body (0: none, 1: every request) sets it; `GET
/__chaos/throttle` answers the counts so far as JSON. One thread per connection, one kept-alive upstream
connection per thread.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONTROL_PATH = "/__chaos/throttle"
THROTTLED = json.dumps(
    {
        "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
        "message": "The level of configured provisioned throughput for the table was exceeded.",
    }
).encode()
UPSTREAM_TIMEOUT_S = 60.0
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


class State:
    """The throttled fraction and the counts; shared by every connection's thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.fraction = 0.0
        self.throttled = 0
        self.forwarded = 0

    def refuse(self) -> bool:
        """Tells whether to throttle this request, and counts it."""
        with self.lock:
            refused = random.random() < self.fraction
            if refused:
                self.throttled += 1
            else:
                self.forwarded += 1
            return refused


class Handler(BaseHTTPRequestHandler):
    """Answers the control path, throttles DynamoDB requests, forwards the rest."""

    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, format: str, *args: object) -> None:
        """Logs nothing per request (thousands a scenario)."""

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def _handle(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        state = self.server.state
        if self.path == CONTROL_PATH:
            if self.command == "PUT":
                with state.lock:
                    state.fraction = float(body.decode())
            with state.lock:
                counts = {
                    "fraction": state.fraction,
                    "throttled": state.throttled,
                    "forwarded": state.forwarded,
                }
            self._answer(200, [("Content-Type", "application/json")], json.dumps(counts).encode())
            return
        target = self.headers.get("X-Amz-Target") or ""
        if target.startswith("DynamoDB_") and state.refuse():
            self._answer(400, [("Content-Type", "application/x-amz-json-1.0")], THROTTLED)
            return
        self._forward(body)

    def _forward(self, body: bytes) -> None:
        upstream = self._upstream()
        headers = {name: value for name, value in self.headers.items() if name.lower() not in _HOP_BY_HOP}
        try:
            upstream.request(self.command, self.path, body=body, headers=headers)
            reply = upstream.getresponse()
            data = reply.read()
        except (OSError, http.client.HTTPException):
            upstream.close()
            self._answer(502, [], b"")
            return
        kept = [(name, value) for name, value in reply.getheaders() if name.lower() not in _HOP_BY_HOP]
        self._answer(reply.status, kept, data)

    def _upstream(self) -> http.client.HTTPConnection:
        local = self.server.local
        connection = getattr(local, "connection", None)
        if connection is None:
            connection = http.client.HTTPConnection(
                "127.0.0.1", self.server.target_port, timeout=UPSTREAM_TIMEOUT_S
            )
            local.connection = connection
        return connection

    def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(ThreadingHTTPServer):
    """The proxy's server: its state and where it forwards."""

    daemon_threads = True
    request_queue_size = 256

    def __init__(self, listen_port: int, target_port: int) -> None:
        super().__init__(("127.0.0.1", listen_port), Handler)
        self.state = State()
        self.target_port = target_port
        self.local = threading.local()


def main(argv: list[str] | None = None) -> int:
    """Parses the ports and serves until killed."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--listen-port", type=int, required=True)
    parser.add_argument("--target-port", type=int, required=True)
    args = parser.parse_args(argv)
    Server(args.listen_port, args.target_port).serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
