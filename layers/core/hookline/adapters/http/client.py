"""The HTTP callback client: one attempt per call, to the checked addresses only, never raising.

Design: a minimal HTTP/1.1 client over plain sockets (`http1.py`) with a small pool of kept-alive
connections per executor thread, so threads share nothing on the hot path. An executor spends most of its
time in the callback client, so what a request costs here bounds how fast an executor delivers
(docs/performance.md compares it with general HTTP clients).

The client never resolves a name while connecting: it connects only to addresses `check_url` approved for
the attempt, trying them in the resolver's order until one answers (each TCP connect gets an even share
of the time left, at least CONNECT_SHARE_MIN_S), so a name with one dead address, or an IPv6 address where
there is no IPv6 route, is still reached. Connections are pooled per tenant, host name and address: TLS
uses the name for SNI and the certificate check, a connection made for a.example is never reused for
b.example just because both resolve to the same IP, nor for a.example at an address no longer approved,
and one tenant's receiver can never answer another tenant's callback on a shared host (a receiver that
sends bytes nobody asked for only misleads its own tenant's jobs, and only if they arrive in the instant
between the check right before reuse and the request).

A connection is kept idle at most KEEPALIVE_EXPIRY_S, less when the response's `Keep-Alive: timeout=N` says
the server closes it sooner, since common servers close idle connections after 2-5 s. Should a reused
connection still fail before the receiver sent a single byte (the server closed it as the request went
out), the request goes once more on a new connection, within the same deadline: the receiver never
answered, and a callback may be delivered more than once anyway (at-least-once delivery).

The attempt also carries its deadline (the earlier of `timeout_s` and the request's `deadline_s`), and
every socket operation is clamped to it, so it bounds the whole attempt (connect, TLS, writes, each read),
not each operation: a receiver dripping one byte a second is cut at the deadline.
The system DNS lookup blocks and takes no timeout, so it runs on a helper thread and the attempt stops
waiting for it at the deadline (`lookup.lookup_within`: the lookup ends in the background).
A name's addresses are then kept for DNS_CACHE_S, so a busy executor does not pay a thread hand-off and a
resolver round trip on every callback to the same host. Only what the resolver answered is kept (a failure
is not), and every attempt still checks each kept address (`check_url`) before using any: the cache can
only repeat an answer that was safe, never let an unsafe one through. It makes an address change take up to
DNS_CACHE_S to be seen.
A name that does not resolve is a retryable `dns_error`: a DNS outage must not dead-letter every job.

Once the final status line and headers are read, the status is the outcome: a body that then breaks its
framing, ends early or outlasts the deadline does not turn an accepted callback into a failed one.

Memory per attempt is bounded whatever the receiver sends: `http1` refuses a status line and headers
over 100 KiB, the body is read only up to the preview size (then the connection is closed, not
drained), and nothing decompresses it. Redirects are never followed. Nothing the receiver sends makes
`deliver` raise.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import replace
from types import TracebackType

import certifi

from hookline.adapters.http import http1
from hookline.adapters.http.lookup import lookup_within
from hookline.adapters.http.safety import ResolvedTarget, Resolver, check_url, resolve_with_getaddrinfo
from hookline.domain.backoff import parse_retry_after
from hookline.domain.callbacks import CallbackRequest, CallbackResult
from hookline.domain.clock import SystemClock
from hookline.domain.constants import RESPONSE_BODY_PREVIEW_BYTES
from hookline.domain.errors import DnsTimeout, UnresolvedHost, UnsafeUrl
from hookline.ports import Clock

logger = logging.getLogger(__name__)

USER_AGENT = "Hookline-Callback/1"
# Framing and routing headers are Hookline's to set; a job's own copy could desynchronise the request.
_RESERVED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection", "keep-alive"})
_METHODS_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})
# A thread has one request in flight; the rest are kept-alive connections to recently called hosts.
DEFAULT_CONNECTIONS_PER_THREAD = 4
# Idle connections are dropped sooner than common servers drop them (nginx 75 s, but Node.js 5 s, Apache
# 5 s, many load balancers and frameworks 2-5 s); a response's Keep-Alive timeout shortens it further.
KEEPALIVE_EXPIRY_S = 4.0
DNS_CACHE_S = 5.0  # how long a name's resolved addresses are reused
DNS_CACHE_ENTRIES = 1024  # names kept at most; the cache is emptied when full
# Each address's TCP connect gets the time left divided by the addresses left, but at least this much
# (as Go's dialer does), so a name with many dead addresses still gets a fair try at each early one.
CONNECT_SHARE_MIN_S = 2.0
ERROR_MESSAGE_CHARS = 500  # an execution record keeps this much of an error message
LOCATION_CHARS = 200  # and this much of a refused redirect's Location
_NOT_MODIFIED = 304  # a 3xx that is no redirect: recorded as the non-2xx answer it is


class _ThreadPool:
    """Holds one thread's kept-alive connections, at most max_connections, the oldest dropped first.

    Made on the owning thread, which alone uses it: no lock. A connection is reused only for the same
    tenant (its `owner`), scheme, host name and port (TLS checked that name), at an address that the
    current attempt's check approved again, and only after a check right before its reuse that nothing
    arrived while it was idle. Calling `close()` closes them once.
    """

    def __init__(self, ssl_context: ssl.SSLContext, max_connections: int) -> None:
        self._ssl_context = ssl_context
        self._max_connections = max_connections
        self._idle: list[http1.Connection] = []  # oldest first
        # An executor that replaces its threads would otherwise leave their sockets open until garbage
        # collection; close them as soon as the owning thread object goes (or on close(), whichever is first).
        self.close = weakref.finalize(threading.current_thread(), _close_all, self._idle)

    def take_idle(self, owner: str, endpoints: Sequence[http1.Endpoint]) -> http1.Connection | None:
        """Returns a usable kept connection of owner's to one of endpoints, else None.

        Expired connections met on the way are closed, and so is a matching one that is stale: the check
        for unread bytes is made here, right before the caller sends on the connection.
        """
        now_s = time.monotonic()
        found: http1.Connection | None = None
        for connection in reversed(self._idle[:]):  # newest first; expired and stale ones are dropped
            idle_limit_s = KEEPALIVE_EXPIRY_S
            if connection.idle_limit_s is not None:
                idle_limit_s = min(idle_limit_s, connection.idle_limit_s)
            if now_s - connection.idle_since_s >= idle_limit_s:
                self._idle.remove(connection)
                connection.close()
            elif found is None and connection.owner == owner and connection.endpoint in endpoints:
                self._idle.remove(connection)
                if connection.is_stale():
                    connection.close()
                else:
                    found = connection
        return found

    def open(self, owner: str, endpoints: Sequence[http1.Endpoint], deadline_s: float) -> http1.Connection:
        """Connects to the first of endpoints that answers, each TCP connect getting its share of the time.

        Raises:
            ConnectFailed: No address took a connection, the last one refusing it (or TLS failed).
            Timeout: The last address did not answer by the deadline, or the TLS handshake outlasted it.
        """
        for index, endpoint in enumerate(endpoints):
            left = len(endpoints) - index
            share_s = max((deadline_s - time.monotonic()) / left, CONNECT_SHARE_MIN_S)
            try:
                return http1.Connection.open(
                    endpoint, self._ssl_context, deadline_s, time.monotonic() + share_s, owner
                )
            except http1.AddressFailed as exc:
                if left > 1 and time.monotonic() < deadline_s:
                    continue
                if exc.timed_out:
                    raise http1.Timeout(str(exc)) from None
                raise
        raise http1.ConnectFailed("no address to connect to")

    def give_back(self, connection: http1.Connection) -> None:
        """Keeps a connection whose exchange ended cleanly, closing the oldest past the pool's size."""
        connection.idle_since_s = time.monotonic()
        self._idle.append(connection)
        while len(self._idle) > self._max_connections:
            self._idle.pop(0).close()


def _close_all(connections: list[http1.Connection]) -> None:
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
            ssl_context: Trust settings for HTTPS; the certifi roots with the standard library's defaults
                when None (tests pass their own CA).
            dns_cache_s: How long a name's addresses are reused (0: resolve on every attempt).
            monotonic: The clock of the DNS cache (tests pass their own).
        """
        self._allow_loopback = allow_loopback
        self._resolver = resolver or resolve_with_getaddrinfo
        self._clock = clock or SystemClock()
        self._connections_per_thread = connections_per_thread
        # No proxy settings are read from the environment, so nothing can divert a connection away from
        # the checked address.
        self._ssl_context = ssl_context or ssl.create_default_context(cafile=certifi.where())
        self._local = threading.local()
        # Weak, so the transports of threads that ended do not pile up here.
        self._pools: weakref.WeakSet[_ThreadPool] = weakref.WeakSet()
        self._pools_lock = threading.Lock()
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
        except (http1.Timeout, TimeoutError):
            budget_s = max(0.0, deadline_s - started_s)
            return _failure(started_s, "timeout", f"no complete response within {budget_s:.3g} s")
        except http1.ConnectFailed as exc:
            return _failure(started_s, "connect_error", str(exc) or "connection failed")
        except (http1.InvalidRequest, UnicodeEncodeError) as exc:
            # The job's own method or headers are not valid HTTP; sending again cannot help.
            return _failure(started_s, "invalid_request", f"{type(exc).__name__}: {exc}", retryable=False)
        except (http1.ProtocolViolation, OSError) as exc:
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
        one attempt. A 304 Not Modified is no redirect (it answers a conditional request): it is recorded as
        the non-2xx status it is.
        """
        if deadline_s <= started_s:
            raise http1.Timeout("no time left for the attempt")
        headers = _outgoing_headers(request.headers)
        target = check_url(
            request.url,
            self._allow_loopback,
            lambda host, port: self._lookup(host, port, deadline_s),
            lookup_timeout_s=None,
        )
        response = self._send(target, request, headers, deadline_s)
        result = self._result(response, started_s)
        if 300 <= response.status < 400 and response.status != _NOT_MODIFIED:
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
        """Resolves host on a helper thread, waiting no longer than the attempt's deadline.

        Raises:
            Timeout: No answer by the deadline.
            OSError: The name does not resolve.
        """
        remaining_s = deadline_s - time.monotonic()
        if remaining_s <= 0:
            raise http1.Timeout(f"no time left to resolve {host!r}")
        try:
            return lookup_within(self._resolver, host, port, remaining_s)
        except DnsTimeout as exc:
            raise http1.Timeout(str(exc)) from None

    def _send(
        self,
        target: ResolvedTarget,
        request: CallbackRequest,
        headers: list[tuple[bytes, bytes]],
        deadline_s: float,
    ) -> http1.Response:
        """Sends one HTTP request to a checked address and reads at most the preview of the body.

        The request is encoded (and refused if invalid) before any connection is taken. A connection
        whose exchange failed in any way is closed, never pooled: its state is unknown. A reused one that
        failed before the receiver sent any byte is replaced once by a new connection (see the module).
        """
        method = request.method.upper()
        host = f"[{target.host}]" if ":" in target.host else target.host
        if target.port != (443 if target.scheme == "https" else 80):
            host = f"{host}:{target.port}"
        framing = [(b"Host", host.encode("ascii"))]
        if request.body or method in _METHODS_WITH_BODY:
            framing.append((b"Content-Length", str(len(request.body)).encode("ascii")))
        encoded = http1.encode_request(method, target.path_and_query, framing + headers, request.body)
        pool = self._thread_pool()
        endpoints = [http1.Endpoint(target.scheme, target.host, target.port, ip) for ip in target.ips]
        connection = pool.take_idle(request.tenant, endpoints)
        if connection is not None:
            try:
                return self._exchange(pool, connection, encoded, request.body, method, deadline_s)
            except (OSError, http1.ClosedBeforeResponse):
                if connection.received:
                    raise
        return self._exchange(
            pool, pool.open(request.tenant, endpoints, deadline_s), encoded, request.body, method, deadline_s
        )

    @staticmethod
    def _exchange(
        pool: _ThreadPool,
        connection: http1.Connection,
        encoded: bytes,
        body: bytes,
        method: str,
        deadline_s: float,
    ) -> http1.Response:
        """Runs one exchange on connection, then pools or closes it."""
        try:
            response, reusable = connection.exchange(
                encoded, body, method, RESPONSE_BODY_PREVIEW_BYTES, deadline_s
            )
        except BaseException:
            connection.close()
            raise
        if reusable:
            pool.give_back(connection)
        else:
            connection.close()
        return response

    def _result(self, response: http1.Response, started_s: float) -> CallbackResult:
        """Turns a response into a result."""
        return CallbackResult(
            status_code=response.status,
            latency_ms=_elapsed_ms(started_s),
            response_preview=response.preview.decode("utf-8", errors="replace"),
            retry_after_s=parse_retry_after(response.headers.get("retry-after"), self._clock.now_ms()),
        )


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
        # Protocol errors quote the receiver's bytes, and the message is stored in the execution record.
        error_message=_clipped(message, ERROR_MESSAGE_CHARS),
        retryable_error=retryable,
    )


def _clipped(text: str, limit: int) -> str:
    """Returns text cut to at most limit characters, marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _elapsed_ms(started_s: float) -> int:
    """Returns whole milliseconds since started_s (a time.monotonic() value)."""
    return int((time.monotonic() - started_s) * 1000)
