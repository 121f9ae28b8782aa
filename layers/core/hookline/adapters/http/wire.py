"""A minimal HTTP/1.1 client connection: what one callback attempt needs, over a plain or TLS socket.

Why not httpcore and h11: a callback is one small request and one response whose body is kept only up to a
preview, and httpcore with h11 spent about 310 µs of CPU on it, twice a raw `http.client` (whose header
parsing through the email package is itself most of its 160 µs). This module does that request in about a
quarter of httpcore's CPU (bench/hotpath.py `--mode callback` prints the figures).

What it does: one request at a time per connection, the body framed by Content-Length; responses framed
by Content-Length, chunked transfer coding, or the end of the connection; informational (1xx) responses
skipped; keep-alive when the response allows it. What it never does: follow redirects, decompress, use a
proxy, pipeline, speak HTTP/2, or resolve a name (the caller passes the checked address).

A receiver controls every byte of its answer, so the parser is strict and bounded rather than lenient:
- the status line and headers together are at most MAX_HEAD_BYTES (as h11's default), CRLF-terminated;
- a header name is an RFC 9110 token, a value has no control character but HTAB (no NUL, no bare CR);
  obsolete line folding is refused;
- Content-Length is ASCII digits (repeated values must agree), Transfer-Encoding only `chunked`;
- a body is read only up to the caller's limit, then the connection is closed rather than drained;
- every socket operation is bounded by the attempt's deadline (a `time.monotonic()` value), so a receiver
  that drips one byte a second is cut at the deadline, not once per byte's timeout.

The socket is non-blocking once connected, and every wait is this module's own poll() until the deadline.
A socket with a timeout would do the same inside CPython, at a cost: settimeout() before each operation
(to clamp it to the deadline) lets go of the interpreter lock around an ioctl, and each send or recv polls
before its syscall, each again outside the lock. Among a process's delivery threads every such release is
a thread switch; this way an exchange releases the lock for its send, one poll and its recv.
Anything it refuses is a `ProtocolViolation`: nothing the receiver sends raises anything else but an
`OSError` from the socket itself.

A connection is reused only when its response said nothing against it (HTTP/1.1, no `Connection: close`),
was read to its end, and left no byte unread: leftovers would be taken for the next response.
"""

from __future__ import annotations

import math
import re
import select
import socket
import ssl
import time
from dataclasses import dataclass

MAX_HEAD_BYTES = 100 * 1024  # status line and headers of one response
MAX_CHUNK_LINE_BYTES = 1024  # a chunk-size line, extensions included
MAX_INFORMATIONAL = 8  # 1xx responses skipped before the final one
MAX_CONTENT_LENGTH_DIGITS = 18  # fits an int64; longer is refused, not parsed
READ_BYTES = 65536
# Request bodies up to this size go out in the same send as the head (one syscall, one segment).
JOIN_BODY_BYTES = 16 * 1024
_QUOTE_BYTES = 80  # how much of an offending line an error message quotes

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FIELD_VALUE = re.compile(rb"[\t\x20-\x7e\x80-\xff]*")
_TARGET = re.compile(r"[\x21-\x7e]+")
_STATUS_LINE = re.compile(rb"HTTP/1\.([01]) ([1-9][0-9][0-9])(?: [\t\x20-\x7e\x80-\xff]*)?")
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,15}")
_NO_BODY_STATUSES = frozenset({204, 304})


class WireError(Exception):
    """Base of the failures of one exchange."""


class ConnectFailed(WireError):
    """No connection (refused, unreachable, or the TLS handshake or certificate check failed)."""


class Timeout(WireError):
    """The attempt's deadline passed before the exchange ended."""


class ProtocolViolation(WireError):
    """The receiver's bytes are not an HTTP/1.1 response this client accepts."""


class InvalidRequest(WireError):
    """The request itself is not valid HTTP (the job's method, target or a header)."""


@dataclass(frozen=True)
class Response:
    """One final response: its status, headers (lower-case names, the last of repeats) and body preview."""

    status: int
    headers: dict[str, str]
    preview: bytes


def encode_request(method: str, target: str, headers: list[tuple[bytes, bytes]], body: bytes) -> bytes:
    """Builds a request's head (and the body when it is small), refusing what is not valid HTTP.

    Args:
        method: An HTTP method (a token).
        target: The origin-form target, e.g. "/hook?a=1" (visible ASCII only).
        headers: Name and value pairs, Host and Content-Length among them as the caller wants them.
        body: The body; appended when at most JOIN_BODY_BYTES (the caller sends a longer one separately).

    Raises:
        InvalidRequest: The method, the target or a header would not be valid HTTP (CR/LF injection, a
            space in the method, a control character in a value).
    """
    method_bytes = method.encode("ascii", errors="replace")
    if not _TOKEN.fullmatch(method_bytes):
        raise InvalidRequest(f"invalid method {method[:_QUOTE_BYTES]!r}")
    if not _TARGET.fullmatch(target):
        raise InvalidRequest("invalid request target")
    parts = [method_bytes, b" ", target.encode("ascii"), b" HTTP/1.1\r\n"]
    for name, value in headers:
        if not _TOKEN.fullmatch(name):
            raise InvalidRequest(f"invalid header name {name[:_QUOTE_BYTES]!r}")
        if not _FIELD_VALUE.fullmatch(value):
            raise InvalidRequest(f"invalid character in the value of header {name[:_QUOTE_BYTES]!r}")
        parts += (name, b": ", value, b"\r\n")
    parts.append(b"\r\n")
    if len(body) <= JOIN_BODY_BYTES:
        parts.append(body)
    return b"".join(parts)


def idle_socket_unusable(sock: socket.socket) -> bool:
    """Tells whether a kept-alive socket, idle between exchanges, can no longer carry a request.

    An idle HTTP/1.1 connection has nothing to read: anything readable is an EOF (the server closed it on
    its idle timeout) or bytes no request asked for. poll, not select: select refuses descriptors past
    FD_SETSIZE (1024), which a busy process reaches. Shared by every kept-alive client of the package.
    """
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True
    try:
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):  # closed underneath (fileno -1): unusable
        return True


def _remaining_s(deadline_s: float) -> float:
    """Returns the time left before deadline_s; raises Timeout when none is left."""
    remaining_s = deadline_s - time.monotonic()
    if remaining_s <= 0:
        raise Timeout("callback attempt ran out of time")
    return remaining_s


class Connection:
    """One socket to one checked address, used by one thread, one exchange at a time."""

    def __init__(self, sock: socket.socket, key: tuple[str, str, int, str]) -> None:
        self.key = key  # (scheme, host name, port, address): pooled per name AND address
        self.idle_since_s = 0.0
        self._sock = sock
        self._buffer = bytearray()
        self._closed = False
        self._sent = False  # a request went out and nothing was read since
        self._poller = select.poll()
        self._poller.register(sock.fileno(), select.POLLIN)

    @classmethod
    def open(
        cls,
        key: tuple[str, str, int, str],
        ssl_context: ssl.SSLContext | None,
        deadline_s: float,
    ) -> Connection:
        """Connects to key's address (and for https negotiates TLS for key's host name) before deadline_s.

        Raises:
            Timeout: The connection or the handshake was not done by the deadline.
            ConnectFailed: Refused, unreachable, or TLS failed (the certificate does not name the host...).
        """
        scheme, host, port, ip = key
        try:
            sock = socket.create_connection((ip, port), timeout=_remaining_s(deadline_s))
        except TimeoutError:
            raise Timeout(f"no connection to {host}:{port} before the deadline") from None
        except OSError as exc:
            raise ConnectFailed(str(exc) or f"connection to {host}:{port} failed") from None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if scheme == "https":
                if ssl_context is None:
                    raise ConnectFailed("https needs an ssl context")
                sock.settimeout(_remaining_s(deadline_s))
                # SNI and the certificate check use the host name, never the address.
                sock = ssl_context.wrap_socket(sock, server_hostname=host)
        except TimeoutError:
            sock.close()
            raise Timeout(f"TLS handshake with {host}:{port} outlasted the attempt") from None
        except (OSError, WireError) as exc:
            sock.close()
            if isinstance(exc, WireError):
                raise
            raise ConnectFailed(str(exc) or f"TLS with {host}:{port} failed") from None
        sock.setblocking(False)  # from here on every wait is _wait's, bounded by the deadline
        return cls(sock, key)

    def close(self) -> None:
        """Closes the socket (idempotent)."""
        if not self._closed:
            self._closed = True
            self._sock.close()

    def is_stale(self) -> bool:
        """Tells whether an idle connection can no longer be used: the peer closed it or sent something.

        An idle HTTP/1.1 connection has nothing to read; anything readable is an EOF (the server timed it
        out) or bytes no request asked for.
        """
        return self._closed or bool(self._buffer) or idle_socket_unusable(self._sock)

    def exchange(
        self, request: bytes, body: bytes, method: str, preview_bytes: int, deadline_s: float
    ) -> tuple[Response, bool]:
        """Sends one request and reads its final response; returns it and whether the connection is reusable.

        Args:
            request: The head from encode_request (with the body when it was joined).
            body: The body; sent after request unless encode_request joined it.
            method: The request's method (a HEAD response has no body).
            preview_bytes: How much of the response body to keep; reading stops past it.
            deadline_s: The attempt's deadline (time.monotonic()).

        Raises:
            Timeout, ProtocolViolation, OSError: the caller closes the connection.
        """
        self._send(request, deadline_s)
        if len(body) > JOIN_BODY_BYTES:
            self._send(body, deadline_s)
        for _ in range(MAX_INFORMATIONAL + 1):
            version, status, headers = self._read_head(deadline_s)
            if status >= 200:
                break
            if status == 101:
                raise ProtocolViolation("unexpected 101 Switching Protocols: no upgrade was asked for")
        else:
            raise ProtocolViolation(f"more than {MAX_INFORMATIONAL} informational responses")
        if method == "HEAD" or status in _NO_BODY_STATUSES:
            preview, complete, framed = b"", True, True
        else:
            preview, complete, framed = self._read_body(headers, preview_bytes, deadline_s)
        reusable = (
            complete
            and framed
            and version == 1
            and not self._buffer
            and "close" not in (token.strip().lower() for token in _joined(headers, "connection").split(","))
        )
        return Response(status, dict(headers), preview), reusable

    def _send(self, data: bytes, deadline_s: float) -> None:
        """Sends all of data before the deadline."""
        view = memoryview(data)
        while view:
            try:
                view = view[self._sock.send(view) :]
            except (BlockingIOError, ssl.SSLWantWriteError):
                self._wait(
                    select.POLLOUT, deadline_s, "the receiver did not take the request before the deadline"
                )
            except ssl.SSLWantReadError:  # TLS wants the peer's bytes first (a key update)
                self._wait(
                    select.POLLIN, deadline_s, "the receiver did not take the request before the deadline"
                )
        self._sent = True

    def _fill(self, deadline_s: float) -> bool:
        """Reads what the socket has into the buffer, waiting up to the deadline; False at the stream's end.

        Right after a request a plain socket cannot hold its answer yet, so it is waited for before the first
        recv (a recv first would be one more syscall, and one more release of the interpreter lock, per
        exchange). A TLS socket may hold decrypted bytes poll() cannot see (pending()), so it reads first.
        """
        message = "no complete response before the deadline"
        if self._sent and not isinstance(self._sock, ssl.SSLSocket):
            self._wait(select.POLLIN, deadline_s, message)
        self._sent = False
        while True:
            try:
                data = self._sock.recv(READ_BYTES)
                break
            except (BlockingIOError, ssl.SSLWantReadError):
                self._wait(select.POLLIN, deadline_s, message)
            except ssl.SSLWantWriteError:
                self._wait(select.POLLOUT, deadline_s, message)
        if not data:
            return False
        self._buffer += data
        return True

    def _wait(self, events: int, deadline_s: float, message: str) -> None:
        """Waits until the socket is ready for events (or failed: the next call says how) before the
        deadline; raises Timeout with message when the deadline comes first."""
        remaining_ms = math.ceil((deadline_s - time.monotonic()) * 1000)
        if remaining_ms <= 0:
            raise Timeout(message)
        self._poller.modify(self._sock.fileno(), events)
        if not self._poller.poll(remaining_ms):
            raise Timeout(message)

    def _read_head(self, deadline_s: float) -> tuple[int, int, list[tuple[str, str]]]:
        """Reads and parses one response head: returns (minor version, status, headers)."""
        status_line, *lines = self._take_head(deadline_s).split(b"\r\n")
        matched = _STATUS_LINE.fullmatch(status_line)
        if matched is None:
            raise ProtocolViolation(f"malformed status line {status_line[:_QUOTE_BYTES]!r}")
        headers: list[tuple[str, str]] = []
        for line in lines:
            name, colon, raw_value = line.partition(b":")
            if not colon or not _TOKEN.fullmatch(name):
                raise ProtocolViolation(f"malformed header line {line[:_QUOTE_BYTES]!r}")
            value = raw_value.strip(b" \t")
            if not _FIELD_VALUE.fullmatch(value):
                raise ProtocolViolation(f"invalid character in header {name[:_QUOTE_BYTES]!r}")
            headers.append((name.decode("ascii").lower(), value.decode("latin-1")))
        return int(matched.group(1)), int(matched.group(2)), headers

    def _take_head(self, deadline_s: float) -> bytes:
        """Reads up to the blank line that ends a response head and returns the head without it."""
        searched = 0
        while (end := self._buffer.find(b"\r\n\r\n", max(0, searched - 3))) < 0:
            if len(self._buffer) > MAX_HEAD_BYTES:
                raise ProtocolViolation(f"response head over {MAX_HEAD_BYTES} bytes")
            searched = len(self._buffer)
            if not self._fill(deadline_s):
                if not self._buffer:
                    raise ProtocolViolation("the receiver closed the connection without a response")
                raise ProtocolViolation("the receiver closed the connection inside the response head")
        if end > MAX_HEAD_BYTES:
            raise ProtocolViolation(f"response head over {MAX_HEAD_BYTES} bytes")
        head = bytes(self._buffer[:end])
        del self._buffer[: end + 4]
        return head

    def _read_body(
        self, headers: list[tuple[str, str]], preview_bytes: int, deadline_s: float
    ) -> tuple[bytes, bool, bool]:
        """Reads the body up to preview_bytes; returns (preview, read to its end, framed by the message)."""
        transfer_encoding = _joined(headers, "transfer-encoding")
        if transfer_encoding:
            codings = [coding.strip().lower() for coding in transfer_encoding.split(",")]
            if codings != ["chunked"]:
                raise ProtocolViolation(f"unsupported transfer-encoding {transfer_encoding[:_QUOTE_BYTES]!r}")
            preview, complete = self._read_chunked(preview_bytes, deadline_s)
            # With a Content-Length beside it the message is suspect (request smuggling): never reuse.
            return preview, complete, not any(name == "content-length" for name, _ in headers)
        content_length = _content_length(headers)
        if content_length is None:
            return self._read_until_close(preview_bytes, deadline_s), False, False
        return *self._read_length(content_length, preview_bytes, deadline_s), True

    def _read_length(self, length: int, preview_bytes: int, deadline_s: float) -> tuple[bytes, bool]:
        """Reads a Content-Length body: all of it when it fits the preview, else just past the preview."""
        wanted = min(length, preview_bytes + 1)
        while len(self._buffer) < wanted:
            if not self._fill(deadline_s):
                raise ProtocolViolation(f"the body ended after {len(self._buffer)} of {length} bytes")
        taken = min(length, len(self._buffer))
        preview = bytes(self._buffer[: min(taken, preview_bytes)])
        del self._buffer[:taken]
        return preview, taken == length

    def _read_until_close(self, preview_bytes: int, deadline_s: float) -> bytes:
        """Reads a body that ends with the connection, stopping past the preview."""
        while len(self._buffer) <= preview_bytes and self._fill(deadline_s):
            pass
        preview = bytes(self._buffer[:preview_bytes])
        self._buffer.clear()
        return preview

    def _read_line(self, limit: int, deadline_s: float) -> bytes:
        """Reads one CRLF-terminated line of at most limit bytes (chunk sizes and trailers)."""
        while True:
            end = self._buffer.find(b"\r\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 2]
                return line
            if len(self._buffer) > limit:
                raise ProtocolViolation("chunked body line too long")
            if not self._fill(deadline_s):
                raise ProtocolViolation("the receiver closed the connection inside a chunked body")

    def _read_chunked(self, preview_bytes: int, deadline_s: float) -> tuple[bytes, bool]:
        """Reads a chunked body up to just past the preview; returns (preview, read to its end)."""
        preview = bytearray()
        while True:
            size_field = self._read_line(MAX_CHUNK_LINE_BYTES, deadline_s).partition(b";")[0].strip(b" \t")
            if not _CHUNK_SIZE.fullmatch(size_field):
                raise ProtocolViolation(f"malformed chunk size {size_field[:_QUOTE_BYTES]!r}")
            size = int(size_field, 16)
            if size == 0:
                break
            room = preview_bytes + 1 - len(preview)
            while len(self._buffer) < min(size, room):
                if not self._fill(deadline_s):
                    raise ProtocolViolation("the receiver closed the connection inside a chunk")
            if size >= room:  # past the preview: stop here, the connection is not reused
                preview += self._buffer[:room]
                return bytes(preview[:preview_bytes]), False
            preview += self._buffer[:size]
            del self._buffer[:size]
            if self._read_line(2, deadline_s):
                raise ProtocolViolation("chunk data longer than its size")
        trailer_bytes = 0
        while line := self._read_line(MAX_HEAD_BYTES, deadline_s):  # trailers: read and ignored
            trailer_bytes += len(line) + 2
            if trailer_bytes > MAX_HEAD_BYTES:
                raise ProtocolViolation(f"trailers over {MAX_HEAD_BYTES} bytes")
        return bytes(preview), True


def _joined(headers: list[tuple[str, str]], name: str) -> str:
    """Returns the values of every header called name, joined by commas (empty when absent)."""
    return ",".join(value for header, value in headers if header == name)


def _content_length(headers: list[tuple[str, str]]) -> int | None:
    """Returns the Content-Length, None when absent; refuses malformed or disagreeing values."""
    values = _joined(headers, "content-length")
    if not values and not any(name == "content-length" for name, _ in headers):
        return None
    lengths = set()
    for raw_value in values.split(","):
        value = raw_value.strip(" \t")
        if not (value.isascii() and value.isdigit() and len(value) <= MAX_CONTENT_LENGTH_DIGITS):
            raise ProtocolViolation(f"malformed content-length {values[:_QUOTE_BYTES]!r}")
        lengths.add(int(value))
    if len(lengths) != 1:
        raise ProtocolViolation(f"conflicting content-length {values[:_QUOTE_BYTES]!r}")
    return lengths.pop()
