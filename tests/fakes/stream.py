"""The ready stream (hookline.ports.ReadyStream) over RedisMemory: ack, defer, dead_letter, redeliver.lua."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from hookline.adapters.redis import keys as redis_keys
from hookline.domain import constants
from hookline.domain.delivery import RedeliverResult, StreamEntry
from hookline.domain.models import Member
from tests.fakes.faults import ScriptError, port_call
from tests.fakes.redis_memory import BusyGroup, NoGroup
from tests.fakes.redis_role import FakeRedisRole, decode_entry

GROUP = redis_keys.CONSUMER_GROUP


class FakeReadyStream(FakeRedisRole):
    """Reads and ends deliveries as adapters/redis/stream.py does, for the consumer it was made with."""

    @port_call
    def ensure_group(self, shard: int) -> None:
        """Creates the group (reading from the start, the stream made if missing) unless it exists."""
        with self.memory.lock:
            self._ensure_group(shard)

    def _ensure_group(self, shard: int) -> None:
        with contextlib.suppress(BusyGroup):
            self.memory.xgroup_create(redis_keys.ready_stream(shard), GROUP, mkstream=True)

    @port_call
    def read_ready(self, shards: Sequence[int], count: int, block_ms: int) -> list[StreamEntry]:
        """XREADGROUP '>' for this consumer (count per stream); a missing group is made and nothing read.

        With nothing new and block_ms > 0, spends block_ms (the memory's wait) and reads once more.
        Entries are decoded as the adapter decodes them, so a malformed one raises the same error.
        """
        entries = self._read(shards, count)
        if entries is None:
            return []
        if not entries and block_ms > 0:
            self.memory.wait(block_ms)
            entries = self._read(shards, count) or []
        return entries

    def _read(self, shards: Sequence[int], count: int) -> list[StreamEntry] | None:
        shard_of = {redis_keys.ready_stream(shard): shard for shard in shards}
        with self.memory.lock:
            try:
                reply = self.memory.xreadgroup(GROUP, self.consumer, list(shard_of), count)
            except NoGroup:
                # Redis lost the stream (flush, fail-over): recreate it; the reaper re-indexes the jobs.
                for shard in shards:
                    self._ensure_group(shard)
                return None
        return [
            decode_entry(shard_of[key], entry_id, fields)
            for key, messages in reply
            for entry_id, fields in messages
        ]

    @port_call
    def ack(self, entry: StreamEntry) -> bool:
        """ack.lua: XACK, then XDEL and ZREM from in-flight; False (nothing changed) when already acked."""
        ready = redis_keys.ready_stream(entry.shard)
        m = self.memory
        with m.lock:
            if m.xack(ready, GROUP, entry.entry_id) == 0:
                return False
            m.xdel(ready, entry.entry_id)
            m.zrem(redis_keys.inflight_key(entry.shard), entry.member.encode())
            return True

    @port_call
    def defer(self, entry: StreamEntry, due_ms: int) -> bool:
        """defer.lua: finishes the entry and puts its member back into the due ZSET (waking if earliest)."""
        shard, member = entry.shard, entry.member.encode()
        ready, due, wake = (
            redis_keys.ready_stream(shard),
            redis_keys.due_key(shard),
            redis_keys.wake_key(shard),
        )
        m = self.memory
        with m.lock:
            if m.xack(ready, GROUP, entry.entry_id) == 0:
                return False
            m.xdel(ready, entry.entry_id)
            m.zrem(redis_keys.inflight_key(shard), member)
            earliest = m.zfirst(due)
            m.zadd(due, due_ms, member)
            if (earliest is None or due_ms < earliest[1]) and m.llen(wake) == 0:
                m.rpush(wake, "1")
            return True

    @port_call
    def dead_letter(self, entry: StreamEntry, reason: str, now_ms: int) -> str | None:
        """dead_letter.lua: records {m, reason, at} on the dead stream, finishes the entry; None if done."""
        shard = entry.shard
        ready = redis_keys.ready_stream(shard)
        m = self.memory
        with m.lock:
            if m.xack(ready, GROUP, entry.entry_id) == 0:
                return None
            fields = {"m": entry.member.encode(), "reason": reason, "at": str(now_ms)}
            dead_id = m.xadd(redis_keys.dead_stream(shard), fields, max_len=constants.DEAD_STREAM_MAX_LEN)
            m.xdel(ready, entry.entry_id)
            m.zrem(redis_keys.inflight_key(shard), entry.member.encode())
            return dead_id

    @port_call
    def redeliver(
        self,
        shard: int,
        min_idle_ms: int,
        now_ms: int,
        max_deliveries: int,
        cursor: str = "0-0",
        batch: int = constants.AUTOCLAIM_BATCH,
    ) -> RedeliverResult:
        """redeliver.lua: re-adds entries idle past min_idle_ms with d + 1; exhausted ones stay pending here.

        Malformed entries fail as they do in Redis and the adapter: one without a member fails the script
        (XADD of a nil) or, exhausted, the decoding of the reply; an undecodable member fails only when
        exhausted (the adapter decodes exhausted members; re-added ones are copied as text).
        """
        ready, inflight = redis_keys.ready_stream(shard), redis_keys.inflight_key(shard)
        m = self.memory
        with m.lock:
            next_cursor, claimed = m.xautoclaim(ready, GROUP, self.consumer, min_idle_ms, cursor, batch)
            redelivered, exhausted = 0, []
            for entry_id, fields in claimed:
                member = fields.get("m")
                deliveries = int(fields.get("d", "0")) + 1
                if deliveries >= max_deliveries:
                    exhausted.append((entry_id, member))
                    continue
                if member is None:
                    raise ScriptError(
                        "ERR Error running script: Lua redis() command arguments must be strings"
                    )
                m.xadd(ready, {"m": member, "d": str(deliveries)})
                m.xack(ready, GROUP, entry_id)
                m.xdel(ready, entry_id)
                m.zadd(inflight, now_ms, member)
                redelivered += 1
        decoded = []
        for entry_id, member in exhausted:
            if member is None:
                raise IndexError("list index out of range")  # the adapter's decoding of a short reply
            decoded.append(StreamEntry(shard, entry_id, Member.decode(member), max_deliveries))
        return RedeliverResult(redelivered, decoded, next_cursor)

    @port_call
    def prune_consumers(self, shard: int, idle_ms: int) -> int:
        """Deletes consumers holding nothing and idle for idle_ms; returns how many."""
        ready = redis_keys.ready_stream(shard)
        with self.memory.lock:
            idle = [
                name
                for name, held, idle_for in self.memory.xinfo_consumers(ready, GROUP)
                if held == 0 and idle_for >= idle_ms
            ]
            for name in idle:
                self.memory.xgroup_delconsumer(ready, GROUP, name)
            return len(idle)

    @port_call
    def trim_dead(self, shard: int, max_len: int = constants.DEAD_STREAM_MAX_LEN) -> int:
        """Trims the dead stream approximately (whole nodes); returns how many entries went."""
        with self.memory.lock:
            return self.memory.xtrim(redis_keys.dead_stream(shard), max_len)
