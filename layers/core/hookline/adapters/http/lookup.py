"""Name lookups with a time limit, for the submit-time URL check and the callback client.

The system resolver (getaddrinfo) blocks and takes no timeout, and a tenant chooses the name, so a name whose
authoritative servers never answer would hold an API request for the resolver's full retry cycle (tens of
seconds with some configurations, past API Gateway's 29 s), or a callback attempt past its deadline. So the
lookup runs on a daemon helper thread and the caller stops waiting at its own limit; the helper ends in the
background when the resolver gives up, and never delays interpreter exit.

What is bounded is each caller's wait, not the lookups that answer: a new name always gets a helper at
once (an idle one, else a new one), so however many lookups hang, a name that resolves at once does. The
helpers are bounded another way: callers asking for a name already being looked up (the same resolver, name
and port) wait for that one lookup instead of starting another, so repeating a hung name adds no thread;
and at most MAX_NAMES_IN_FLIGHT distinct names are looked up at once, past which a new name fails at once
(no wait), which only a flood of distinct names that all hang can reach. A helper that found no work for
HELPER_IDLE_S ends; until then it takes the next lookup, so a busy process does not start a thread for each.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence

from hookline.domain.errors import DnsTimeout

SUBMIT_LOOKUP_TIMEOUT_S = 2.0
MAX_NAMES_IN_FLIGHT = 128
HELPER_THREAD_NAME = "hookline-dns"
HELPER_IDLE_S = 60.0

Resolver = Callable[[str, int], Sequence[str]]


class _Answer:
    """Carries a resolver's answer or exception from its helper thread to every waiting caller."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.addresses: Sequence[str] = ()
        self.error: BaseException | None = None


_Key = tuple[Resolver, str, int]


class _Lookups:
    """The lookups in flight and the helper threads that run them (one per process: see `lookup_within`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _in_flight and _idle_helpers
        self._in_flight: dict[_Key, _Answer] = {}
        self._queue: queue.SimpleQueue[tuple[_Key, _Answer]] = queue.SimpleQueue()
        # Helpers waiting for work that no queued lookup has claimed: there are always at least as many
        # helpers waiting on the queue as lookups in it.
        self._idle_helpers = 0

    def answer_for(self, key: _Key) -> _Answer:
        """Returns the answer of key's lookup in flight, else starts one; DnsTimeout when too many are."""
        with self._lock:
            answer = self._in_flight.get(key)
            if answer is not None:
                return answer
            if len(self._in_flight) >= MAX_NAMES_IN_FLIGHT:
                message = f"callback host {key[1]!r} was not looked up: too many lookups in flight"
                raise DnsTimeout(message + "; try again later", field="url")
            answer = self._in_flight[key] = _Answer()
            self._queue.put((key, answer))
            needs_helper = self._idle_helpers == 0
            self._idle_helpers = max(0, self._idle_helpers - 1)  # an idle helper takes it, else a new one
        if needs_helper:
            threading.Thread(target=self._serve, name=HELPER_THREAD_NAME, daemon=True).start()
        return answer

    def names_in_flight(self) -> int:
        """Returns how many names are being looked up now (hung ones included)."""
        with self._lock:
            return len(self._in_flight)

    def _serve(self) -> None:
        """Runs queued lookups on a helper thread; ends once no lookup came for HELPER_IDLE_S."""
        while True:
            try:
                key, answer = self._queue.get(timeout=HELPER_IDLE_S)
            except queue.Empty:
                with self._lock:
                    if self._idle_helpers > 0:  # no queued lookup counts on this helper: it may end
                        self._idle_helpers -= 1
                        return
                continue  # a lookup was queued for it as it timed out: take it
            self._run(key, answer)
            with self._lock:
                self._idle_helpers += 1

    def _run(self, key: _Key, answer: _Answer) -> None:
        """Looks key's name up and hands the outcome to every caller waiting for it."""
        resolver, host, port = key
        try:
            answer.addresses = resolver(host, port)
        except BaseException as exc:  # handed to the callers, who re-raise it; nothing is lost here
            answer.error = exc
        finally:
            with self._lock:
                del self._in_flight[key]
            answer.done.set()


_lookups = _Lookups()


def lookup_within(resolver: Resolver, host: str, port: int, timeout_s: float) -> Sequence[str]:
    """Returns resolver(host, port), waiting for it no longer than timeout_s.

    Args:
        resolver: Looks names up; may block without a limit of its own.
        host: The name to look up.
        port: The TCP port, passed through to the resolver.
        timeout_s: How long to wait, helper thread included.

    Returns:
        What the resolver returned.

    Raises:
        DnsTimeout: No answer within timeout_s (the lookup goes on in the background), or
            MAX_NAMES_IN_FLIGHT other names are being looked up (raised at once).
        Exception: Whatever the resolver raised (OSError when the name does not resolve).
    """
    answer = _lookups.answer_for((resolver, host, port))
    if not answer.done.wait(max(0.0, timeout_s)):
        message = f"callback host {host!r} did not resolve within {timeout_s:.3g} s; try again later"
        raise DnsTimeout(message, field="url")
    if answer.error is not None:
        raise answer.error
    return answer.addresses


def names_in_flight() -> int:
    """Returns how many names are being looked up now (hung ones included)."""
    return _lookups.names_in_flight()
