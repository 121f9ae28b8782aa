"""Turns the Redis client's transient failures into the domain's IndexUnavailable, for every role."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import redis
from redis.exceptions import (
    ClusterDownError,
    ClusterError,
    OutOfMemoryError,
    RedisClusterException,
    SlotNotCoveredError,
    TryAgainError,
)

from hookline.domain.errors import IndexUnavailable

F = TypeVar("F", bound=Callable[..., Any])

# Error replies that mean "not now" rather than "wrong": a blocked read whose key was deleted (FLUSHALL),
# a server loading its data, a replica promoted or demoted mid fail-over, a cluster re-sharding, a script
# running too long, a server at its maxmemory refusing writes (OOM: it lasts until keys expire, are
# deleted or evicted, or the limit is raised; reads and deletes go on meanwhile). Script errors quote the
# reply after a dash, so both forms are matched.
TRANSIENT_REPLIES = (
    "UNBLOCKED",
    "LOADING",
    "READONLY",
    "MASTERDOWN",
    "TRYAGAIN",
    "CLUSTERDOWN",
    "BUSY",
    "OOM",
)

# What redis-py's cluster client raises (outside RedisError) when it cannot reach or map the cluster: no
# startup node answers while it refreshes its slot map (a whole-cluster outage, a cold start during one),
# or the nodes do not yet agree on who serves every slot (mid fail-over). Its other RedisClusterExceptions
# (keys of one command in several slots, a command it cannot route) are bugs and are left as they are.
TRANSIENT_CLUSTER_MESSAGES = (
    "Redis Cluster cannot be connected",
    "All slots are not covered",
    "startup_nodes could not agree",
)


def is_transient(error: redis.RedisError) -> bool:
    """Tells whether a Redis error is a blip worth waiting out (as opposed to a bug or bad data)."""
    # redis-py strips the code of the replies it maps to classes (LOADING is a ConnectionError; TRYAGAIN,
    # CLUSTERDOWN and MASTERDOWN become cluster error classes with the code gone from the message).
    transient_classes = (
        redis.ConnectionError,
        redis.TimeoutError,
        redis.ReadOnlyError,
        ClusterDownError,
        ClusterError,
        TryAgainError,
        OutOfMemoryError,
    )
    if isinstance(error, transient_classes):
        return True
    return any(_replied(error, code) for code in TRANSIENT_REPLIES)


def is_out_of_memory(error: redis.RedisError) -> bool:
    """Tells whether Redis refused a write for want of memory (at maxmemory, nothing it may evict)."""
    return isinstance(error, OutOfMemoryError) or _replied(error, "OOM")


def _replied(error: redis.RedisError, code: str) -> bool:
    """Tells whether error is a reply with code, as the reply's first word or quoted inside a script's."""
    if not isinstance(error, redis.ResponseError):
        return False
    message = str(error)
    return message.split(" ", 1)[0] == code or f"-{code} " in message


def is_transient_cluster(error: RedisClusterException) -> bool:
    """Tells whether the cluster client's own error means the cluster is unreachable or re-mapping."""
    if isinstance(error, SlotNotCoveredError):
        return True
    message = str(error)
    return any(message.startswith(prefix) for prefix in TRANSIENT_CLUSTER_MESSAGES)


def unavailable(error: Exception) -> IndexUnavailable:
    """Returns the domain error for a transient failure; the cause (chained) may name hosts and ports."""
    # A fixed message: API answers carry it.
    unavailable_error = IndexUnavailable("redis is unavailable; retry later")
    unavailable_error.__cause__ = error
    return unavailable_error


def translating(method: F, out_of_memory: Callable[[Any], None] | None = None) -> F:
    """Wraps an adapter method so that transient Redis errors leave it as IndexUnavailable.

    out_of_memory, when given, is called with the method's first argument (the adapter) each time Redis
    refuses the method's write for want of memory, before the IndexUnavailable is raised.
    """

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except redis.RedisError as error:
            if is_transient(error):
                if out_of_memory is not None and is_out_of_memory(error):
                    out_of_memory(args[0])
                raise unavailable(error) from error
            raise
        except RedisClusterException as error:
            if is_transient_cluster(error):
                raise unavailable(error) from error
            raise

    return wrapper  # type: ignore[return-value]
