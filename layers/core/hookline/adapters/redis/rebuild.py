"""The reconciliation marks of each shard: its Redis epoch, the last complete rebuild, the scan cursor."""

from __future__ import annotations

import uuid
from typing import cast

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.base import RedisBase, text
from hookline.domain.reconcile import RebuildMarks


def new_epoch() -> str:
    """Returns a fresh epoch id."""
    return uuid.uuid4().hex


class RedisRebuildMarks(RedisBase):
    """Reads and writes the rebuild HASH of each shard (hookline.ports.RebuildMarkStore)."""

    def marks(self, shard: int) -> RebuildMarks:
        """Returns the shard's marks (all None after Redis lost its data)."""
        epoch, rebuilt, cursor = cast(
            list[bytes | None],
            self._redis.hmget(redis_keys.rebuild_key(shard), ["epoch", "rebuilt", "cursor"]),
        )
        mode, position = (None, None)
        if cursor is not None:
            mode, _, rest = text(cursor).partition("|")
            position = rest or None
        return RebuildMarks(
            None if epoch is None else text(epoch), None if rebuilt is None else text(rebuilt), mode, position
        )

    def start_epoch(self, shard: int) -> str:
        """Returns the shard's epoch, writing a new one first if it has none (HSETNX: one wins)."""
        key = redis_keys.rebuild_key(shard)
        self._redis.hsetnx(key, "epoch", new_epoch())
        return text(cast(bytes, self._redis.hget(key, "epoch")))

    def save_cursor(self, shard: int, mode: str, cursor: str | None) -> None:
        """Remembers where the shard's `mode` scan stopped (None: it finished; the next one starts over)."""
        key = redis_keys.rebuild_key(shard)
        if cursor is None:
            self._redis.hdel(key, "cursor")
        else:
            self._redis.hset(key, "cursor", f"{mode}|{cursor}")

    def finish_rebuild(self, shard: int, epoch: str) -> None:
        """Records that every live job was seen while Redis was in `epoch`.

        Written even if the epoch changed meanwhile (another flush): `rebuilt` then differs from the new
        epoch, so the next run rebuilds again. No compare-and-set is needed.
        """
        self._redis.hset(redis_keys.rebuild_key(shard), "rebuilt", epoch)
