"""DynamoDB faults moto cannot produce, injected on the wire: an HTTP proxy in front of moto's server.

Point a client (boto3's or the engine's JSON client) at DynamoFaultProxy.url and every request goes to moto
unchanged, except those a planned fault matches, which the proxy answers itself as DynamoDB would:

- transactions: TransactWriteItems cancelled with a reason code (the fakes' TransactionCancellations plan:
  TransactionCanceledException with one CancellationReasons entry per item, the reason at one index);
- failing_updates: UpdateItem calls whose UpdateExpression is a given one answered with a 500
  (InternalServerError, as in a brownout that hits some writes);
- replies: writes whose reply is lost (the fakes' LostReplies plan): the request goes on to moto and is
  applied, `between` runs (another writer's request that reaches the table first), and the client's
  connection is then reset without a reply, as when a reply is lost on the way. The client cannot tell
  whether its write happened and sends it again by its own retry (botocore's standard mode, the JSON
  client's), and gets the repeat's answer.

So a fault test runs the clients production runs, retries, error parsing and all.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import struct
import threading
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from tests.fakes.faults import LostReplies, TransactionCancellations

SHUTDOWN_POLL_S = 0.05
UPSTREAM_TIMEOUT_S = 30.0
# Headers of one hop only: not passed on in either direction (Content-Length is set anew).
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
    }
)
_TYPE_PREFIX = "com.amazonaws.dynamodb.v20120810#"


class FailingUpdates:
    """Fails (a 500) the UpdateItem calls whose UpdateExpression is `expression`; counts them. Thread-safe."""

    def __init__(self, expression: str | None = None) -> None:
        self._lock = threading.Lock()
        self.expression = expression
        self.failed = 0

    def take(self, params: dict[str, Any]) -> bool:
        """Tells whether this UpdateItem fails (and counts it)."""
        with self._lock:
            if self.expression is None or params.get("UpdateExpression") != self.expression:
                return False
            self.failed += 1
            return True


class LosingReplies(LostReplies):
    """The fakes' LostReplies plan, on the wire: only writes (WRITES) can lose their reply.

    between() runs on the proxy's thread while the client waits for its reply; what it raises is kept in
    `errors` (the dynamo_faults fixture fails the test with it).
    """

    WRITES = frozenset({"put_item", "update_item", "transact_write_items"})

    def __init__(self) -> None:
        super().__init__()
        self.errors: list[BaseException] = []

    def lose(self, operation: str, count: int = 1, between: Callable[[], object] | None = None) -> None:
        """Loses the reply of the next count requests of operation (put_item, update_item or
        transact_write_items), running between() before each repeat."""
        if operation not in self.WRITES:
            raise ValueError(f"only writes lose replies here, not {operation}")
        super().lose(operation, count, between)

    def run_between(self, between: Callable[[], object]) -> None:
        """Runs between(), keeping what it raises in errors."""
        try:
            between()
        except Exception as error:  # kept for the fixture, which fails the test with it
            self.errors.append(error)


# The wire operations whose replies can be lost, by the client method name the plans use.
_WRITE_METHODS = {
    "PutItem": "put_item",
    "UpdateItem": "update_item",
    "TransactWriteItems": "transact_write_items",
}


class DynamoFaultProxy:
    """Forwards DynamoDB requests to upstream (moto), answering the planned faults itself.

    Runs a ThreadingHTTPServer on 127.0.0.1 while in a `with` block; each handler thread keeps its own
    connection to upstream. The plans (`transactions`, `failing_updates`, `replies`) may be replaced or
    changed at any time.
    """

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.transactions = TransactionCancellations()
        self.failing_updates = FailingUpdates()
        self.replies = LosingReplies()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.proxy = self
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": SHUTDOWN_POLL_S},
            name="dynamo-fault-proxy",
            daemon=True,
        )

    @property
    def url(self) -> str:
        """Returns the endpoint URL to give a DynamoDB client."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def reset(self) -> None:
        """Drops every planned fault and its counts."""
        self.transactions = TransactionCancellations()
        self.failing_updates = FailingUpdates()
        self.replies = LosingReplies()

    def fault_for(self, target: str, body: bytes) -> tuple[int, dict[str, Any]] | None:
        """Returns the (status, error document) a planned fault answers to this request, or None."""
        operation = target.rpartition(".")[2]
        if operation not in ("TransactWriteItems", "UpdateItem"):
            return None
        params = json.loads(body)
        if operation == "UpdateItem":
            if not self.failing_updates.take(params):
                return None
            return 500, {"__type": f"{_TYPE_PREFIX}InternalServerError", "message": "Internal server error"}
        reasons = self.transactions.take(len(params.get("TransactItems", [])))
        if reasons is None:
            return None
        return 400, {
            "__type": f"{_TYPE_PREFIX}TransactionCanceledException",
            "Message": f"Transaction cancelled, please refer cancellation reasons for specific reasons "
            f"[{', '.join(reasons)}]",
            "CancellationReasons": [
                {"Code": reason} if reason == "None" else {"Code": reason, "Message": f"{reason} (injected)"}
                for reason in reasons
            ],
        }

    def lost_reply(self, target: str) -> Callable[[], object] | None:
        """Returns what runs before the repeat when this request's reply is to be lost, else None."""
        method = _WRITE_METHODS.get(target.rpartition(".")[2])
        return None if method is None else self.replies.take(method)

    def forward(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[Any], bytes]:
        """Sends the request to upstream on this thread's connection; returns status, headers and body."""
        local = _LOCAL.__dict__
        for fresh in (False, True):
            connection = local.get("upstream")
            if connection is None or fresh:
                if connection is not None:
                    connection.close()
                connection = local["upstream"] = http.client.HTTPConnection(
                    *self._upstream, timeout=UPSTREAM_TIMEOUT_S
                )
            try:
                connection.request(method, path, body, headers)
                response = connection.getresponse()
                return response.status, response.getheaders(), response.read()
            except (OSError, http.client.HTTPException):
                if fresh:
                    raise
        raise AssertionError("unreachable")

    def __enter__(self) -> DynamoFaultProxy:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


_LOCAL = threading.local()  # each handler thread's connection to upstream


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    proxy: DynamoFaultProxy


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The head and the body go out in two writes: with Nagle's algorithm the body would wait for the
    # client's delayed ACK of the head (40 ms a call).
    disable_nagle_algorithm = True
    server: _Server

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        proxy = self.server.proxy
        fault = proxy.fault_for(self.headers.get("X-Amz-Target", ""), body)
        if fault is not None:
            status, document = fault
            payload = json.dumps(document).encode()
            headers: list[Any] = [
                ("Content-Type", "application/x-amz-json-1.0"),
                ("x-amz-crc32", str(zlib.crc32(payload))),
                ("x-amzn-RequestId", "injected-fault"),
            ]
        else:
            forwarded = {
                name: value for name, value in self.headers.items() if name.lower() not in HOP_BY_HOP
            }
            status, headers, payload = proxy.forward("POST", self.path, forwarded, body)
            between = proxy.lost_reply(self.headers.get("X-Amz-Target", ""))
            if between is not None:  # applied (or refused) upstream; the reply never comes back
                proxy.replies.run_between(between)
                self._reset()
                return
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _reset(self) -> None:
        """Closes the client's connection with SO_LINGER 0 (an RST, not a FIN), sending nothing."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()

    def log_message(self, format: str, *args: Any) -> None:
        pass
