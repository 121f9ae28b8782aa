"""The rebuild marks (hookline.ports.RebuildMarkStore) over RedisMemory, as adapters/redis/rebuild.py does.

One HASH per shard: `epoch` (written with the consumer group, see stream.py ensure_group), `rebuilt` and
`cursor` (`mode|position`); a flush loses it like every other key.
"""

from __future__ import annotations

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.rebuild import new_epoch
from hookline.domain.reconcile import RebuildMarks
from tests.fakes.faults import port_call
from tests.fakes.redis_role import FakeRedisRole


class FakeRebuildMarks(FakeRedisRole):
    """Reads and writes each shard's reconciliation marks."""

    @port_call
    def marks(self, shard: int) -> RebuildMarks:
        """HMGET epoch rebuilt cursor; the cursor split at its first '|' ("" after it reads as None)."""
        key = redis_keys.rebuild_key(shard)
        m = self.memory
        with m.lock:
            epoch, rebuilt, cursor = (m.hget(key, name) for name in ("epoch", "rebuilt", "cursor"))
        mode, position = None, None
        if cursor is not None:
            mode, _, rest = cursor.partition("|")
            position = rest or None
        return RebuildMarks(epoch, rebuilt, mode, position)

    @port_call
    def start_epoch(self, shard: int) -> str:
        """HSETNX a new epoch, then HGET it: the shard's epoch, whoever wrote it."""
        key = redis_keys.rebuild_key(shard)
        m = self.memory
        with m.lock:
            m.hsetnx(key, "epoch", new_epoch())
            epoch = m.hget(key, "epoch")
        assert epoch is not None
        return epoch

    @port_call
    def save_cursor(self, shard: int, mode: str, cursor: str | None) -> None:
        """HSET cursor `mode|cursor`, or HDEL it when the scan finished (None)."""
        key = redis_keys.rebuild_key(shard)
        with self.memory.lock:
            if cursor is None:
                self.memory.hdel(key, "cursor")
            else:
                self.memory.hset(key, "cursor", f"{mode}|{cursor}")

    @port_call
    def finish_rebuild(self, shard: int, epoch: str) -> None:
        """HSET rebuilt epoch (no compare-and-set, as in the adapter)."""
        with self.memory.lock:
            self.memory.hset(redis_keys.rebuild_key(shard), "rebuilt", epoch)
