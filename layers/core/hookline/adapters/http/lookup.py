"""Name lookups with a time limit, for the submit-time URL check.

The system resolver (getaddrinfo) blocks and takes no timeout, and a tenant chooses the name, so a name whose
authoritative servers never answer would hold an API request for the resolver's full retry cycle (tens of
seconds with some configurations, past API Gateway's 29 s). As the callback client does for delivery, the
lookup runs on a helper thread and the caller stops waiting at the limit; the helper ends in the background
when the resolver gives up. Helpers are daemon threads, so a hung one never delays interpreter exit, and at
most MAX_PENDING_LOOKUPS exist at once, so repeated hung lookups cannot pile up threads: when all are busy
the next lookup waits its time limit for one and then fails the same way.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from hookline.domain.errors import DnsTimeout

SUBMIT_LOOKUP_TIMEOUT_S = 2.0
MAX_PENDING_LOOKUPS = 8
HELPER_THREAD_NAME = "hookline-submit-dns"

_helpers = threading.BoundedSemaphore(MAX_PENDING_LOOKUPS)


class _Answer:
    """Carries a resolver's answer or exception from its helper thread to the waiting caller."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.addresses: Sequence[str] = ()
        self.error: BaseException | None = None


def lookup_within(
    resolver: Callable[[str, int], Sequence[str]], host: str, port: int, timeout_s: float
) -> Sequence[str]:
    """Returns resolver(host, port), waiting for it no longer than timeout_s.

    Args:
        resolver: Looks names up; may block without a limit of its own.
        host: The name to look up.
        port: The TCP port, passed through to the resolver.
        timeout_s: How long to wait, helper thread included.

    Returns:
        What the resolver returned.

    Raises:
        DnsTimeout: No answer within timeout_s (the lookup goes on in the background).
        Exception: Whatever the resolver raised (OSError when the name does not resolve).
    """
    deadline_s = time.monotonic() + timeout_s
    if not _helpers.acquire(timeout=timeout_s):
        raise _timed_out(host, timeout_s)
    answer = _Answer()

    def run() -> None:
        try:
            answer.addresses = resolver(host, port)
        except BaseException as exc:  # handed to the caller, who re-raises it; nothing is lost here
            answer.error = exc
        finally:
            _helpers.release()
            answer.done.set()

    threading.Thread(target=run, name=HELPER_THREAD_NAME, daemon=True).start()
    if not answer.done.wait(max(0.0, deadline_s - time.monotonic())):
        raise _timed_out(host, timeout_s)
    if answer.error is not None:
        raise answer.error
    return answer.addresses


def _timed_out(host: str, timeout_s: float) -> DnsTimeout:
    """Builds the error for a lookup that did not finish in time."""
    message = f"callback host {host!r} did not resolve within {timeout_s:g} s; try again later"
    return DnsTimeout(message, field="url")
