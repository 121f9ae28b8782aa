"""Name lookups with a time limit, for the submit-time URL check and the callback client.

The system resolver (getaddrinfo) blocks and takes no timeout, and a tenant chooses the name, so a name whose
authoritative servers never answer would hold an API request for the resolver's full retry cycle (tens of
seconds with some configurations, past API Gateway's 29 s), or a callback attempt past its deadline. So the
lookup runs on a daemon helper thread and the caller stops waiting at its own limit; the helper ends in the
background when the resolver gives up, and never delays interpreter exit.

What is bounded is each caller's wait, not the lookups that answer: a new name always gets a helper of its
own at once, so however many lookups hang, a name that resolves at once does. The helpers are bounded
another way: callers asking for a name already being looked up (the same resolver, name and port) wait for
that one lookup instead of starting another, so repeating a hung name adds no thread; and at most
MAX_NAMES_IN_FLIGHT distinct names are looked up at once, past which a new name fails at once (no wait),
which only a flood of distinct names that all hang can reach.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from hookline.domain.errors import DnsTimeout

SUBMIT_LOOKUP_TIMEOUT_S = 2.0
MAX_NAMES_IN_FLIGHT = 128
HELPER_THREAD_NAME = "hookline-dns"

Resolver = Callable[[str, int], Sequence[str]]


class _Answer:
    """Carries a resolver's answer or exception from its helper thread to every waiting caller."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.addresses: Sequence[str] = ()
        self.error: BaseException | None = None


_in_flight: dict[tuple[Resolver, str, int], _Answer] = {}
_in_flight_lock = threading.Lock()


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
    key = (resolver, host, port)
    with _in_flight_lock:
        answer = _in_flight.get(key)
        started = answer is None
        if answer is None:
            if len(_in_flight) >= MAX_NAMES_IN_FLIGHT:
                message = f"callback host {host!r} was not looked up: too many lookups in flight"
                raise DnsTimeout(message + "; try again later", field="url")
            answer = _in_flight[key] = _Answer()
    if started:
        threading.Thread(target=_run, args=(key, answer), name=HELPER_THREAD_NAME, daemon=True).start()
    if not answer.done.wait(max(0.0, timeout_s)):
        message = f"callback host {host!r} did not resolve within {timeout_s:.3g} s; try again later"
        raise DnsTimeout(message, field="url")
    if answer.error is not None:
        raise answer.error
    return answer.addresses


def _run(key: tuple[Resolver, str, int], answer: _Answer) -> None:
    """Looks key's name up on a helper thread and hands the outcome to every caller waiting for it."""
    resolver, host, port = key
    try:
        answer.addresses = resolver(host, port)
    except BaseException as exc:  # handed to the callers, who re-raise it; nothing is lost here
        answer.error = exc
    finally:
        with _in_flight_lock:
            del _in_flight[key]
        answer.done.set()


def names_in_flight() -> int:
    """Returns how many names are being looked up now (hung ones included)."""
    with _in_flight_lock:
        return len(_in_flight)
