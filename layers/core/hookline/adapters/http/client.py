"""The HTTP callback client: one attempt per call, pinned to the checked address, never raising.

Design: a minimal HTTP/1.1 client over plain sockets (`wire.py`) with a small pool of kept-alive
connections per executor thread, so threads share nothing on the hot path. It replaced httpcore with h11,
whose CPU per request was twice a raw `http.client`'s (bench/hotpath.py `--mode callback`), and an executor
spends most of its time in the callback client.

The client never resolves a name while connecting: it connects to the address `check_url` approved for
the attempt. Connections are pooled per host name and address, TLS uses the name for SNI and the
certificate check, and a connection made for a.example is never reused for b.example just because both
resolve to the same IP, nor for a.example once its checked address changed.

The attempt also carries its deadline (the earlier of `timeout_s` and the request's `deadline_s`), and
every socket operation is clamped to it, so it bounds the whole attempt (connect, TLS, writes, each read),
not each operation: a receiver dripping one byte a second is cut at the deadline.
The system DNS lookup blocks and takes no timeout, so it runs on a helper thread and the attempt stops
waiting for it at the deadline (the lookup ends in the background, within the resolver's own timeout).
A name's addresses are then kept for DNS_CACHE_S, so a busy executor does not pay a thread hand-off and a
resolver round trip on every callback to the same host. Only what the resolver answered is kept (a failure
is not), and every attempt still checks each kept address (`check_url`) before pinning one: the cache can
only repeat an answer that was safe, never let an unsafe one through. It makes an address change take up to
DNS_CACHE_S to be seen, which kept-alive connections (KEEPALIVE_EXPIRY_S) already allow for longer.
A name that does not resolve is a retryable `dns_error`: a DNS outage must not dead-letter every job.

Memory per attempt is bounded whatever the receiver sends: `wire` refuses a status line and headers
over 100 KiB, the body is read only up to the preview size (then the connection is closed, not
drained), and nothing decompresses it. Redirects are never followed. Nothing the receiver sends makes
`deliver` raise.
"""

from __future__ import annotations

import logging
import math
import re
import ssl
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC
from email.utils import parsedate_to_datetime
from types import TracebackType

import httpx

from hookline.adapters.http import wire
from hookline.adapters.http.safety import ResolvedTarget, Resolver, check_url, resolve_with_getaddrinfo
from hookline.domain.callbacks import CallbackRequest, CallbackResult
from hookline.domain.clock import SystemClock
from hookline.domain.constants import MAX_RETRY_AFTER_S, RESPONSE_BODY_PREVIEW_BYTES
from hookline.domain.errors import UnresolvedHost, UnsafeUrl
from hookline.ports import Clock

logger = logging.getLogger(__name__)

USER_AGENT = "Hookline-Callback/1"
# Framing and routing headers are Hookline's to set; a job's own copy could desynchronise the request.
_RESERVED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection", "keep-alive"})
_METHODS_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})
# A thread has one request in flight; the rest are kept-alive connections to recently called hosts.
DEFAULT_CONNECTIONS_PER_THREAD = 4
DNS_LOOKUP_THREADS = 16  # lookups at once per client; more wait their turn (within their deadline)
KEEPALIVE_EXPIRY_S = 30.0
DNS_CACHE_S = 5.0  # how long a name's resolved addresses are reused (shorter than KEEPALIVE_EXPIRY_S)
DNS_CACHE_ENTRIES = 1024  # names kept at most; the cache is emptied when full
ERROR_MESSAGE_CHARS = 500  # an execution record keeps this much of an error message
LOCATION_CHARS = 200  # and this much of a refused redirect's Location
_DELAY_SECONDS = re.compile(r"[0-9]+")  # ASCII only: \d would also match other scripts' digits
_MAX_DELAY_DIGITS = 9  # more is over a day anyway
_MAX_DATE_CHARS = 64  # an HTTP-date is at most 30 characters (RFC 850 form with a long weekday)


class _ThreadPool:
    """Holds one thread's kept-alive connections, at most max_connections, the oldest dropped first.

    Made on the owning thread, which alone uses it: no lock. A connection is keyed by scheme, host name,
    port AND the checked address, so it is reused only for the same name (TLS checked that name) at an
    address that the current attempt's check approved again. Calling `close()` closes them once.
    """

    def __init__(self, ssl_context: ssl.SSLContext, max_connections: int) -> None:
        self._ssl_context = ssl_context
        self._max_connections = max_connections
        self._idle: list[wire.Connection] = []  # oldest first
        # An executor that replaces its threads would otherwise leave their sockets open until garbage
        # collection; close them as soon as the owning thread object goes (or on close(), whichever is first).
        self.close = weakref.finalize(threading.current_thread(), _close_all, self._idle)

    def take(self, key: tuple[str, str, int, str], deadline_s: float) -> wire.Connection:
        """Returns a usable kept connection for key, else a new one connected by deadline_s."""
        now_s = time.monotonic()
        found: wire.Connection | None = None
        for connection in reversed(self._idle[:]):  # newest first; expired and stale ones are dropped
            if now_s - connection.idle_since_s >= KEEPALIVE_EXPIRY_S:
                self._idle.remove(connection)
                connection.close()
            elif found is None and connection.key == key:
                self._idle.remove(connection)
                if connection.is_stale():
                    connection.close()
                else:
                    found = connection
        return found or wire.Connection.open(key, self._ssl_context, deadline_s)

    def give_back(self, connection: wire.Connection) -> None:
        """Keeps a connection whose exchange ended cleanly, closing the oldest past the pool's size."""
        connection.idle_since_s = time.monotonic()
        self._idle.append(connection)
        while len(self._idle) > self._max_connections:
            self._idle.pop(0).close()


def _close_all(connections: list[wire.Connection]) -> None:
    """Closes every connection in the list and empties it."""
    while connections:
        connections.pop().close()


class HttpCallbackClient:
    """Delivers callbacks over HTTP(S); one instance is shared by all executor threads.

    Thread safety: each thread has its own connection pool and attempt state, so concurrent `deliver`
    calls share nothing mutable but the registry of pools, which a lock guards.
    """

    def __init__(
        self,
        allow_loopback: bool,
        resolver: Resolver | None = None,
        clock: Clock | None = None,
        connections_per_thread: int = DEFAULT_CONNECTIONS_PER_THREAD,
        ssl_context: ssl.SSLContext | None = None,
        dns_cache_s: float = DNS_CACHE_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """Builds the client; connection pools are made per thread on first use.

        Args:
            allow_loopback: Lets callbacks reach 127.0.0.0/8 and ::1 (local development only).
            resolver: Looks names up; the system resolver when None.
            clock: Reads wall time to turn an HTTP-date Retry-After into seconds.
            connections_per_thread: Pool size of each thread, across all hosts.
            ssl_context: Trust settings for HTTPS; the certifi roots when None (tests pass their own CA).
            dns_cache_s: How long a name's addresses are reused (0: resolve on every attempt).
            monotonic: The clock of the DNS cache (tests pass their own).
        """
        self._allow_loopback = allow_loopback
        self._resolver = resolver or resolve_with_getaddrinfo
        self._clock = clock or SystemClock()
        self._connections_per_thread = connections_per_thread
        # No proxy settings are read from the environment, so nothing can divert a connection away from
        # the checked address.
        self._ssl_context = ssl_context or httpx.create_ssl_context()
        self._local = threading.local()
        # Weak, so the transports of threads that ended do not pile up here.
        self._pools: weakref.WeakSet[_ThreadPool] = weakref.WeakSet()
        self._pools_lock = threading.Lock()
        # Lookups of every thread; a hung one holds its helper until the system resolver gives up.
        self._lookups = ThreadPoolExecutor(max_workers=DNS_LOOKUP_THREADS, thread_name_prefix="hookline-dns")
        self._dns_cache_s = dns_cache_s
        self._monotonic = monotonic
        self._resolved: dict[tuple[str, int], tuple[float, Sequence[str]]] = {}  # -> (expires, addresses)
        self._resolved_lock = threading.Lock()

    def close(self) -> None:
        """Closes every pooled connection of every thread; the client must not be used afterwards."""
        with self._pools_lock:
            pools = list(self._pools)
        for pool in pools:
            pool.close()
        self._lookups.shutdown(wait=False, cancel_futures=True)

    def _thread_pool(self) -> _ThreadPool:
        """Returns the calling thread's connection pool, making it on the thread's first delivery."""
        pool: _ThreadPool | None = getattr(self._local, "pool", None)
        if pool is None:
            pool = _ThreadPool(self._ssl_context, self._connections_per_thread)
            self._local.pool = pool
            with self._pools_lock:
                self._pools.add(pool)
        return pool

    def __enter__(self) -> HttpCallbackClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def deliver(self, request: CallbackRequest) -> CallbackResult:
        """Makes one attempt at request and reports what happened; never raises.

        Args:
            request: The callback; the earlier of `timeout_s` from now and `deadline_s` bounds the whole
                attempt (lookup, connect, TLS, sending and reading).

        Returns:
            The outcome; network and HTTP failures are reported in it, never raised.
        """
        started_s = time.monotonic()
        deadline_s = started_s + request.timeout_s
        if request.deadline_s is not None:
            deadline_s = min(deadline_s, request.deadline_s)
        try:
            return self._attempt(request, started_s, deadline_s)
        except UnresolvedHost as exc:
            return _failure(started_s, "dns_error", str(exc))
        except UnsafeUrl as exc:
            return _failure(started_s, "unsafe_url", str(exc), retryable=False)
        except (wire.Timeout, TimeoutError):
            budget_s = max(0.0, deadline_s - started_s)
            return _failure(started_s, "timeout", f"no complete response within {budget_s:.3g} s")
        except wire.ConnectFailed as exc:
            return _failure(started_s, "connect_error", str(exc) or "connection failed")
        except (wire.InvalidRequest, UnicodeEncodeError) as exc:
            # The job's own method or headers are not valid HTTP; sending again cannot help.
            return _failure(started_s, "invalid_request", f"{type(exc).__name__}: {exc}", retryable=False)
        except (wire.ProtocolViolation, OSError) as exc:
            return _failure(started_s, "transport_error", f"{type(exc).__name__}: {exc}")
        except Exception as exc:
            # The receiver controls every byte of the response, so a bug anywhere in reading it must not
            # escape: the executor would record no outcome and run the job again until it is dead, even
            # after a 2xx. Retryable, because it says nothing about the job; logged, because it is a bug.
            logger.exception("callback attempt failed unexpectedly", extra={"error": type(exc).__name__})
            return _failure(
                started_s, "client_error", f"unexpected {type(exc).__name__} in the callback client"
            )

    def _attempt(self, request: CallbackRequest, started_s: float, deadline_s: float) -> CallbackResult:
        """Sends request once; raises transport errors to `deliver`.

        Redirects are never followed, to any place: a 3xx is the receiver's answer and is recorded as a
        failure with its status, as Cloud Tasks treats any non-2xx. Following one would send the signed
        request to a URL the tenant never submitted and submit never checked, and multiply requests within
        one attempt.
        """
        if deadline_s <= started_s:
            raise wire.Timeout("no time left for the attempt")
        headers = _outgoing_headers(request.headers)
        target = check_url(
            request.url,
            self._allow_loopback,
            lambda host, port: self._lookup(host, port, deadline_s),
            lookup_timeout_s=None,
        )
        response = self._send(target, request.method.upper(), headers, request.body, deadline_s)
        result = self._result(response, started_s)
        if 300 <= response.status < 400:
            # Permanent, like any other 4xx-style answer: the same request to the same URL gets the same
            # redirect, so retries only repeat it; the tenant fixes the URL and replays the job.
            location = response.headers.get("location")
            moved = f" to {_clipped(location, LOCATION_CHARS)}" if location else ""
            message = f"redirects are not followed: the receiver answered {response.status}{moved}"
            return replace(result, error_class="redirect_refused", error_message=message)
        return result

    def _lookup(self, host: str, port: int, deadline_s: float) -> Sequence[str]:
        """Returns host's addresses: kept ones for DNS_CACHE_S, else resolved (see _resolve) and kept."""
        key = (host, port)
        now_s = self._monotonic()
        with self._resolved_lock:
            kept = self._resolved.get(key)
        if kept is not None and kept[0] > now_s:
            return kept[1]
        addresses = self._resolve(host, port, deadline_s)
        if self._dns_cache_s > 0:
            with self._resolved_lock:
                if len(self._resolved) >= DNS_CACHE_ENTRIES:
                    self._resolved.clear()
                self._resolved[key] = (now_s + self._dns_cache_s, list(addresses))
        return addresses

    def _resolve(self, host: str, port: int, deadline_s: float) -> Sequence[str]:
        """Resolves host on a helper thread, waiting no longer than the attempt's deadline."""
        remaining_s = deadline_s - time.monotonic()
        if remaining_s <= 0:
            raise wire.Timeout(f"no time left to resolve {host!r}")
        lookup = self._lookups.submit(self._resolver, host, port)
        try:
            return lookup.result(timeout=remaining_s)
        except TimeoutError:  # the lookup's own OSErrors pass through: they are not the wait's timeout
            if not lookup.done():
                raise wire.Timeout(f"resolving {host!r} outlasted the attempt") from None
            raise

    def _send(
        self,
        target: ResolvedTarget,
        method: str,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        deadline_s: float,
    ) -> wire.Response:
        """Sends one HTTP request to the checked address and reads at most the preview of the body.

        The request is encoded (and refused if invalid) before any connection is taken. A connection
        whose exchange failed in any way is closed, never pooled: its state is unknown.
        """
        host = f"[{target.host}]" if ":" in target.host else target.host
        if target.port != (443 if target.scheme == "https" else 80):
            host = f"{host}:{target.port}"
        framing = [(b"Host", host.encode("ascii"))]
        if body or method in _METHODS_WITH_BODY:
            framing.append((b"Content-Length", str(len(body)).encode("ascii")))
        request = wire.encode_request(method, target.path_and_query, framing + headers, body)
        pool = self._thread_pool()
        connection = pool.take((target.scheme, target.host, target.port, target.ip), deadline_s)
        try:
            response, reusable = connection.exchange(
                request, body, method, RESPONSE_BODY_PREVIEW_BYTES, deadline_s
            )
        except BaseException:
            connection.close()
            raise
        if reusable:
            pool.give_back(connection)
        else:
            connection.close()
        return response

    def _result(self, response: wire.Response, started_s: float) -> CallbackResult:
        """Turns a response into a result."""
        return CallbackResult(
            status_code=response.status,
            latency_ms=_elapsed_ms(started_s),
            response_preview=response.preview.decode("utf-8", errors="replace"),
            retry_after_s=parse_retry_after(response.headers.get("retry-after"), self._clock.now_ms()),
        )


def parse_retry_after(value: str | None, now_ms: int) -> float | None:
    """Turns a Retry-After header (delay in seconds or an HTTP-date) into seconds from now; never raises.

    Only ASCII digits count as a delay: str.isdigit() also accepts "²" or "٣", which float() rejects, and
    a receiver controls this header. Anything else that is short ASCII is read as an HTTP-date (any of
    RFC 9110's three forms, as leniently as email.utils reads dates) and otherwise ignored.

    Args:
        value: The header value, or None when absent.
        now_ms: The current wall time in Unix milliseconds, to measure an HTTP-date against.

    Returns:
        Seconds to wait, clamped to [0, MAX_RETRY_AFTER_S]; None when absent or unparseable.
    """
    if value is None:
        return None
    value = value.strip(" \t")
    if _DELAY_SECONDS.fullmatch(value):
        # A long digit string is past the cap anyway; int() of one would be slow, or refused past 4300 digits.
        delay_s = float(value) if len(value) <= _MAX_DELAY_DIGITS else float(MAX_RETRY_AFTER_S)
    elif value.isascii() and len(value) <= _MAX_DATE_CHARS:
        try:
            moment = parsedate_to_datetime(value)
            if moment.tzinfo is None:  # asctime form (or "-0000"): an HTTP-date is always GMT
                moment = moment.replace(tzinfo=UTC)
            delay_s = moment.timestamp() - now_ms / 1000
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    else:
        return None
    if not math.isfinite(delay_s):
        return None
    return min(max(delay_s, 0.0), float(MAX_RETRY_AFTER_S))


def _outgoing_headers(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    """Encodes the job's headers, dropping the ones Hookline sets and adding a default User-Agent."""
    encoded = [
        (name.encode("utf-8"), value.encode("utf-8"))
        for name, value in headers.items()
        if name.lower() not in _RESERVED_HEADERS
    ]
    if not any(name.lower() == "user-agent" for name in headers):
        encoded.append((b"User-Agent", USER_AGENT.encode("ascii")))
    return encoded


def _failure(started_s: float, error_class: str, message: str, retryable: bool = True) -> CallbackResult:
    """Builds the result of an attempt that got no usable response."""
    return CallbackResult(
        status_code=None,
        latency_ms=_elapsed_ms(started_s),
        error_class=error_class,
        # Protocol errors quote the receiver's bytes (h11 echoes a whole malformed header line, up to
        # 100 KiB), and the message is stored in the execution record.
        error_message=_clipped(message, ERROR_MESSAGE_CHARS),
        retryable_error=retryable,
    )


def _clipped(text: str, limit: int) -> str:
    """Returns text cut to at most limit characters, marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _elapsed_ms(started_s: float) -> int:
    """Returns whole milliseconds since started_s (a time.monotonic() value)."""
    return int((time.monotonic() - started_s) * 1000)
