"""The exceptions the client raises: one per HTTP error class, each carrying the error envelope."""

from __future__ import annotations

from typing import Any


class HooklineApiError(Exception):
    """The API answered with an error; `code`, `message` and `details` come from its envelope.

    Attributes:
        status: The HTTP status code.
        code: The envelope's machine-readable code (`not_found`, `validation_error`, ...).
        message: The envelope's message.
        details: The envelope's details (for 422, one entry per field).
        request_id: The answer's `X-Request-Id`: quote it when reporting a problem.
        retry_after_s: The answer's `Retry-After`, when it had one.
        body: The decoded body (the envelope, or whatever a proxy answered).
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: list[dict[str, Any]] | None = None,
        request_id: str | None = None,
        retry_after_s: float | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}" + (f" (request {request_id})" if request_id else ""))
        self.status = status
        self.code = code
        self.message = message
        self.details = details or []
        self.request_id = request_id
        self.retry_after_s = retry_after_s
        self.body = body


class BadRequest(HooklineApiError):
    """400, 413 or 415: the request could not be taken as sent."""


class Unauthorized(HooklineApiError):
    """401: the key is missing, malformed, unknown or revoked."""


class Forbidden(HooklineApiError):
    """403: the key lacks the scope, or (API Gateway) no such route."""


class NotFound(HooklineApiError):
    """404: no such item for this tenant."""


class Conflict(HooklineApiError):
    """409: the item's state forbids the change, or an idempotency key was reused with another request."""


class ValidationFailed(HooklineApiError):
    """422: the request is not valid; `details` name each field."""


class RateLimited(HooklineApiError):
    """429: over the key's request rate; `retry_after_s` says when to try again."""


class Unavailable(HooklineApiError):
    """503: a dependency of the API is down; retry later."""


class ServerError(HooklineApiError):
    """Any other 5xx."""


class TransportError(Exception):
    """The API could not be reached (connection refused, timeout, TLS)."""


_BY_STATUS: dict[int, type[HooklineApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: BadRequest,
    415: BadRequest,
    422: ValidationFailed,
    429: RateLimited,
    503: Unavailable,
}


def error_for(status: int) -> type[HooklineApiError]:
    """Returns the exception class for an HTTP error status."""
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return ServerError if status >= 500 else HooklineApiError
