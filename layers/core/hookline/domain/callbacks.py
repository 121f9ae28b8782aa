"""Outbound callbacks: the request/result types, signing, address safety and the HTTP client."""

from __future__ import annotations

from dataclasses import dataclass, field

RETRYABLE_STATUS = frozenset({408, 425, 429})


@dataclass(frozen=True)
class CallbackRequest:
    """One HTTP request to make; headers already include the signature headers.

    Attributes:
        url: The callback URL as the tenant gave it.
        method: The HTTP method.
        headers: The job's headers merged with the signature headers.
        body: The exact bytes to send.
        timeout_s: The job's budget for the whole attempt (lookup, connect, send and read).
        deadline_s: An absolute bound, as a time.monotonic() value, that the attempt must not outlive
            whatever timeout_s allows: the caller's own limit, such as its lease or the end of its
            invocation less a margin for recording the outcome. None when only timeout_s applies.
        tenant: Whose job it is: a kept-alive connection carries only one tenant's callbacks, so one
            tenant's receiver can never answer another tenant's request.
    """

    url: str
    method: str
    headers: dict[str, str]
    body: bytes
    timeout_s: float
    deadline_s: float | None = None
    tenant: str = ""


@dataclass(frozen=True)
class CallbackResult:
    """What happened when a callback was attempted.

    Exactly one of `status_code` (a response arrived) or `error_class` (no usable response) is set,
    except that a redirect, which is never followed, has both.
    """

    status_code: int | None
    latency_ms: int
    response_preview: str | None = None
    retry_after_s: float | None = None
    error_class: str | None = None
    error_message: str | None = None
    retryable_error: bool = field(default=False)

    @property
    def succeeded(self) -> bool:
        """Tells whether the receiver accepted the callback (2xx)."""
        return self.error_class is None and self.status_code is not None and 200 <= self.status_code < 300

    @property
    def retryable(self) -> bool:
        """Tells whether another attempt may succeed (408/425/429/5xx, timeouts, connection errors)."""
        if self.succeeded:
            return False
        if self.error_class is not None:
            return self.retryable_error
        assert self.status_code is not None
        return self.status_code in RETRYABLE_STATUS or self.status_code >= 500
