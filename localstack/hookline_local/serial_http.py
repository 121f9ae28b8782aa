"""Serves a WSGI application over HTTP/1.1 from one thread: many keep-alive connections, one request at a
time; for the dev moto server.

moto's work is pure Python, so threads serving it in parallel only queue on the interpreter lock (and
switching between them costs more than it gives). werkzeug's serial server answers over HTTP/1.0 and
closes every connection, so each AWS call pays a new TCP connection on both sides; a threaded server
keeps connections open but brings the thread switching back. This server waits on all its connections
with a selector and answers whichever has a whole request, in arrival order, keeping each connection
open for the client's next call (botocore keeps a pool of them).

It takes what AWS SDKs send: a request line, headers and a Content-Length body (no chunked uploads and
no `Expect: 100-continue`, which it answers with 411 and 417 and a close). Each request is logged as
one access line on stderr, like werkzeug's, followed by the AWS operation (X-Amz-Target) when there is one.
"""

from __future__ import annotations

import io
import selectors
import socket
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024
WRITE_TIMEOUT_S = 30.0  # a client that stops reading its response blocks the server at most this long
_HEAD_END = b"\r\n\r\n"
_FRAMING_HEADERS = {"content-length", "connection", "transfer-encoding"}  # this server writes its own


class BadRequest(Exception):
    """A request this server cannot take; carries the status to answer with before closing."""

    def __init__(self, status: str) -> None:
        super().__init__(status)
        self.status = status


class _Connection:
    """One client connection and the bytes received on it not yet taken as a request."""

    def __init__(self, sock: socket.socket, address: tuple[str, int]) -> None:
        self.sock = sock
        self.address = address
        self.buffer = bytearray()

    def take_request(self) -> tuple[list[str], list[tuple[str, str]], bytes] | None:
        """Removes one whole request from the buffer: (request line parts, headers, body), or None
        while it is incomplete. Raises BadRequest for a request this server does not take."""
        head_end = self.buffer.find(_HEAD_END)
        if head_end < 0:
            if len(self.buffer) > MAX_HEAD_BYTES:
                raise BadRequest("431 Request Header Fields Too Large")
            return None
        request_line, headers = parse_head(bytes(self.buffer[:head_end]))
        length = _body_length(headers)
        body_start = head_end + len(_HEAD_END)
        if len(self.buffer) < body_start + length:
            return None
        body = bytes(self.buffer[body_start : body_start + length])
        del self.buffer[: body_start + length]
        return request_line, headers, body


def parse_head(head: bytes) -> tuple[list[str], list[tuple[str, str]]]:
    """Returns the request line's parts (method, target, version) and the headers of a request head."""
    lines = head.decode("latin-1").split("\r\n")
    request_line = lines[0].split()
    if len(request_line) != 3 or not request_line[2].startswith("HTTP/"):
        raise BadRequest("400 Bad Request")
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            raise BadRequest("400 Bad Request")
        headers.append((name.strip(), value.strip()))
    return request_line, headers


def _body_length(headers: list[tuple[str, str]]) -> int:
    """Returns the Content-Length of a request this server takes; raises BadRequest otherwise."""
    names = {name.lower(): value for name, value in headers}
    if "transfer-encoding" in names:
        raise BadRequest("411 Length Required")
    if names.get("expect", "").lower() == "100-continue":
        raise BadRequest("417 Expectation Failed")
    try:
        length = int(names.get("content-length", "0"))
    except ValueError:
        raise BadRequest("400 Bad Request") from None
    if not 0 <= length <= MAX_BODY_BYTES:
        raise BadRequest("413 Content Too Large")
    return length


def wsgi_environ(
    request_line: list[str],
    headers: list[tuple[str, str]],
    body: bytes,
    server: tuple[str, int],
    client: tuple[str, int],
) -> dict[str, Any]:
    """Returns the WSGI environ (PEP 3333) of one request."""
    method, target, version = request_line
    path, _, query = target.partition("?")
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": unquote(path, "latin-1"),
        "QUERY_STRING": query,
        "RAW_URI": target,
        "REQUEST_URI": target,
        "SERVER_NAME": server[0],
        "SERVER_PORT": str(server[1]),
        "SERVER_PROTOCOL": version,
        "REMOTE_ADDR": client[0],
        "REMOTE_PORT": str(client[1]),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    for name, value in headers:
        key = name.upper().replace("-", "_")
        if key in {"CONTENT_TYPE", "CONTENT_LENGTH"}:
            environ[key] = value
            continue
        key = "HTTP_" + key
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    return environ


def _keep_alive(version: str, headers: list[tuple[str, str]]) -> bool:
    tokens = {
        token.strip().lower()
        for name, value in headers
        if name.lower() == "connection"
        for token in value.split(",")
    }
    if version == "HTTP/1.1":
        return "close" not in tokens
    return "keep-alive" in tokens


def run_app(app: WsgiApp, environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bytes]:
    """Calls the application; returns its status, headers and whole body."""
    started: list[Any] = []

    def start_response(status: str, response_headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        if exc_info is not None and started:
            raise exc_info[1].with_traceback(exc_info[2])
        started[:] = [status, response_headers]
        return body.append

    body: list[bytes] = []
    result = app(environ, start_response)
    try:
        body.extend(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    status, response_headers = started
    return status, list(response_headers), b"".join(body)


def _response_bytes(
    status: str, headers: list[tuple[str, str]], body: bytes, keep_alive: bool, method: str
) -> bytes:
    kept = [(n, v) for n, v in headers if n.lower() not in _FRAMING_HEADERS]
    lines = [f"HTTP/1.1 {status}", *(f"{n}: {v}" for n, v in kept)]
    lines.append(f"Content-Length: {len(body)}")
    lines.append("Connection: keep-alive" if keep_alive else "Connection: close")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head if method == "HEAD" else head + body


class SerialHttpServer:
    """Listens on host:port and serves app until shutdown() (from another thread) or a signal."""

    def __init__(self, host: str, port: int, app: WsgiApp, log: Callable[[str], None] | None = None) -> None:
        self.app = app
        self._log = log if log is not None else _stderr_line
        self._listener = socket.create_server((host, port), backlog=128)
        self._listener.setblocking(False)
        self.server_address: tuple[str, int] = self._listener.getsockname()[:2]
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._running = True

    def serve_forever(self, poll_interval_s: float = 0.5) -> None:
        """Accepts connections and answers requests until shutdown()."""
        try:
            while self._running:
                for key, _ in self._selector.select(timeout=poll_interval_s):
                    if key.fileobj is self._listener:
                        self._accept()
                    else:
                        self._receive(key.data)
        finally:
            self._close_all()

    def shutdown(self) -> None:
        """Makes serve_forever return within its poll interval."""
        self._running = False

    def _accept(self) -> None:
        while True:
            try:
                sock, address = self._listener.accept()
            except BlockingIOError:
                return
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._selector.register(sock, selectors.EVENT_READ, _Connection(sock, address))

    def _receive(self, connection: _Connection) -> None:
        try:
            data = connection.sock.recv(256 * 1024)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop(connection)
            return
        connection.buffer += data
        while True:
            try:
                request = connection.take_request()
            except BadRequest as refused:
                self._send(connection, _response_bytes(refused.status, [], b"", False, "GET"))
                self._drop(connection)
                return
            if request is None:
                return
            if not self._answer(connection, *request):
                self._drop(connection)
                return

    def _answer(
        self, connection: _Connection, request_line: list[str], headers: list[tuple[str, str]], body: bytes
    ) -> bool:
        """Answers one request; returns whether the connection stays open."""
        environ = wsgi_environ(request_line, headers, body, self.server_address, connection.address)
        try:
            status, response_headers, response_body = run_app(self.app, environ)
        except Exception as error:  # the app failed: answer 500 as werkzeug's server does
            self._log(f"error serving {request_line[1]}: {error!r}")
            status, response_headers, response_body = "500 Internal Server Error", [], b""
        keep_alive = _keep_alive(request_line[2], headers)
        # Logged before the answer goes out, so a client that has its answer finds the line written. An
        # AWS JSON call is all POST /; its X-Amz-Target ends the line so requests can be counted by operation.
        target = next((value for name, value in headers if name.lower() == "x-amz-target"), None)
        self._log(
            f"{connection.address[0]} - - [{time.strftime('%d/%b/%Y %H:%M:%S')}] "
            f'"{" ".join(request_line)}" {status.split()[0]} -' + (f" {target}" if target else "")
        )
        sent = self._send(
            connection, _response_bytes(status, response_headers, response_body, keep_alive, request_line[0])
        )
        return sent and keep_alive

    @staticmethod
    def _send(connection: _Connection, data: bytes) -> bool:
        sock = connection.sock
        try:
            sock.settimeout(WRITE_TIMEOUT_S)
            sock.sendall(data)
            sock.setblocking(False)
        except OSError:
            return False
        return True

    def _drop(self, connection: _Connection) -> None:
        self._selector.unregister(connection.sock)
        connection.sock.close()

    def _close_all(self) -> None:
        for key in list(self._selector.get_map().values()):
            self._selector.unregister(key.fileobj)
            key.fileobj.close()  # type: ignore[union-attr]
        self._selector.close()


def _stderr_line(line: str) -> None:
    sys.stderr.write(line + "\n")
