"""Turns the Redis client's transient failures into the domain's IndexUnavailable, for every role."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import redis

from hookline.domain.errors import IndexUnavailable

F = TypeVar("F", bound=Callable[..., Any])

# Error replies that mean "not now" rather than "wrong": a blocked read whose key was deleted (FLUSHALL),
# a server loading its data, a replica promoted or demoted mid fail-over, a cluster re-sharding, a script
# running too long. Script errors quote the reply after a dash, so both forms are matched.
TRANSIENT_REPLIES = ("UNBLOCKED", "LOADING", "READONLY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "BUSY")


def is_transient(error: redis.RedisError) -> bool:
    """Tells whether a Redis error is a blip worth waiting out (as opposed to a bug or bad data)."""
    # redis-py strips the code of the replies it maps to classes (LOADING is a ConnectionError).
    if isinstance(error, (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError)):
        return True
    if not isinstance(error, redis.ResponseError):
        return False
    message = str(error)
    first = message.split(" ", 1)[0]
    return first in TRANSIENT_REPLIES or any(f"-{code} " in message for code in TRANSIENT_REPLIES)


def translating(method: F) -> F:
    """Wraps an adapter method so that transient Redis errors leave it as IndexUnavailable."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except redis.RedisError as error:
            if is_transient(error):
                # A fixed message: API answers carry it, and the cause (chained) may name hosts and ports.
                raise IndexUnavailable("redis is unavailable; retry later") from error
            raise

    return wrapper  # type: ignore[return-value]
