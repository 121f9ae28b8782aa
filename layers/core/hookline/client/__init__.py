"""A Python client for the Hookline API: `Client` (blocking) and `AsyncClient` (asyncio), over httpx.

    from hookline.client import Client

    with Client("http://127.0.0.1:3000", "hl_...") as hookline:   # or HOOKLINE_API / HOOKLINE_KEY
        job = hookline.submit_job({"url": "https://example.com/hook", "delay_s": 60})
        for attempt in hookline.list_executions(job.id): ...

Answers are the API's own pydantic models (JobView, ScheduleView, StatsView...); errors raise a
HooklineApiError subclass carrying the envelope and the X-Request-Id. 429 and 503 are retried after
Retry-After, boundedly (RetryPolicy).
"""

from hookline.client.asynchronous import AsyncClient
from hookline.client.calls import RetryPolicy
from hookline.client.errors import (
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
from hookline.client.sync import Client

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
]
