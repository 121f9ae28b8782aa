"""A minimal HTTP/1.1 client connection: what one callback attempt needs, over a plain or TLS socket.

Why not httpcore and h11: a callback is one small request and one response whose body is kept only up to a
preview, and a general client (httpcore with h11, or `http.client`, whose header parsing goes through the
email package) spends several times this module's work on it; even h11's parser alone under this module's
sockets would more than double it (the figures are on docs/performance.md). So h11 is the tests' oracle:
generated responses go through both, which must agree on the status, the body and whether the connection may
be reused, or both refuse (tests/integration/test_callback_http1_oracle.py).

What it does: one request at a time per connection, the body framed by Content-Length; responses framed
by Content-Length, chunked transfer coding, or the end of the connection; informational (1xx) responses
skipped; keep-alive when the response allows it. What it never does: follow redirects, decompress, use a
proxy, pipeline, speak HTTP/2, or resolve a name (the caller passes the checked address).

A receiver controls every byte of its answer, so the parser is strict and bounded rather than lenient:
- the status line and headers together are at most MAX_HEAD_BYTES (as h11's default); a line ends with
  CRLF or a bare LF (RFC 9112 2.2 lets a recipient accept LF, as h11 does), never a bare CR;
- a header name is an RFC 9110 token; a received value (and the reason phrase) has no NUL, CR, LF, VT or
  FF, as h11 reads them (other control characters, which RFC 9110 does not allow, are let through: they
  cannot end or hide a line, and a stray one in a header nobody reads must not discard the answer);
  obsolete line folding is refused;
- Content-Length is ASCII digits (repeated values must agree), checked with the head: a response whose
  length is invalid is discarded whole (RFC 9112 6.3);
- Transfer-Encoding whose last coding is `chunked` is read as chunked (other codings are not undone: the
  preview keeps their bytes); any other Transfer-Encoding is read until the connection ends (RFC 9112 6.3);
- a body is read only up to the caller's limit, then the connection is closed rather than drained;
- every socket operation is bounded by the attempt's deadline (a `time.monotonic()` value), so a receiver
  that drips one byte a second is cut at the deadline, not once per byte's timeout.

Once a final head is read, the status is the receiver's answer: a body that then breaks its framing, ends
early or outlasts the deadline is reported in `Response.body_error` beside the status, not raised, so an
accepted callback is never taken for a failed one. Only a failure before the final head raises.

The socket is non-blocking once connected, and every wait is this module's own poll() until the deadline.
A socket with a timeout would do the same inside CPython, at a cost: settimeout() before each operation
(to clamp it to the deadline) lets go of the interpreter lock around an ioctl, and each send or recv polls
before its syscall, each again outside the lock. Among a process's delivery threads every such release is
a thread switch; this way an exchange releases the lock for its send, one poll and its recv.
Anything it refuses is a `ProtocolViolation`: nothing the receiver sends raises anything else but an
`OSError` from the socket itself.

A connection is reused only when its response said nothing against it (HTTP/1.1, no `Connection: close`),
was read to its end, and left no byte unread: leftovers would be taken for the next response. Bytes that
arrive while it is idle make it unusable too (`is_stale`, checked right before each reuse); a response's
`Keep-Alive: timeout=N` shortens how long it is kept (`idle_limit_s`).
"""

from __future__ import annotations

import math
import re
import select
import socket
import ssl
import time
from dataclasses import dataclass
from typing import NamedTuple

from hookline.adapters.sockets import idle_socket_unusable

MAX_HEAD_BYTES = 100 * 1024  # status line and headers of one response
MAX_CHUNK_LINE_BYTES = 1024  # a chunk-size line, extensions included
MAX_INFORMATIONAL = 8  # 1xx responses skipped before the final one
MAX_CONTENT_LENGTH_DIGITS = 18  # fits an int64; longer is refused, not parsed
READ_BYTES = 65536
# Request bodies up to this size go out in the same send as the head (one syscall, one segment).
JOIN_BODY_BYTES = 16 * 1024
_QUOTE_BYTES = 80  # how much of an offending line an error message quotes

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FIELD_VALUE = re.compile(rb"[\t\x20-\x7e\x80-\xff]*")  # what a request's header value may hold
_RECEIVED_VALUE = re.compile(rb"[^\x00\n\r\x0b\x0c]*")  # what a response's may hold (see the module)
_TARGET = re.compile(r"[\x21-\x7e]+")
_STATUS_LINE = re.compile(rb"HTTP/1\.([01]) ([1-9][0-9][0-9])(?: [^\x00\n\r\x0b\x0c]*)?")
# A chunk-size line: the size, then extensions (not parsed: nothing uses them) or trailing whitespace.
_CHUNK_LINE = re.compile(rb"([0-9A-Fa-f]{1,15})(?:;[^\n]*)?[ \t]*")
_HEAD_END = re.compile(rb"\n\r?\n")  # the blank line after the headers: CRLF or bare LF endings
_KEEP_ALIVE_TIMEOUT = re.compile(r"(?:^|[,;\s])timeout\s*=\s*([0-9]{1,6})(?:$|[,;\s])", re.IGNORECASE)
# A server's announced idle timeout is trusted less this margin: its clock started when it sent the answer.
KEEP_ALIVE_MARGIN_S = 1.0
_NO_BODY_STATUSES = frozenset({204, 304})
_FRAMING_NAMES = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive"})


class WireError(Exception):
    """Base of the failures of one exchange."""


class ConnectFailed(WireError):
    """No connection (refused, unreachable, or the TLS handshake or certificate check failed)."""


class Timeout(WireError):
    """The attempt's deadline passed before the exchange ended."""


class ProtocolViolation(WireError):
    """The receiver's bytes are not an HTTP/1.1 response this client accepts."""


class ClosedBeforeResponse(ProtocolViolation):
    """The receiver closed the connection before sending a single byte of a response."""


class AddressFailed(ConnectFailed):
    """No TCP connection to this one address (refused, unreachable, or not by its connect deadline): the
    caller may try the name's next checked address."""

    def __init__(self, message: str, timed_out: bool) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class InvalidRequest(WireError):
    """The request itself is not valid HTTP (the job's method, target or a header)."""


class Endpoint(NamedTuple):
    """Where a connection goes: the scheme, the host name (for Host, SNI and the certificate), the port
    and the checked address it connects to."""

    scheme: str
    host: str
    port: int
    ip: str


@dataclass(frozen=True)
class Response:
    """One final response: its status, headers (lower-case names, the last of repeats) and body preview.

    Attributes:
        body_error: Why the body could not be read to its end (framing broken, ended early, deadline),
            None when it was; the status stands either way.
    """

    status: int
    headers: dict[str, str]
    preview: bytes
    body_error: str | None = None


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


def _remaining_s(deadline_s: float) -> float:
    """Returns the time left before deadline_s; raises Timeout when none is left."""
    remaining_s = deadline_s - time.monotonic()
    if remaining_s <= 0:
        raise Timeout("callback attempt ran out of time")
    return remaining_s


class Connection:
    """One socket to one checked address, used by one thread, one exchange at a time.

    Attributes:
        endpoint: Where it goes; a pool reuses it only for the same endpoint.
        owner: Whose exchanges it may carry (a pool sets it: the tenant), so one owner's receiver can never
            answer another owner's request on a kept-alive connection.
        idle_since_s: When its last exchange ended (time.monotonic()).
        idle_limit_s: How long it may stay idle, learned from the last response's `Keep-Alive: timeout=N`
            (less KEEP_ALIVE_MARGIN_S); None when the response announced none.
        received: Bytes read in the current exchange (0: the receiver has not answered at all).
    """

    def __init__(self, sock: socket.socket, endpoint: Endpoint, owner: str = "") -> None:
        self.endpoint = endpoint
        self.owner = owner
        self.idle_since_s = 0.0
        self.idle_limit_s: float | None = None
        self.received = 0
        self._sock = sock
        self._buffer = bytearray()
        self._closed = False
        self._sent = False  # a request went out and nothing was read since
        self._poller = select.poll()
        self._poller.register(sock.fileno(), select.POLLIN)

    @classmethod
    def open(
        cls,
        endpoint: Endpoint,
        ssl_context: ssl.SSLContext | None,
        deadline_s: float,
        connect_deadline_s: float | None = None,
        owner: str = "",
    ) -> Connection:
        """Connects to the endpoint's address (and for https negotiates TLS for its host name).

        Args:
            endpoint: Where to connect.
            ssl_context: Trust settings for https.
            deadline_s: The attempt's deadline (time.monotonic()): bounds the connect and the handshake.
            connect_deadline_s: An earlier bound for the TCP connect alone, so that an address that never
                answers leaves time for the name's next one; the attempt's deadline when None.
            owner: Whose exchanges the connection carries (see the class).

        Raises:
            AddressFailed: No TCP connection to the address (refused, unreachable, or not by its deadline).
            Timeout: The TLS handshake did not end by the deadline.
            ConnectFailed: TLS failed (the certificate does not name the host...).
        """
        scheme, host, port, ip = endpoint
        connect_by_s = deadline_s if connect_deadline_s is None else min(deadline_s, connect_deadline_s)
        try:
            sock = socket.create_connection((ip, port), timeout=_remaining_s(connect_by_s))
        except (TimeoutError, Timeout):
            message = f"no connection to {host}:{port} before the deadline"
            raise AddressFailed(message, timed_out=True) from None
        except OSError as exc:
            message = str(exc) or f"connection to {host}:{port} failed"
            raise AddressFailed(message, timed_out=False) from None
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
        return cls(sock, endpoint, owner)

    def close(self) -> None:
        """Closes the socket (idempotent)."""
        if not self._closed:
            self._closed = True
            self._sock.close()

    def is_stale(self) -> bool:
        """Tells whether an idle connection can no longer be used: the peer closed it or sent something.

        An idle HTTP/1.1 connection has nothing to read; anything readable is an EOF (the server timed it
        out) or bytes no request asked for, which the next request would take for its answer.
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
            Timeout, ProtocolViolation, OSError: No final response head by the deadline (the caller closes
                the connection). Once the head is read nothing is raised: see `Response.body_error`.
        """
        self.received = 0
        self._send(request, deadline_s)
        if len(body) > JOIN_BODY_BYTES:
            self._send(body, deadline_s)
        for _ in range(MAX_INFORMATIONAL + 1):
            version, status, headers, fields = self._read_head(deadline_s)
            if status >= 200:
                break
            if status == 101:
                raise ProtocolViolation("unexpected 101 Switching Protocols: no upgrade was asked for")
        else:
            raise ProtocolViolation(f"more than {MAX_INFORMATIONAL} informational responses")
        framing = "none" if method == "HEAD" or status in _NO_BODY_STATUSES else _framing(fields)
        preview = bytearray()
        try:
            complete = self._read_body(framing, fields, preview, preview_bytes, deadline_s)
        except (WireError, OSError) as exc:
            if framing in ("length", "close"):  # the unread body is still in the buffer
                preview += self._buffer[: preview_bytes - len(preview)]
            return Response(status, dict(headers), bytes(preview), f"{type(exc).__name__}: {exc}"), False
        reusable = (
            complete
            and framing in ("none", "length", "chunked")
            and version == 1
            and not self._buffer
            and "close" not in _tokens(fields, "connection")
        )
        if reusable:
            self.idle_limit_s = _keep_alive_s(fields)
            reusable = self.idle_limit_s is None or self.idle_limit_s > 0
        return Response(status, dict(headers), bytes(preview)), reusable

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
        self.received += len(data)
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

    def _read_head(self, deadline_s: float) -> tuple[int, int, list[tuple[str, str]], dict[str, str]]:
        """Reads and parses one response head: returns (minor version, status, headers, framing fields).

        Its Content-Length is checked here too: a response whose Content-Length is invalid is discarded
        whole (RFC 9112 6.3), so it raises like a malformed head.
        """
        status_line, *lines = (line.removesuffix(b"\r") for line in self._take_head(deadline_s).split(b"\n"))
        matched = _STATUS_LINE.fullmatch(status_line)
        if matched is None:
            raise ProtocolViolation(f"malformed status line {status_line[:_QUOTE_BYTES]!r}")
        headers = [_header_field(line) for line in lines]
        fields = _framing_fields(headers)
        _content_length(fields)
        return int(matched.group(1)), int(matched.group(2)), headers, fields

    def _take_head(self, deadline_s: float) -> bytes:
        """Reads up to the blank line that ends a response head and returns the head without it."""
        searched = 0
        while (end := _HEAD_END.search(self._buffer, max(0, searched - 2))) is None:
            if len(self._buffer) > MAX_HEAD_BYTES:
                raise ProtocolViolation(f"response head over {MAX_HEAD_BYTES} bytes")
            searched = len(self._buffer)
            if not self._fill(deadline_s):
                if not self._buffer:
                    raise ClosedBeforeResponse("the receiver closed the connection without a response")
                raise ProtocolViolation("the receiver closed the connection inside the response head")
        if end.start() > MAX_HEAD_BYTES:
            raise ProtocolViolation(f"response head over {MAX_HEAD_BYTES} bytes")
        head = bytes(self._buffer[: end.start()])
        del self._buffer[: end.end()]
        return head

    def _read_body(
        self,
        framing: str,
        fields: dict[str, str],
        preview: bytearray,
        preview_bytes: int,
        deadline_s: float,
    ) -> bool:
        """Reads the body into preview (up to preview_bytes); returns whether it was read to its end."""
        if framing == "none":
            return True
        if framing in ("chunked", "close-chunked"):
            return self._read_chunked(preview, preview_bytes, deadline_s)
        if framing == "length":
            length = _content_length(fields)
            assert length is not None  # _framing said so
            return self._read_length(length, preview, preview_bytes, deadline_s)
        self._read_until_close(preview, preview_bytes, deadline_s)
        return False

    def _read_length(self, length: int, preview: bytearray, preview_bytes: int, deadline_s: float) -> bool:
        """Reads a Content-Length body: all of it when it fits the preview, else just past the preview."""
        wanted = min(length, preview_bytes + 1)
        while len(self._buffer) < wanted:
            if not self._fill(deadline_s):
                raise ProtocolViolation(f"the body ended after {len(self._buffer)} of {length} bytes")
        taken = min(length, len(self._buffer))
        preview += self._buffer[: min(taken, preview_bytes)]
        del self._buffer[:taken]
        return taken == length

    def _read_until_close(self, preview: bytearray, preview_bytes: int, deadline_s: float) -> None:
        """Reads a body that ends with the connection, stopping past the preview."""
        while len(self._buffer) <= preview_bytes and self._fill(deadline_s):
            pass
        preview += self._buffer[:preview_bytes]
        self._buffer.clear()

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

    def _read_chunked(self, preview: bytearray, preview_bytes: int, deadline_s: float) -> bool:
        """Reads a chunked body into preview (up to preview_bytes); returns whether it was read to its end."""
        while True:
            size_line = self._read_line(MAX_CHUNK_LINE_BYTES, deadline_s)
            matched = _CHUNK_LINE.fullmatch(size_line)
            if matched is None:
                raise ProtocolViolation(f"malformed chunk size {size_line[:_QUOTE_BYTES]!r}")
            size = int(matched.group(1), 16)
            if size == 0:
                break
            room = preview_bytes + 1 - len(preview)
            while len(self._buffer) < min(size, room):
                if not self._fill(deadline_s):
                    preview += self._buffer[: preview_bytes - len(preview)]
                    raise ProtocolViolation("the receiver closed the connection inside a chunk")
            if size >= room:  # past the preview: stop here, the connection is not reused
                preview += self._buffer[: room - 1]
                return False
            preview += self._buffer[:size]
            del self._buffer[:size]
            if self._read_line(2, deadline_s):
                raise ProtocolViolation("chunk data longer than its size")
        trailer_bytes = 0
        while line := self._read_line(MAX_HEAD_BYTES, deadline_s):  # trailers: checked, then ignored
            _header_field(line)
            trailer_bytes += len(line) + 2
            if trailer_bytes > MAX_HEAD_BYTES:
                raise ProtocolViolation(f"trailers over {MAX_HEAD_BYTES} bytes")
        return True


def _header_field(line: bytes) -> tuple[str, str]:
    """Parses one header (or trailer) line: returns its lower-cased name and its value without the OWS."""
    name, colon, raw_value = line.partition(b":")
    if not colon or not _TOKEN.fullmatch(name):
        raise ProtocolViolation(f"malformed header line {line[:_QUOTE_BYTES]!r}")
    value = raw_value.strip(b" \t")
    if not _RECEIVED_VALUE.fullmatch(value):
        raise ProtocolViolation(f"invalid character in header {name[:_QUOTE_BYTES]!r}")
    return name.decode("ascii").lower(), value.decode("latin-1")


def _framing_fields(headers: list[tuple[str, str]]) -> dict[str, str]:
    """Returns the headers that frame a message or keep its connection, each one's values comma-joined."""
    fields: dict[str, str] = {}
    for name, value in headers:
        if name in _FRAMING_NAMES:
            fields[name] = f"{fields[name]},{value}" if name in fields else value
    return fields


def _tokens(fields: dict[str, str], name: str) -> list[str]:
    """Returns the comma-separated elements of a field, lower-cased, empty ones dropped."""
    value = fields.get(name)
    if value is None:
        return []
    return [token for part in value.split(",") if (token := part.strip(" \t").lower())]


def _framing(fields: dict[str, str]) -> str:
    """Says how a final response's body is delimited (RFC 9112 6.3): "chunked", "length", "close" (until the
    connection ends), or "close-chunked" (chunked, and the connection is not reused afterwards).

    Transfer-Encoding overrides Content-Length; when chunked is not its last coding the body ends with the
    connection. A message with both is suspect (request smuggling): its body is read as chunked and the
    connection is never reused.
    """
    codings = _tokens(fields, "transfer-encoding")
    if codings:
        if codings[-1] != "chunked":
            return "close"
        return "close-chunked" if "content-length" in fields else "chunked"
    return "length" if "content-length" in fields else "close"


def _keep_alive_s(fields: dict[str, str]) -> float | None:
    """Returns how long a connection may idle by the response's `Keep-Alive: timeout=N`, less a margin
    (0 or less: do not keep it); None when the response announced no timeout."""
    value = fields.get("keep-alive")
    matched = None if value is None else _KEEP_ALIVE_TIMEOUT.search(value)
    return None if matched is None else int(matched.group(1)) - KEEP_ALIVE_MARGIN_S


def _content_length(fields: dict[str, str]) -> int | None:
    """Returns the Content-Length, None when absent; refuses malformed or disagreeing values."""
    values = fields.get("content-length")
    if values is None:
        return None
    if values.isdigit() and values.isascii() and len(values) <= MAX_CONTENT_LENGTH_DIGITS:
        return int(values)  # one plain value: the common case
    lengths = set()
    for raw_value in values.split(","):
        value = raw_value.strip(" \t")
        if not (value.isascii() and value.isdigit() and len(value) <= MAX_CONTENT_LENGTH_DIGITS):
            raise ProtocolViolation(f"malformed content-length {values[:_QUOTE_BYTES]!r}")
        lengths.add(int(value))
    if len(lengths) != 1:
        raise ProtocolViolation(f"conflicting content-length {values[:_QUOTE_BYTES]!r}")
    return lengths.pop()
