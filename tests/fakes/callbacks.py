"""A callback client (hookline.ports.CallbackClient) that answers from a script, and the results the real
client (adapters/http/client.py) reports, built by name: a response, a timeout, a refused connection."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from hookline.domain.callbacks import CallbackRequest, CallbackResult
from tests.fakes.faults import Faults, port_call

# One step of a script: a fixed result, or a function of the request run at delivery time (to make
# something happen while the callback is "in flight", like another executor taking the job over).
Step = CallbackResult | Callable[[CallbackRequest], CallbackResult]


def response(
    status: int, *, retry_after_s: float | None = None, body: str = "", latency_ms: int = 5
) -> CallbackResult:
    """Returns the result of a response with this status (and parsed Retry-After, in seconds)."""
    return CallbackResult(status, latency_ms, response_preview=body, retry_after_s=retry_after_s)


def ok() -> CallbackResult:
    """Returns a 200 response."""
    return response(200, body="ok")


def timeout(timeout_s: float = 30.0) -> CallbackResult:
    """Returns the result of an attempt that got no response in time (retryable)."""
    return CallbackResult(
        None,
        int(timeout_s * 1000),
        error_class="timeout",
        error_message=f"no response within {timeout_s:g} s",
        retryable_error=True,
    )


def connect_error() -> CallbackResult:
    """Returns the result of a refused connection (retryable)."""
    return CallbackResult(
        None, 1, error_class="connect_error", error_message="connection refused", retryable_error=True
    )


def unsafe_url() -> CallbackResult:
    """Returns the result of a URL that resolved to a forbidden address (not retryable)."""
    return CallbackResult(
        None, 0, error_class="unsafe_url", error_message="resolves to 10.0.0.1", retryable_error=False
    )


@dataclass(frozen=True)
class Delivered:
    """One request the client was asked to deliver, and what it answered."""

    request: CallbackRequest
    result: CallbackResult


class ScriptedCallbacks:
    """Answers each delivery with the next step of its script (the last step repeats once it runs out)."""

    def __init__(self, steps: Iterable[Step] = (), *, default: Step | None = None) -> None:
        self._lock = threading.Lock()
        self._steps = list(steps)
        self._default = default if default is not None else ok()
        self.delivered: list[Delivered] = []
        self._faults = Faults(lambda: RuntimeError("callback client failed"))

    @property
    def faults(self) -> Faults:
        """Returns the fault plan of this fake's calls (the real client never raises: use sparingly)."""
        return self._faults

    def then(self, *steps: Step) -> ScriptedCallbacks:
        """Appends steps to the script; returns self."""
        with self._lock:
            self._steps += steps
        return self

    @port_call
    def deliver(self, request: CallbackRequest) -> CallbackResult:
        """Answers with the next step (or the default once the script ran out) and records the request."""
        with self._lock:
            step = self._steps.pop(0) if self._steps else self._default
        result = step if isinstance(step, CallbackResult) else step(request)
        with self._lock:
            self.delivered.append(Delivered(request, result))
        return result

    @property
    def requests(self) -> list[CallbackRequest]:
        """Returns every request delivered, in order."""
        with self._lock:
            return [d.request for d in self.delivered]
