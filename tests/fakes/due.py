"""The due index (hookline.ports.DueIndex) over RedisMemory: lua/index.lua and lua/promote.lua in Python."""

from __future__ import annotations

from collections.abc import Sequence

from hookline.adapters.redis import keys as redis_keys
from hookline.domain import constants
from hookline.domain.delivery import PromoteResult
from hookline.domain.models import Member
from tests.fakes.faults import port_call
from tests.fakes.redis_role import FakeRedisRole


class FakeDueIndex(FakeRedisRole):
    """Due ZSETs, wake lists and in-flight membership, as adapters/redis/due.py keeps them."""

    @port_call
    def index(self, member: Member, shard: int, due_ms: int, now_ms: int, new_member: bool = False) -> bool:
        """index.lua: due now onto the ready stream and in-flight ZSET, else into the due ZSET (+ wake)."""
        due, ready = redis_keys.due_key(shard), redis_keys.ready_stream(shard)
        encoded = member.encode()
        m = self.memory
        with m.lock:
            if due_ms <= now_ms:
                if not new_member:
                    m.zrem(due, encoded)
                m.xadd(ready, {"m": encoded, "d": "0"})
                m.zadd(redis_keys.inflight_key(shard), now_ms, encoded)
                return True
            earliest = m.zfirst(due)
            m.zadd(due, due_ms, encoded)
            if (earliest is None or due_ms < earliest[1]) and m.llen(redis_keys.wake_key(shard)) == 0:
                m.rpush(redis_keys.wake_key(shard), "1")
            return False

    @port_call
    def index_many(
        self, entries: Sequence[tuple[Member, int, int]], now_ms: int, new_member: bool = False
    ) -> None:
        """One index() per entry, in order: a fault planned on "index" stops it there, the entries before
        applied (as a pipeline broken midway); one planned on "index_many" fails the whole call."""
        for member, shard, due_ms in entries:
            self.index(member, shard, due_ms, now_ms, new_member)

    @port_call
    def unindex(self, member: Member, shard: int) -> bool:
        """ZREM from the due ZSET; True when the member was there."""
        with self.memory.lock:
            return self.memory.zrem(redis_keys.due_key(shard), member.encode()) == 1

    @port_call
    def promote(
        self, shard: int, now_ms: int, batch: int = constants.PROMOTE_BATCH, alive_ms: int = 0
    ) -> PromoteResult:
        """promote.lua: moves up to batch due members onto the ready stream; returns moved and next due
        (the promoter heartbeat, alive_ms, is not kept: no fake index wakes a promoter)."""
        due = redis_keys.due_key(shard)
        m = self.memory
        with m.lock:
            members = [member for member, _ in m.zrangebyscore(due, now_ms, batch)]
            for member in members:
                m.xadd(redis_keys.ready_stream(shard), {"m": member, "d": "0"})
                m.zadd(redis_keys.inflight_key(shard), now_ms, member)
            if members:
                m.zrem(due, *members)
            lowest = m.zfirst(due)
            return PromoteResult(len(members), None if lowest is None else int(lowest[1]))

    @port_call
    def wait_for_wake(self, shards: Sequence[int], timeout_ms: int) -> bool:
        """BLPOP over the wake lists: takes the first token there, else spends timeout_ms and looks again."""
        if self._take_first(shards):
            return True
        self.memory.wait(max(timeout_ms, 1))
        return self._take_first(shards)

    def _take_first(self, shards: Sequence[int]) -> bool:
        with self.memory.lock:
            return any(self.memory.lpop(redis_keys.wake_key(shard)) is not None for shard in shards)

    @port_call
    def poll_wake(self, shards: Sequence[int]) -> bool:
        """LPOP on every shard's wake list (one pipeline): every shard's token is taken."""
        with self.memory.lock:
            taken = [self.memory.lpop(redis_keys.wake_key(shard)) for shard in shards]
        return any(token is not None for token in taken)

    @port_call
    def indexed_members(
        self, shard: int, members: Sequence[Member], stale_before_ms: int | None = None
    ) -> list[bool]:
        """Tells, for each member, whether the due ZSET or its queue's parked ZSET holds it, or the in-flight
        ZSET since stale_before_ms at least (an older in-flight member stands for a lost entry)."""
        floor = float("-inf") if stale_before_ms is None else stale_before_ms
        m = self.memory
        held = []
        with m.lock:
            for member in members:
                inflight = m.zscore(redis_keys.inflight_key(shard), member.encode())
                queue = member.flow.queue
                parked = queue is not None and (
                    m.zscore(redis_keys.parked_key(shard, member.tenant, queue), member.encode()) is not None
                )
                held.append(
                    m.zscore(redis_keys.due_key(shard), member.encode()) is not None
                    or parked
                    or (inflight is not None and inflight >= floor)
                )
        return held

    @port_call
    def depth(self, shard: int) -> tuple[int, int]:
        """Returns (due members, in-flight members)."""
        with self.memory.lock:
            return self.memory.zcard(redis_keys.due_key(shard)), self.memory.zcard(
                redis_keys.inflight_key(shard)
            )
