"""Reads a request body as HTTP/1.1 frames it: Content-Length, or Transfer-Encoding: chunked.

A server that reads only Content-Length takes a chunked body for an empty one and leaves the chunk bytes
on the connection, where they are read as the next request line (curl sends chunked bodies with
`-H 'Transfer-Encoding: chunked'`, and so do streaming clients). Reading every frame keeps the keep-alive
connection in step.
"""

from __future__ import annotations

from typing import Any, Protocol

MAX_BODY_BYTES = 16 * 1024 * 1024  # far above any request the API takes (its own limit answers 413)
_MAX_LINE_BYTES = 8 * 1024


class Headers(Protocol):
    """Request headers with case-insensitive get (http.server's message, or a dict of them)."""

    def get(self, name: str, /) -> Any:
        """Returns the header's value, or None."""
        ...


class Stream(Protocol):
    """A buffered binary reader (a socket's file)."""

    def read(self, size: int, /) -> bytes:
        """Reads up to size bytes."""
        ...

    def readline(self, size: int, /) -> bytes:
        """Reads one line of at most size bytes."""
        ...


class BodyError(ValueError):
    """The body is malformed or too large; carries the status to answer with (the connection closes)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def read_body(stream: Stream, headers: Headers) -> bytes:
    """Reads the whole body that `headers` announce from `stream` (chunked or Content-Length)."""
    encoding = (headers.get("Transfer-Encoding") or "").strip().lower()
    if encoding:
        if encoding != "chunked":
            raise BodyError(501, f"transfer coding {encoding!r} is not supported")
        return _read_chunked(stream)
    raw_length = headers.get("Content-Length")
    if raw_length is None:
        return b""
    try:
        length = int(raw_length)
    except ValueError:
        raise BodyError(400, "Content-Length is not a number") from None
    if not 0 <= length <= MAX_BODY_BYTES:
        raise BodyError(413, "body too large")
    body = stream.read(length)
    if len(body) != length:
        raise BodyError(400, "body shorter than its Content-Length")
    return body


def _read_chunked(stream: Stream) -> bytes:
    body = bytearray()
    while True:
        size_line = _read_line(stream)
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)  # chunk extensions are ignored
        except ValueError:
            raise BodyError(400, "malformed chunk size") from None
        if size < 0 or len(body) + size > MAX_BODY_BYTES:
            raise BodyError(413, "body too large")
        if size == 0:
            break
        chunk = stream.read(size)
        if len(chunk) != size or _read_line(stream) != b"":
            raise BodyError(400, "truncated chunk")
        body += chunk
    # Trailer fields up to the empty line: read so that the next request starts where it should.
    for _ in range(100):
        if _read_line(stream) == b"":
            return bytes(body)
    raise BodyError(400, "too many trailer fields")


def _read_line(stream: Stream) -> bytes:
    line = stream.readline(_MAX_LINE_BYTES + 1)
    if len(line) > _MAX_LINE_BYTES or not line.endswith(b"\n"):
        raise BodyError(400, "malformed chunked body")
    return line.rstrip(b"\r\n")
