"""What every Redis adapter shares: the client, the registered Lua scripts and the reply decoding."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any, cast

import redis
from redis.commands.core import Script

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.cluster import is_cluster
from hookline.adapters.redis.errors import translating
from hookline.adapters.redis.scripts import SCRIPT_NAMES, script_source
from hookline.domain.clock import SystemClock
from hookline.domain.delivery import StreamEntry
from hookline.domain.idle import WakePolicy
from hookline.domain.models import Member
from hookline.ports import Clock, MetricsSink, NullMetrics

# A script reply's bit that says the call took the wake claim (index.lua, cron_set.lua).
WOKE = 2
# How often a blocking call given several shards looks at them again: no one command may name keys of
# several shards (their slots differ), so such a call polls them in turn (the engine blocks per shard).
SHARDS_POLL_MS = 10


class RedisBase:
    """Holds one client, the scripts registered on it and this process's consumer name.

    Every public method a role (subclass) defines raises IndexUnavailable, never the client's own error,
    when Redis does not answer (see errors.py): the use cases wait such blips out without importing redis.

    The client is one node's or a cluster's (cluster.py). Every command a role sends names keys of one
    hash-tag slot only (a shard's keys share `{hl:s<n>}`, a limiter's its own tag), so each runs on the
    one node serving that slot; pipelines carry only such single-slot commands, which the cluster client
    splits by node.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, value in list(vars(cls).items()):
            if not name.startswith("_") and inspect.isfunction(value):
                setattr(cls, name, translating(value, _count_out_of_memory))

    def __init__(
        self,
        client: redis.Redis,
        consumer: str = "executor",
        clock: Clock | None = None,
        metrics: MetricsSink | None = None,
    ) -> None:
        self._redis = client
        self._cluster = is_cluster(client)
        self._consumer = consumer
        self._clock: Clock = clock or SystemClock()
        self._metrics: MetricsSink = metrics or NullMetrics()
        self._scripts: dict[str, Script] = {
            name: client.register_script(script_source(name)) for name in SCRIPT_NAMES
        }
        self._own = threading.local()
        # Idle mode (wake_promoters_with): what index.lua and cron_set.lua need to take the wake claim, and
        # what starts a promoter when a call took it.
        self._wake_policy: WakePolicy | None = None
        self._on_wake: Callable[[int], None] | None = None

    def wake_promoters_with(self, policy: WakePolicy, on_wake: Callable[[int], None]) -> None:
        """Makes index and cron-set calls wake a promoter when one is needed; on_wake must not raise."""
        self._wake_policy = policy
        self._on_wake = on_wake

    def _woke(self, shard: int, result: int) -> None:
        """Starts a promoter when a script's reply has bit 1 set (this call took the shard's wake claim) and
        the deployment-wide claim is free: one promoter per burst, whichever shards it touches."""
        if not result & WOKE or self._on_wake is None or self._wake_policy is None:
            return
        try:
            taken = self._redis.set(
                redis_keys.global_wake_claim_key(), b"1", nx=True, px=self._wake_policy.claim_ms
            )
        except redis.RedisError:
            taken = True  # Redis answered the script a moment ago: better a second promoter than none
        if taken:
            self._on_wake(shard)

    def _wake_call(self, shard: int) -> tuple[list[str], list[str | int]]:
        """Returns the wake claim's extra keys and arguments (horizon, claim); none without idle mode."""
        if self._wake_policy is None:
            return [], []
        keys = [redis_keys.promoter_alive_key(shard), redis_keys.wake_claim_key(shard)]
        return keys, [self._wake_policy.horizon_ms, self._wake_policy.claim_ms]

    def _own_client(self) -> redis.Redis:
        """Returns the client for this thread's frequent commands: on one node, a connection of its own
        from the shared pool, held while the thread lives; on a cluster, the shared client.

        A command on the shared client checks a connection out of the pool and back, and the checkout
        probes it for unread bytes (a non-blocking recv between two settimeout calls: three syscalls that
        each let go of the interpreter lock, on top of the command's own send and recv). A thread that
        sends a command every few jobs (a shard reader, the acker) keeps one connection instead. It goes
        back to the pool when the thread ends and its client is dropped (threading.local).
        """
        if self._cluster:
            return self._redis
        own = cast("redis.Redis | None", getattr(self._own, "client", None))
        if own is None:
            own = self._own.client = self._redis.client()  # type: ignore[no-untyped-call]
        return own

    @property
    def client(self) -> redis.Redis:
        """Returns the underlying client (for health checks and tests)."""
        return self._redis


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class MalformedEntry(ValueError):
    """A stream entry that cannot be read as a delivery (no member, an undecodable one, a bad count)."""

    def __init__(self, raw_member: str, reason: str) -> None:
        super().__init__(reason)
        self.raw_member = raw_member


def member_of(raw: str) -> Member:
    """Decodes a member string; raises MalformedEntry when it is not one."""
    try:
        return Member.decode(raw)
    except (ValueError, IndexError, TypeError) as error:  # JSONDecodeError is a ValueError
        raise MalformedEntry(raw, f"undecodable member: {error}") from error


def entry(shard: int, entry_id: str, fields: dict[Any, Any]) -> StreamEntry:
    """Returns the delivery a ready-stream entry holds; raises MalformedEntry when it holds none."""
    decoded = {text(k): text(v) for k, v in fields.items()}
    if "m" not in decoded:
        raise MalformedEntry("", "no member field")
    member = member_of(decoded["m"])
    try:
        deliveries = int(decoded.get("d", "0"))
    except ValueError as error:
        raise MalformedEntry(decoded["m"], "delivery count is not a number") from error
    return StreamEntry(shard, entry_id, member, deliveries)


def _count_out_of_memory(role: RedisBase) -> None:
    """Counts a write Redis refused for want of memory (at maxmemory, nothing it may evict): the loops wait
    it out as a blip; this metric, its alarm (template.yaml) and /healthz say why."""
    role._metrics.count("RedisOutOfMemory")
