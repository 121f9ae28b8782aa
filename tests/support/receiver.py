"""A real loopback HTTP receiver for tests: records every request and answers with scripted replies."""

from __future__ import annotations

import ssl
import sys
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

WAIT_POLL_S = 0.01
SHUTDOWN_POLL_S = 0.02


@dataclass(frozen=True)
class RecordedRequest:
    """Describes one request as the receiver saw it.

    Attributes:
        method: The HTTP method.
        path: The request target (path and query).
        headers: Header names lower-cased; a repeated header keeps its last value.
        body: The raw body bytes.
        received_ms: Wall time of arrival, in Unix milliseconds.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    received_ms: int


@dataclass(frozen=True)
class Reply:
    """Describes one scripted answer.

    Attributes:
        status: The HTTP status code.
        headers: Extra response headers (Content-Length is always set by the receiver).
        body: The response body.
        delay_s: How long to wait before answering, to provoke client timeouts.
    """

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    delay_s: float = 0.0


class _Server(ThreadingHTTPServer):
    """Carries the receiver back to each handler; handler threads are daemons so a hung client never
    blocks interpreter exit."""

    daemon_threads = True
    # The default backlog of 5 drops connections when many clients connect at once.
    request_queue_size = 128
    receiver: Receiver

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignores clients that hung up (a timed-out client leaves a delayed reply nowhere to go)."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """Records the request and writes the next scripted reply, over keep-alive HTTP/1.1."""

    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        """Handles GET."""
        self._handle()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        recorded = RecordedRequest(self.command, self.path, headers, body, time.time_ns() // 1_000_000)
        reply = self.server.receiver._record(recorded)
        if reply.delay_s:
            time.sleep(reply.delay_s)
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        # Always frame the body so that keep-alive clients know where the response ends.
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(reply.body)

    def log_message(self, format: str, *args: Any) -> None:
        """Stays quiet: pytest output is for failures."""


class Receiver:
    """Runs a ThreadingHTTPServer on 127.0.0.1 (a free port) in a daemon thread while in a `with` block.

    Handler threads are daemons and answer keep-alive connections until the client closes them. Request
    bodies must be framed by Content-Length (chunked uploads are not read).
    """

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        """Binds the listening socket (the server starts on entering the `with` block).

        Args:
            tls: A server-side context to serve HTTPS instead of HTTP.
        """
        self._scheme = "http" if tls is None else "https"
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._scripts: dict[str, deque[Reply]] = defaultdict(deque)
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.receiver = self
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            # shutdown() waits up to one poll interval; the default 0.5 s would slow every test.
            kwargs={"poll_interval": SHUTDOWN_POLL_S},
            name="receiver",
            daemon=True,
        )

    @property
    def port(self) -> int:
        """Returns the TCP port the receiver listens on."""
        return int(self._server.server_address[1])

    def url(self, path: str = "/hook") -> str:
        """Returns the receiver's URL for path."""
        return f"{self._scheme}://127.0.0.1:{self.port}{path}"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Returns a copy of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def script(self, path: str, responses: list[Reply]) -> None:
        """Queues replies for path, used in order; once they run out the answer is a plain 200.

        Args:
            path: The request target to match exactly (path and query).
            responses: Replies to give, one per request.
        """
        with self._lock:
            self._scripts[path].extend(responses)

    def wait_for(self, count: int, timeout_s: float) -> list[RecordedRequest]:
        """Waits until at least count requests arrived.

        Args:
            count: How many requests to wait for.
            timeout_s: How long to wait at most.

        Returns:
            Every request received so far.

        Raises:
            AssertionError: Fewer than count requests arrived in time.
        """
        for _ in range(max(1, int(timeout_s / WAIT_POLL_S))):
            received = self.requests
            if len(received) >= count:
                return received
            time.sleep(WAIT_POLL_S)
        received = self.requests
        if len(received) >= count:
            return received
        seen = [f"{r.method} {r.path}" for r in received]
        raise AssertionError(f"expected {count} requests within {timeout_s} s, got {len(received)}: {seen}")

    def _record(self, request: RecordedRequest) -> Reply:
        """Stores request and returns the reply scripted for its path."""
        with self._lock:
            self._requests.append(request)
            queue = self._scripts.get(request.path)
            return queue.popleft() if queue else Reply()

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
