"""A loopback server that answers with raw bytes, for responses no real HTTP server would send."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Callable
from types import TracebackType

ACCEPT_POLL_S = 0.05
HANDLER_JOIN_S = 5.0
SOCKET_TIMEOUT_S = 10.0
READ_CHUNK = 65536
MAX_REQUEST_BYTES = 1 << 20


class RawConnection:
    """One accepted connection: reads the request, counts every byte sent back."""

    def __init__(self, sock: socket.socket, stop: threading.Event) -> None:
        self.sock = sock
        self.stop = stop
        self.sent = 0

    def read_request(self) -> bytes:
        """Reads the request head and a Content-Length body (bounded by MAX_REQUEST_BYTES)."""
        data = b""
        while b"\r\n\r\n" not in data and len(data) < MAX_REQUEST_BYTES:
            chunk = self.sock.recv(READ_CHUNK)
            if not chunk:
                return data
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(body) < min(length, MAX_REQUEST_BYTES):
            chunk = self.sock.recv(READ_CHUNK)
            if not chunk:
                break
            body += chunk
        return head + b"\r\n\r\n" + body

    def send(self, data: bytes) -> bool:
        """Sends data; returns False once the client has gone (nothing more can be sent)."""
        try:
            self.sock.sendall(data)
        except OSError:
            return False
        self.sent += len(data)
        return True


Handler = Callable[[RawConnection], None]


class RawServer:
    """Accepts connections on a loopback address and runs handler on each, one thread per connection.

    `connections` lists every connection served, so a test can read how many bytes each got out before
    the client closed it; `__exit__` stops the handlers and waits for them.
    """

    def __init__(
        self,
        handler: Handler,
        tls: ssl.SSLContext | None = None,
        receive_buffer: int = 0,
        host: str = "127.0.0.1",
    ) -> None:
        """tls: serve HTTPS with this server-side context; receive_buffer: SO_RCVBUF of every accepted
        connection (small, so a client's large request waits for the server to read); host: the loopback
        address to listen on ("::1" for IPv6)."""
        self._handler = handler
        self._tls = tls
        self._host = host
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.create_server((host, 0), family=family)
        if receive_buffer:
            self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self._listener.settimeout(ACCEPT_POLL_S)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self.connections: list[RawConnection] = []
        self.port = int(self._listener.getsockname()[1])

    def url(self, path: str = "/hook") -> str:
        """Returns the URL of path on this server."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self.port}{path}"

    def __enter__(self) -> RawServer:
        self._acceptor.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._acceptor.join(timeout=HANDLER_JOIN_S)
        for thread in list(self._threads):
            thread.join(timeout=HANDLER_JOIN_S)
        self._listener.close()

    def wait_done(self, timeout_s: float) -> bool:
        """Waits up to timeout_s for every handler started so far to return; False if one still runs."""
        deadline_s = time.monotonic() + timeout_s
        for thread in list(self._threads):
            thread.join(timeout=max(0.0, deadline_s - time.monotonic()))
        return not any(thread.is_alive() for thread in self._threads)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            sock.settimeout(SOCKET_TIMEOUT_S)  # no handler outlives a client that stopped reading for long
            connection = RawConnection(sock, self._stop)
            self.connections.append(connection)
            thread = threading.Thread(target=self._serve, args=(connection,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, connection: RawConnection) -> None:
        # OSError: the client hung up mid-request (or the handshake failed), so there is nothing to answer.
        with contextlib.ExitStack() as closing, contextlib.suppress(OSError):
            closing.enter_context(connection.sock)
            if self._tls is not None:  # the TLS socket takes the plain one's descriptor over
                connection.sock = closing.enter_context(
                    self._tls.wrap_socket(connection.sock, server_side=True)
                )
            self._handler(connection)


def replying(raw: bytes) -> Handler:
    """Returns a handler that reads the request, writes raw and closes the connection."""

    def handle(connection: RawConnection) -> None:
        connection.read_request()
        connection.send(raw)

    return handle
