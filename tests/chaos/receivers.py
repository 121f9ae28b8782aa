"""Callback receivers for the fault suite: well-behaved and hostile, on 127.0.0.1, recording every request.

A job's behaviour is the first segment of its URL path (`/ok/...`, `/hang/...`); the receiver picks the
answer from how many requests that job (its `webhook-id`) made before. Each request is recorded with its
arrival time and, once answered, the earliest time a Retry-After allows the job's next request, so the
suite can count early deliveries from the receiver's side alone.
"""

from __future__ import annotations

import contextlib
import email.utils
import math
import socket
import struct
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

STREAM_BYTES = 100 * 1024 * 1024
STREAM_CHUNK = 64 * 1024
HANG_LIMIT_S = 60.0  # a hung answer is abandoned after this long at most (bounded threads)
POLL_S = 0.02


def now_ms() -> int:
    """Returns wall time in Unix milliseconds (the clock the engine's due times use)."""
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class Answer:
    """What to do with one request.

    Attributes:
        kind: "reply" (status, headers, body), "hang" (never answer), "reset" (RST the connection),
            "stream" (200 with a 100 MB body), "hold" (wait for `release`, then reply).
        status: The status of a reply.
        headers: Extra headers of a reply.
        delay_s: How long to wait before replying.
        retry_after_s: Retry-After in seconds (0: none); `retry_after_date` sends it as an HTTP-date.
    """

    kind: str = "reply"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    retry_after_s: int = 0
    retry_after_date: bool = False


@dataclass(frozen=True)
class Behaviour:
    """How a receiver treats one kind of job, and what the engine must make of it.

    Attributes:
        name: The first path segment of the job's URL.
        answer: The answer to the job's n-th request (n from 1).
        final_status: The job's status once the engine is done ("succeeded" or "dead").
        deliveries: How many requests the job makes when nothing goes wrong, given max_attempts.
    """

    name: str
    answer: Callable[[int], Answer]
    final_status: str
    deliveries: Callable[[int], int]


def ok(delay_s: float = 0.0) -> Behaviour:
    """Answers 200 (after delay_s)."""
    return Behaviour(f"ok{int(delay_s * 1000)}", lambda n: Answer(delay_s=delay_s), "succeeded", lambda m: 1)


def fail_500() -> Behaviour:
    """Answers 500 every time: the job is retried up to max_attempts and dies."""
    return Behaviour("fail500", lambda n: Answer(status=500), "dead", lambda m: m)


def throttle_429(times: int, retry_after_s: int, as_date: bool = False) -> Behaviour:
    """Answers 429 with Retry-After `times` times, then 200."""

    def answer(n: int) -> Answer:
        if n <= times:
            return Answer(status=429, retry_after_s=retry_after_s, retry_after_date=as_date)
        return Answer()

    name = f"throttle429{'date' if as_date else 'secs'}"
    return Behaviour(name, answer, "succeeded", lambda m: min(m, times + 1))


def hang() -> Behaviour:
    """Never answers: every attempt times out and the job dies after max_attempts."""
    return Behaviour("hang", lambda n: Answer(kind="hang"), "dead", lambda m: m)


def reset(times: int) -> Behaviour:
    """Resets the connection after reading the request `times` times, then answers 200."""
    return Behaviour(
        "reset",
        lambda n: Answer(kind="reset") if n <= times else Answer(),
        "succeeded",
        lambda m: min(m, times + 1),
    )


def stream_100mb() -> Behaviour:
    """Answers 200 with a 100 MB body: the executor must read a preview and hang up."""
    return Behaviour("stream", lambda n: Answer(kind="stream"), "succeeded", lambda m: 1)


def redirect(elsewhere: str, name: str, final_status: str) -> Behaviour:
    """Answers 302 to `elsewhere`; the client follows no redirect, so the job ends dead either way.

    "{elsewhere}" in the location stands for the origin of the world's second receiver.
    """
    return Behaviour(
        name, lambda n: Answer(status=302, headers={"Location": elsewhere}), final_status, lambda m: 1
    )


@dataclass
class Delivery:
    """One request for a job, as the receiver saw it.

    Attributes:
        job_id: The `webhook-id` header.
        behaviour: The first path segment.
        number: This job's n-th request at this receiver (from 1).
        attempt: The `hookline-attempt` header.
        arrival_ms: When the request had been read.
        floor_ms: The earliest arrival the Retry-After answers given to this job before allowed.
        answered_ms: When the answer was written (None: never answered: hang, reset, cut short).
        kind: The answer's kind and status, e.g. "reply 429".
    """

    job_id: str
    behaviour: str
    number: int
    attempt: int
    arrival_ms: int
    floor_ms: int
    answered_ms: int | None = None
    kind: str = ""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512
    receiver: ChaosReceiver

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stays quiet about clients that hung up: hostile answers provoke exactly that."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:
        """Handles every method the same way."""
        self.server.receiver.handle(self)

    do_GET = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        """Stays quiet."""

    def finish(self) -> None:
        """Ignores a connection the answer already reset."""
        with contextlib.suppress(OSError):
            super().finish()


class ChaosReceiver:
    """A threaded HTTP server on a free loopback port that answers by behaviour and records deliveries."""

    def __init__(self, behaviours: list[Behaviour] | None = None) -> None:
        self.behaviours: dict[str, Behaviour] = {}
        self._lock = threading.Lock()
        self._deliveries: list[Delivery] = []
        self._floors: dict[str, int] = defaultdict(int)
        self._counts: dict[str, int] = defaultdict(int)
        self._arrived = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._released = threading.Event()
        # Replaces "{elsewhere}" in answer headers: the origin of another receiver (set by the world).
        self.elsewhere_origin = "http://127.0.0.1:9"
        self.hops: list[tuple[str, int]] = []  # (path, arrival_ms) of requests to paths no behaviour owns
        self.stream_bytes_sent: list[int] = []
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.receiver = self
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="chaos-receiver",
            daemon=True,
        )
        for behaviour in behaviours or []:
            self.add(behaviour)

    @property
    def origin(self) -> str:
        """Returns scheme, host and port."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def add(self, behaviour: Behaviour) -> Behaviour:
        """Registers a behaviour under its name."""
        self.behaviours[behaviour.name] = behaviour
        return behaviour

    def url(self, behaviour: Behaviour, suffix: str = "") -> str:
        """Returns the URL a job with this behaviour is sent to."""
        return f"{self.origin}/{behaviour.name}/{suffix}"

    def release(self) -> None:
        """Lets every held answer go out."""
        self._released.set()

    @property
    def deliveries(self) -> list[Delivery]:
        """Returns a copy of every delivery so far."""
        with self._lock:
            return list(self._deliveries)

    def count(self) -> int:
        """Returns how many deliveries arrived."""
        with self._lock:
            return len(self._deliveries)

    def wait_for(self, predicate: Callable[[list[Delivery]], bool], timeout_s: float) -> bool:
        """Waits until predicate(deliveries) holds; returns whether it did within timeout_s."""
        end = time.monotonic() + timeout_s
        with self._arrived:
            while not predicate(self._deliveries):
                remaining = end - time.monotonic()
                if remaining <= 0:
                    return False
                self._arrived.wait(min(remaining, 0.1))
        return True

    def handle(self, request: _Handler) -> None:
        """Records one request and answers it as the job's behaviour says."""
        length = int(request.headers.get("Content-Length") or 0)
        if length:
            request.rfile.read(length)
        arrival = now_ms()
        path = request.path
        behaviour = self.behaviours.get(path.strip("/").split("/")[0])
        job_id = request.headers.get("webhook-id") or ""
        if behaviour is None or not job_id:
            with self._lock:
                self.hops.append((path, arrival))
            self._reply(request, Answer())
            return
        with self._lock:
            self._counts[job_id] += 1
            number = self._counts[job_id]
            delivery = Delivery(
                job_id,
                behaviour.name,
                number,
                int(request.headers.get("hookline-attempt") or 0),
                arrival,
                self._floors[job_id],
            )
            self._deliveries.append(delivery)
            self._arrived.notify_all()
        answer = behaviour.answer(number)
        delivery.kind = f"{answer.kind} {answer.status}" if answer.kind == "reply" else answer.kind
        if answer.kind == "hang":
            self._wait(HANG_LIMIT_S, self._stopping)
            request.close_connection = True
            return
        if answer.kind == "reset":
            _reset(request.connection)
            request.close_connection = True
            return
        if answer.kind == "stream":
            delivery.answered_ms = now_ms()
            self._stream(request)
            return
        if answer.kind == "hold":
            self._wait(HANG_LIMIT_S, self._released)
        elif answer.delay_s:
            self._wait(answer.delay_s, self._stopping)
        floor = self._reply(request, answer)
        with self._lock:
            delivery.answered_ms = now_ms()
            # The engine reads the answer after it was written, so its clock is past this floor too. The
            # floor only rises: a stale answer read late must not make an earlier retry look allowed.
            self._floors[job_id] = max(self._floors[job_id], floor)

    def _reply(self, request: _Handler, answer: Answer) -> int:
        """Writes a reply; returns the earliest next arrival its Retry-After allows (0: no bound)."""
        floor = 0
        headers = {
            name: value.replace("{elsewhere}", self.elsewhere_origin)
            for name, value in answer.headers.items()
        }
        if answer.retry_after_s:
            if answer.retry_after_date:
                # An HTTP-date has whole seconds: round up so the promised wait is at least retry_after_s.
                moment_s = math.ceil(time.time()) + answer.retry_after_s
                headers["Retry-After"] = email.utils.formatdate(moment_s, usegmt=True)
                floor = moment_s * 1000
            else:
                headers["Retry-After"] = str(answer.retry_after_s)
                floor = now_ms() + answer.retry_after_s * 1000
        with contextlib.suppress(OSError):
            request.send_response(answer.status)
            for name, value in headers.items():
                request.send_header(name, value)
            request.send_header("Content-Length", "0")
            request.end_headers()
            request.wfile.flush()
        return floor

    def _stream(self, request: _Handler) -> None:
        """Sends 200 with a 100 MB body until done or the client hangs up; records the bytes sent."""
        sent = 0
        chunk = b"x" * STREAM_CHUNK
        try:
            request.send_response(200)
            request.send_header("Content-Length", str(STREAM_BYTES))
            request.end_headers()
            while sent < STREAM_BYTES and not self._stopping.is_set():
                request.wfile.write(chunk)
                sent += len(chunk)
        except OSError:
            pass
        request.close_connection = True
        with self._lock:
            self.stream_bytes_sent.append(sent)

    def _wait(self, limit_s: float, event: threading.Event) -> None:
        event.wait(limit_s)

    def __enter__(self) -> ChaosReceiver:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stopping.set()
        self._released.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _reset(connection: socket.socket) -> None:
    """Resets the connection (RST, not FIN) after the request was read."""
    with contextlib.suppress(OSError):
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        connection.close()
