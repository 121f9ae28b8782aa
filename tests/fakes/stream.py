"""The ready stream (hookline.ports.ReadyStream) over RedisMemory: adapters/redis/stream.py and its scripts
(ack, defer, dead_letter, heartbeat, redeliver, prune_consumers) rewritten over the model.

Entries are decoded with the adapter's own functions (adapters/redis/base.py entry, member_of), so a
malformed entry is told apart exactly as the adapter tells it, and discarded the same way: dead-lettered
with reason malformed_entry at this role's clock, counted as MalformedEntries.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.base import MalformedEntry, entry, member_of
from hookline.adapters.redis.rebuild import new_epoch
from hookline.adapters.redis.stream import MALFORMED_REASON
from hookline.domain import constants
from hookline.domain.delivery import ClaimResult, RedeliverResult, StreamEntry
from tests.fakes.faults import ScriptError, port_call
from tests.fakes.redis_memory import BusyGroup, NoGroup
from tests.fakes.redis_role import FakeRedisRole

GROUP = redis_keys.CONSUMER_GROUP

# What Lua 5.1's tonumber reads from a string (surrounding spaces allowed): a decimal or a hexadecimal.
_LUA_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_LUA_HEX = re.compile(r"[+-]?0[xX][0-9a-fA-F]+")


def lua_tonumber(text: str) -> float | None:
    """Returns what Lua's tonumber makes of text, None where it gives nil."""
    stripped = text.strip(" \t\n\r\f\v")
    if _LUA_HEX.fullmatch(stripped):
        return float(int(stripped, 16))
    if _LUA_DECIMAL.fullmatch(stripped):
        return float(stripped)
    return None


def lua_text(number: float) -> str:
    """Returns a Lua number as a script hands it to a Redis command ("%.14g")."""
    return f"{number:.14g}"


class FakeReadyStream(FakeRedisRole):
    """Reads and ends deliveries as adapters/redis/stream.py does, for the consumer it was made with."""

    @port_call
    def ensure_group(self, shard: int) -> None:
        """Creates the group (reading from the start, the stream made if missing) unless it exists.

        A group created here writes a new epoch into the shard's rebuild marks, as the adapter does.
        """
        with self.memory.lock:
            self._ensure_group(shard)

    def _ensure_group(self, shard: int) -> None:
        with contextlib.suppress(BusyGroup):
            self.memory.xgroup_create(redis_keys.ready_stream(shard), GROUP, mkstream=True)
            self.memory.hset(redis_keys.rebuild_key(shard), "epoch", new_epoch())

    @port_call
    def read_ready(self, shards: Sequence[int], count: int, block_ms: int) -> list[StreamEntry]:
        """XREADGROUP '>' for this consumer (count per stream); a missing group is made and nothing read.

        With nothing new and block_ms > 0, spends block_ms (the memory's wait) and reads once more (a group
        lost meanwhile is UNBLOCKED in Redis, made again here). Malformed entries are dead-lettered.
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
        entries: list[StreamEntry] = []
        for key, messages in reply:
            for entry_id, fields in messages:
                try:
                    entries.append(entry(shard_of[key], entry_id, fields))
                except MalformedEntry as error:
                    self._discard(shard_of[key], entry_id, error)
        return entries

    @port_call
    def ack(self, entry: StreamEntry) -> bool:
        """ack.lua: XACK, then XDEL and ZREM from in-flight; False (nothing changed) when already acked."""
        return self._ack(entry)

    def _ack(self, entry: StreamEntry) -> bool:
        ready = redis_keys.ready_stream(entry.shard)
        m = self.memory
        with m.lock:
            if m.xack(ready, GROUP, entry.entry_id) == 0:
                return False
            m.xdel(ready, entry.entry_id)
            m.zrem(redis_keys.inflight_key(entry.shard), entry.member.encode())
            return True

    @port_call
    def ack_many(self, entries: Sequence[StreamEntry]) -> int:
        """ack_many.lua: each entry as ack.lua does; returns how many were acknowledged."""
        return sum(1 for entry in entries if self._ack(entry))

    @port_call
    def heartbeat(self, entries: Sequence[StreamEntry]) -> set[str]:
        """heartbeat.lua per shard: XCLAIM JUSTID of each entry still pending under this consumer.

        Returns those ids (one deleted from the stream is among them, and dropped from the pending list, as
        Redis 7.0's XCLAIM does). A shard whose group is gone holds nothing (NOGROUP, as in the adapter).
        """
        by_shard: dict[int, list[str]] = {}
        for one in entries:
            by_shard.setdefault(one.shard, []).append(one.entry_id)
        held: set[str] = set()
        m = self.memory
        for shard, entry_ids in sorted(by_shard.items()):
            ready = redis_keys.ready_stream(shard)
            with m.lock:
                try:
                    mine = [i for i in entry_ids if m.xpending_of(ready, GROUP, i, self.consumer)]
                except NoGroup:
                    continue  # Redis lost the stream: nothing is held there any more
                for entry_id in mine:
                    m.xclaim_justid(ready, GROUP, self.consumer, entry_id)
                held.update(mine)
        return held

    @port_call
    def undelivered(self, shard: int) -> int:
        """Returns how many of the shard's entries no consumer has read (0 without a stream; every entry
        without the group): the group's lag, as the adapter reads it."""
        ready = redis_keys.ready_stream(shard)
        m = self.memory
        with m.lock:
            try:
                groups = m.xinfo_groups(ready)
            except ScriptError:
                return 0
            if not any(name == GROUP for name, _, _ in groups):
                return m.xlen(ready)
            return m.unread(ready, GROUP)

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
        return self._dead_letter(entry.shard, entry.entry_id, entry.member.encode(), reason, now_ms)

    def _dead_letter(self, shard: int, entry_id: str, member: str, reason: str, now_ms: int) -> str | None:
        ready = redis_keys.ready_stream(shard)
        m = self.memory
        with m.lock:
            if m.xack(ready, GROUP, entry_id) == 0:
                return None
            fields = {"m": member, "reason": reason, "at": str(now_ms)}
            dead_id = m.xadd(redis_keys.dead_stream(shard), fields, max_len=constants.DEAD_STREAM_MAX_LEN)
            m.xdel(ready, entry_id)
            m.zrem(redis_keys.inflight_key(shard), member)
            return dead_id

    def _discard(self, shard: int, entry_id: str, error: MalformedEntry) -> None:
        """Dead-letters an entry that holds no readable delivery, with its raw member (the adapter's)."""
        self._dead_letter(shard, entry_id, error.raw_member, MALFORMED_REASON, self.clock.now_ms())
        self.metrics.count("MalformedEntries")

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

        An entry with no member, or a delivery count Lua cannot read, is malformed: left pending for the
        adapter's side to dead-letter, as is an exhausted entry whose member does not decode. A member that
        does not decode but is not exhausted is copied as text (the script does not decode members).
        """
        ready, inflight = redis_keys.ready_stream(shard), redis_keys.inflight_key(shard)
        m = self.memory
        with m.lock:
            try:
                next_cursor, claimed = m.xautoclaim(ready, GROUP, self.consumer, min_idle_ms, cursor, batch)
            except NoGroup:
                return RedeliverResult(0, [], "0-0", 0)  # Redis lost the stream: nothing is pending there
            redelivered = 0
            exhausted: list[tuple[str, str]] = []
            malformed: list[tuple[str, str]] = []
            for entry_id, fields in claimed:
                member = fields.get("m")
                deliveries = lua_tonumber(fields["d"]) if "d" in fields else 0.0
                if member is None or deliveries is None:
                    malformed.append((entry_id, member or ""))
                elif deliveries + 1 >= max_deliveries:
                    exhausted.append((entry_id, member))
                else:
                    m.xadd(ready, {"m": member, "d": lua_text(deliveries + 1)})
                    m.xack(ready, GROUP, entry_id)
                    m.xdel(ready, entry_id)
                    m.zadd(inflight, now_ms, member)
                    redelivered += 1
        discarded = 0
        for entry_id, raw in malformed:
            self._discard(shard, entry_id, MalformedEntry(raw, "no member or a bad delivery count"))
            discarded += 1
        decoded: list[StreamEntry] = []
        for entry_id, raw in exhausted:
            try:
                decoded.append(StreamEntry(shard, entry_id, member_of(raw), max_deliveries))
            except MalformedEntry as error:
                self._discard(shard, entry_id, error)
                discarded += 1
        return RedeliverResult(redelivered, decoded, next_cursor, discarded)

    @port_call
    def claim_idle(
        self, shard: int, min_idle_ms: int, now_ms: int, max_deliveries: int, count: int
    ) -> ClaimResult:
        """claim_idle.lua: takes idle entries over in place; deliveries = d + times handed out before."""
        ready, inflight = redis_keys.ready_stream(shard), redis_keys.inflight_key(shard)
        m = self.memory
        with m.lock:
            try:
                taken = m.xclaim_idle(ready, GROUP, self.consumer, min_idle_ms, count)
            except NoGroup:
                return ClaimResult([], [])
            claimed: list[tuple[str, str, int]] = []
            exhausted: list[tuple[str, str]] = []
            malformed: list[tuple[str, str]] = []
            for entry_id, fields, handed_out in taken:
                member = fields.get("m")
                deliveries = lua_tonumber(fields["d"]) if "d" in fields else 0.0
                if member is None or deliveries is None:
                    malformed.append((entry_id, member or ""))
                elif deliveries + handed_out >= max_deliveries:
                    exhausted.append((entry_id, member))
                else:
                    m.zadd(inflight, now_ms, member)
                    claimed.append((entry_id, member, int(deliveries) + handed_out))
        discarded = 0
        for entry_id, raw in malformed:
            self._discard(shard, entry_id, MalformedEntry(raw, "no member or a bad delivery count"))
            discarded += 1
        result = ClaimResult([], [], 0)
        for entry_id, raw, deliveries in claimed:
            try:
                result.claimed.append(StreamEntry(shard, entry_id, member_of(raw), deliveries))
            except MalformedEntry as error:
                self._discard(shard, entry_id, error)
                discarded += 1
        for entry_id, raw in exhausted:
            try:
                result.exhausted.append(StreamEntry(shard, entry_id, member_of(raw), max_deliveries))
            except MalformedEntry as error:
                self._discard(shard, entry_id, error)
                discarded += 1
        result.malformed = discarded
        return result

    @port_call
    def prune_consumers(self, shard: int, idle_ms: int) -> int:
        """prune_consumers.lua: deletes consumers holding nothing and idle for idle_ms; returns how many.

        0 when the stream or its group does not exist.
        """
        ready = redis_keys.ready_stream(shard)
        with self.memory.lock:
            try:
                consumers = self.memory.xinfo_consumers(ready, GROUP)
            except NoGroup:
                return 0
            idle = [name for name, held, idle_for in consumers if held == 0 and idle_for >= idle_ms]
            for name in idle:
                self.memory.xgroup_delconsumer(ready, GROUP, name)
            return len(idle)

    @port_call
    def trim_dead(self, shard: int, max_len: int = constants.DEAD_STREAM_MAX_LEN) -> int:
        """Trims the dead stream approximately (whole nodes); returns how many entries went."""
        with self.memory.lock:
            return self.memory.xtrim(redis_keys.dead_stream(shard), max_len)
