"""Reads and seeds shard 0's cron keys (ZSET, claims HASH, wake LIST) in the shape the script tables use."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import redis

from hookline.adapters.redis import keys as redis_keys

SHARD = 0
CRON = redis_keys.cron_key(SHARD)
CLAIMS = redis_keys.cron_claims_key(SHARD)
WAKE = redis_keys.wake_key(SHARD)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def cron_state(
    *, cron: Mapping[str, int] | None = None, claims: Mapping[str, int] | None = None, wake: int = 0
) -> dict[str, Any]:
    """Builds the expected state of every cron key; a key not named is expected empty."""
    return {
        "cron": dict(cron or {}),
        "claims": {member: str(fire_ms) for member, fire_ms in (claims or {}).items()},
        "wake": wake,
    }


def read_cron_state(client: redis.Redis) -> dict[str, Any]:
    """Reads every cron key back in the shape cron_state() builds."""
    return {
        "cron": {_text(m): int(score) for m, score in client.zrange(CRON, 0, -1, withscores=True)},
        "claims": {_text(k): _text(v) for k, v in client.hgetall(CLAIMS).items()},
        "wake": int(client.llen(WAKE)),
    }


def seed_cron(client: redis.Redis, state: Mapping[str, Any]) -> None:
    """Writes the keys of a cron_state()."""
    if state["cron"]:
        client.zadd(CRON, dict(state["cron"]))
    if state["claims"]:
        client.hset(CLAIMS, mapping=dict(state["claims"]))
    for _ in range(state["wake"]):
        client.rpush(WAKE, "1")
