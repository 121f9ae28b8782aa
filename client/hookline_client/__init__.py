"""A Python client for the Hookline API: `Client` (blocking) and `AsyncClient` (asyncio), over httpx.

    from hookline_client import Client

    with Client("http://127.0.0.1:3000", "hl_...") as hookline:   # or HOOKLINE_API / HOOKLINE_KEY
        job = hookline.submit_job({"url": "https://example.com/hook", "delay_s": 60})
        for attempt in hookline.list_executions(job.id): ...

Answers are the API's own pydantic models (hookline_client.schemas: JobView, ScheduleView, StatsView...);
errors raise a HooklineApiError subclass carrying the envelope and the X-Request-Id. 429 and 503 are retried
after Retry-After, boundedly (RetryPolicy). A receiver checks a callback with `verify` (standard library).

This distribution (hookline-client) needs httpx and pydantic; its `hookline` command also needs rich
(`pip install 'hookline-client[cli]'`). It imports nothing of the server.
"""

from hookline_client.asynchronous import AsyncClient
from hookline_client.calls import RetryPolicy
from hookline_client.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    HooklineApiError,
    NotFound,
    RateLimited,
    ServerError,
    TransportError,
    Unauthorized,
    Unavailable,
    ValidationFailed,
)
from hookline_client.receiving import WebhookVerificationError, verify
from hookline_client.sync import Client

__all__ = [
    "AsyncClient",
    "BadRequest",
    "Client",
    "Conflict",
    "Forbidden",
    "HooklineApiError",
    "NotFound",
    "RateLimited",
    "RetryPolicy",
    "ServerError",
    "TransportError",
    "Unauthorized",
    "Unavailable",
    "ValidationFailed",
    "WebhookVerificationError",
    "verify",
]
