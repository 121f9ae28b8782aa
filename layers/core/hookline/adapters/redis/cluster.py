"""The Redis Cluster client: redis-py's RedisCluster, built on first use rather than at a cold start."""

from __future__ import annotations

import threading
from typing import Any, cast

import redis
from redis._parsers import Encoder
from redis.cluster import RedisCluster
from redis.commands.core import Script
from redis.crc import key_slot


class ShardedCluster(RedisCluster):
    """A RedisCluster that finds the slot of XREADGROUP itself, without asking a node.

    redis-py asks a node (COMMAND GETKEYS, sent to the client's default node) for the keys of every command
    whose key positions vary, XREADGROUP among them: a second round trip for every read, all of them
    landing on one node of the cluster (measured: one per read, which made that node the busiest of four
    and capped the scale-out). XREADGROUP's streams are the first half of what follows STREAMS, so the
    slot is computed here; anything else, and a read over several slots, goes to redis-py as before.
    """

    def determine_slot(self, *args: Any) -> Any:
        """Returns the slot of XREADGROUP's streams, or redis-py's answer for any other command."""
        if _upper(args[0]) == "XREADGROUP":
            tokens = [_upper(arg) for arg in args]
            # GROUP <group> <consumer> come first: a consumer named STREAMS is not the keyword.
            if "STREAMS" in tokens[4:]:
                start = tokens.index("STREAMS", 4) + 1
                streams = args[start : start + (len(args) - start) // 2]
                slots = {key_slot(_encoded(stream)) for stream in streams}
                if len(slots) == 1:
                    return slots.pop()
        return super().determine_slot(*args)


def _upper(token: object) -> str:
    """Returns a command token as upper-case text ("" for anything but text or bytes)."""
    if isinstance(token, bytes):
        return token.decode(errors="replace").upper()
    return token.upper() if isinstance(token, str) else ""


def _encoded(key: object) -> bytes:
    return key if isinstance(key, bytes) else str(key).encode()


class LazyCluster:
    """Stands in for a RedisCluster that connects (reads the cluster's slot map) at its first command.

    RedisCluster maps the cluster in its constructor, so building one while the cluster is unreachable
    raises, and a Lambda cold-started during an outage would fail outright. Here that failure happens at a
    command instead, where the adapters turn it into IndexUnavailable like any other blip (errors.py), and
    the next command tries again. Scripts are registered without connecting (they need only the encoder).
    Every other attribute is the RedisCluster's own: the adapters send it the same single-key commands,
    scripts and non-transactional pipelines as a one-node client, and it routes each by its key's slot.
    """

    def __init__(self, url: str, **options: Any) -> None:
        self._url = url
        self._options = options
        self._cluster: RedisCluster | None = None
        self._lock = threading.Lock()
        self._encoder = Encoder(  # type: ignore[no-untyped-call]
            options.get("encoding", "utf-8"),
            options.get("encoding_errors", "strict"),
            options.get("decode_responses", False),
        )

    def cluster(self) -> RedisCluster:
        """Returns the connected RedisCluster, connecting first (raises while the cluster is unreachable)."""
        built = self._cluster
        if built is not None:  # every command passes here: no lock once connected
            return built
        with self._lock:
            if self._cluster is None:
                self._cluster = ShardedCluster.from_url(self._url, **self._options)
            return self._cluster

    def get_encoder(self) -> Encoder:
        """Returns the encoder commands and scripts are encoded with (what redis-py's Script asks for)."""
        return self._encoder

    def register_script(self, script: str) -> Script:
        """Returns a script object run through this client (connecting at its first run)."""
        return Script(cast(Any, self), script)

    def close(self) -> None:
        """Closes the cluster's connections, if it was ever connected."""
        with self._lock:
            if self._cluster is not None:
                close_cluster(self._cluster)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cluster(), name)


def close_cluster(client: RedisCluster) -> None:
    """Closes a RedisCluster with its nodes' sockets (its close() alone leaves their pools connected)."""
    client.disconnect_connection_pools()  # type: ignore[no-untyped-call]
    client.close()


def is_cluster(client: object) -> bool:
    """Tells whether a client speaks to a Redis Cluster (a LazyCluster or a RedisCluster)."""
    return isinstance(client, (LazyCluster, RedisCluster))


def cluster_client(url: str, **options: Any) -> redis.Redis:
    """Returns a LazyCluster typed as the one-node client the adapters are written against.

    The adapters use only what both clients offer in the same shape (single-key commands, EVALSHA, pipelines
    without transactions or with one key), so one code path serves both; the cast says so to mypy.
    """
    return cast(redis.Redis, LazyCluster(url, **options))
