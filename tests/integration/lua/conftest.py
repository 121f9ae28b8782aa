"""Shared helpers for the Lua script tables: seed a shard's keys, read every key back, deliver entries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
import redis

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.index import RedisIndex
from hookline.domain.delivery import StreamEntry

SHARD = 0
DUE = redis_keys.due_key(SHARD)
READY = redis_keys.ready_stream(SHARD)
INFLIGHT = redis_keys.inflight_key(SHARD)
WAKE = redis_keys.wake_key(SHARD)
DEAD = redis_keys.dead_stream(SHARD)
GROUP = redis_keys.CONSUMER_GROUP
EXECUTOR = "executor"
REAPER = "reaper"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def zset(client: redis.Redis, key: str) -> dict[str, float]:
    """Returns a ZSET's full contents as member -> score."""
    return {_text(member): score for member, score in client.zrange(key, 0, -1, withscores=True)}


def stream_entries(client: redis.Redis, key: str) -> list[tuple[str, dict[str, str]]]:
    """Returns a stream's entries, oldest first, as (id, fields)."""
    return [
        (_text(entry_id), {_text(k): _text(v) for k, v in fields.items()})
        for entry_id, fields in client.xrange(key)
    ]


def stream(client: redis.Redis, key: str) -> list[dict[str, str]]:
    """Returns the fields of a stream's entries, oldest first."""
    return [fields for _, fields in stream_entries(client, key)]


def pending(client: redis.Redis, key: str = READY) -> list[tuple[str, str, int]]:
    """Returns the group's pending entry list as (entry id, consumer, times delivered)."""
    if not client.exists(key):
        return []
    rows = client.xpending_range(key, GROUP, min="-", max="+", count=10_000)
    return [(_text(row["message_id"]), _text(row["consumer"]), int(row["times_delivered"])) for row in rows]


def pending_members(client: redis.Redis) -> list[tuple[str, str, int]]:
    """Returns the pending entry list with each id replaced by its entry's member (for readable tables)."""
    member_of = {entry_id: fields.get("m", "?") for entry_id, fields in stream_entries(client, READY)}
    return [
        (member_of.get(entry_id, f"<deleted {entry_id}>"), consumer, deliveries)
        for entry_id, consumer, deliveries in pending(client)
    ]


def state(
    *,
    due: Mapping[str, float] | None = None,
    ready: Sequence[Mapping[str, str]] = (),
    pending: Sequence[tuple[str, str, int]] = (),
    inflight: Mapping[str, float] | None = None,
    wake: int = 0,
    dead: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """Builds the expected state of every shard key; a key not named is expected empty."""
    return {
        "due": dict(due or {}),
        "ready": [dict(fields) for fields in ready],
        "pending": list(pending),
        "inflight": dict(inflight or {}),
        "wake": wake,
        "dead": [dict(fields) for fields in dead],
    }


def shard_state(client: redis.Redis) -> dict[str, Any]:
    """Reads every key of the shard back in the shape state() builds."""
    return {
        "due": zset(client, DUE),
        "ready": stream(client, READY),
        "pending": pending_members(client),
        "inflight": zset(client, INFLIGHT),
        "wake": int(client.llen(WAKE)),
        "dead": stream(client, DEAD),
    }


def entry(member: str, deliveries: int = 0) -> dict[str, str]:
    """Returns the fields of a ready-stream entry."""
    return {"m": member, "d": str(deliveries)}


def seed(
    client: redis.Redis,
    *,
    due: Mapping[str, float] | None = None,
    ready: Sequence[Mapping[str, str]] = (),
    inflight: Mapping[str, float] | None = None,
    wake: int = 0,
) -> list[str]:
    """Writes the initial keys of a shard; returns the ready entries' ids."""
    if due:
        client.zadd(DUE, dict(due))
    if inflight:
        client.zadd(INFLIGHT, dict(inflight))
    for _ in range(wake):
        client.rpush(WAKE, "1")
    return [_text(client.xadd(READY, dict(fields))) for fields in ready]


def deliver(index: RedisIndex, count: int) -> list[StreamEntry]:
    """Really reads `count` new entries with XREADGROUP, so they become pending under the index's consumer."""
    if count == 0:
        return []
    entries = index.read_ready([SHARD], count=count, block_ms=1)
    assert len(entries) == count
    return entries


@pytest.fixture
def redis_index(redis_client: redis.Redis) -> RedisIndex:
    """Yields a RedisIndex (consumer EXECUTOR) on an empty Redis whose shard-0 group exists."""
    index = RedisIndex(redis_client, consumer=EXECUTOR)
    index.ensure_group(SHARD)
    return index
