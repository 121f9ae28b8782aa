"""A loopback HTTP proxy in front of DynamoDB that loses replies of applied writes.

    python -m tests.chaos.lossy_proxy --listen-port P --target-port T [--lose-every N]

It relays faithfully until SIGUSR1 (so a scenario warms up unharmed); from then on every request goes on to
the target and its reply is read in full, so the write is applied. The reply of every N-th request of each
kind below is then not passed back: the client's connection is reset instead, as when a reply is lost on the
way (a network blip, a load balancer's idle close at the wrong moment). The client cannot tell whether its
write happened, and sends it again (botocore's retries, the JSON client's). A request body whose reply was
lost once is never lost again, so the repeat always answers.

The kinds are told by operation and by what the job store's requests hold (adapters/dynamo/job_store.py):
    claim         UpdateItem counting one more attempt (the claim's update)
    finish        a first attempt's finish: one UpdateItem stamping a finish token (its record goes into
                  the job item)
    finish_later  a later attempt's finish: a TransactWriteItems of that update and the execution record
    create        PutItem of a new job item (ITEM_IS_NEW)
Each lost reply is written to stdout as `lossy-proxy lost <kind>`. One thread per client connection, each
with its own connection to the target; HTTP/1.1 bodies framed by Content-Length or chunked.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import signal
import socket
import struct
import sys
import threading
from collections import Counter
from types import FrameType

# (kind, operation, markers the body holds), the first match wins.
KINDS = (
    ("claim", b"UpdateItem", (b"#attempt = #attempt + :one",)),
    ("finish", b"UpdateItem", (b"#finish_token = :token",)),
    ("finish_later", b"TransactWriteItems", (b"#finish_token = :token",)),
    ("create", b"PutItem", (b'"job_id":', b"attribute_not_exists(#pk)")),
)
HEAD_LIMIT = 64 * 1024


class Losses:
    """Decides which replies are lost: every N-th per kind, never twice for the same body."""

    def __init__(self, every: int) -> None:
        self.active = False  # set by SIGUSR1
        self._every = every
        self._lock = threading.Lock()
        self._seen: Counter[str] = Counter()
        self._lost_bodies: set[bytes] = set()

    def lose(self, head: bytes, body: bytes) -> str | None:
        """Returns the kind of request whose reply to lose now, None to pass it back."""
        if not self.active:
            return None
        target = _header(head, b"x-amz-target") or b""
        kind = next(
            (
                name
                for name, operation, markers in KINDS
                if target.endswith(operation) and all(marker in body for marker in markers)
            ),
            None,
        )
        if kind is None:
            return None
        digest = hashlib.sha256(body).digest()
        with self._lock:
            if digest in self._lost_bodies:
                return None
            self._seen[kind] += 1
            if self._seen[kind] % self._every:
                return None
            self._lost_bodies.add(digest)
        return kind


def _header(head: bytes, name: bytes) -> bytes | None:
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    return None


class _Reader:
    """Reads HTTP/1.1 messages from a socket."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = b""

    def _fill(self) -> bool:
        data = self._sock.recv(65536)
        if not data:
            return False
        self._buffer += data
        return True

    def head(self) -> bytes | None:
        """Returns the next message's head (through the blank line), None at a clean end of stream."""
        while b"\r\n\r\n" not in self._buffer:
            if len(self._buffer) > HEAD_LIMIT or not self._fill():
                if self._buffer:
                    raise ConnectionError("truncated head")
                return None
        head, _, self._buffer = self._buffer.partition(b"\r\n\r\n")
        return head + b"\r\n\r\n"

    def exactly(self, count: int) -> bytes:
        """Returns the next count bytes."""
        while len(self._buffer) < count:
            if not self._fill():
                raise ConnectionError("truncated body")
        data, self._buffer = self._buffer[:count], self._buffer[count:]
        return data

    def line(self) -> bytes:
        """Returns the next CRLF-terminated line, CRLF included."""
        while b"\r\n" not in self._buffer:
            if not self._fill():
                raise ConnectionError("truncated chunk")
        line, _, self._buffer = self._buffer.partition(b"\r\n")
        return line + b"\r\n"

    def body(self, head: bytes, response: bool) -> bytes:
        """Returns the message's body as framed on the wire (chunked bodies with their framing)."""
        length = _header(head, b"content-length")
        if length is not None:
            return self.exactly(int(length))
        if (_header(head, b"transfer-encoding") or b"").lower() == b"chunked":
            raw = b""
            while True:
                size_line = self.line()
                raw += size_line
                size = int(size_line.split(b";")[0], 16)
                raw += self.exactly(size + 2)
                if size == 0:
                    return raw
        if not response:
            return b""
        while self._fill():  # a reply framed by the connection's end
            pass
        data, self._buffer = self._buffer, b""
        return data


def _reset(sock: socket.socket) -> None:
    """Closes with SO_LINGER 0, which sends RST instead of FIN."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def serve_connection(client: socket.socket, target_port: int, losses: Losses) -> None:
    """Relays one client connection's requests and replies, losing the replies losses picks."""
    try:
        upstream = socket.create_connection(("127.0.0.1", target_port), timeout=60)
    except OSError:
        _reset(client)
        return
    upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    requests, replies = _Reader(client), _Reader(upstream)
    try:
        while True:
            head = requests.head()
            if head is None:
                return
            body = requests.body(head, response=False)
            upstream.sendall(head + body)
            reply_head = replies.head()
            if reply_head is None:
                return
            reply = reply_head + replies.body(reply_head, response=True)
            kind = losses.lose(head, body)
            if kind is not None:
                print(f"lossy-proxy lost {kind}", flush=True)
                return  # the finally resets the client: the write was applied, its reply is gone
            client.sendall(reply)
    except OSError:
        return
    finally:
        _reset(client)
        upstream.close()


def main(argv: list[str] | None = None) -> int:
    """Parses the ports and serves until killed."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--listen-port", type=int, required=True)
    parser.add_argument("--target-port", type=int, required=True)
    parser.add_argument("--lose-every", type=int, default=2, help="lose the reply of every N-th of a kind")
    args = parser.parse_args(argv)
    losses = Losses(args.lose_every)

    def start_losing(signum: int, frame: FrameType | None) -> None:
        losses.active = True

    signal.signal(signal.SIGUSR1, start_losing)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.listen_port))
    listener.listen(256)
    print("lossy-proxy ready", flush=True, file=sys.stdout)
    while True:
        client, _ = listener.accept()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(
            target=serve_connection, args=(client, args.target_port, losses), daemon=True
        ).start()


if __name__ == "__main__":
    raise SystemExit(main())
