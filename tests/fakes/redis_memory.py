"""An in-memory model of the Redis data the Lua scripts touch: ZSETs, lists, hashes, strings, streams.

The role fakes (due.py, stream.py, limiters.py, cron.py) are the Lua scripts of lua/ rewritten over these
commands, line for line, each under the one lock (a script runs atomically in Redis). The model keeps what
the scripts can observe: ZSET order (score, then member), empty keys disappearing, relative key expiry,
stream ids made from the clock, one pending entry list per group with each entry's consumer, delivery
count and delivery time, and XAUTOCLAIM's scan (COUNT, at most 10 * COUNT pending entries looked at,
deleted entries dropped from the list and counted, the cursor the next unvisited id or 0-0). Redis 7.0's
rules where versions differ: XCLAIM and XAUTOCLAIM drop a pending entry deleted from the stream. It also
serves as the contract tests' probe: zset(), stream(), pending() and friends read keys by their real names.

Time: where Redis reads its own clock (stream ids, idle times, key expiry), the model reads the injected
clock; a blocking read that finds nothing spends its timeout through `on_wait` (by default a FrozenClock is
advanced by the timeout), then looks once more, so a test can make something arrive during the wait.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hookline.ports import Clock
from tests.fakes.clock import FrozenClock
from tests.fakes.faults import ScriptError

StreamId = tuple[int, int]
ZERO_ID: StreamId = (0, 0)
# Redis trims an approximate MAXLEN by whole stream nodes; the model uses nodes of this many entries.
STREAM_NODE_ENTRIES = 100


class NoGroup(ScriptError):
    """XREADGROUP or XAUTOCLAIM named a stream or group that does not exist (Redis's NOGROUP)."""


class BusyGroup(ScriptError):
    """XGROUP CREATE named a group that exists (Redis's BUSYGROUP)."""


def parse_id(text: str) -> StreamId:
    """Returns the (ms, seq) of a stream id such as '1700000000000-3'."""
    ms, _, seq = text.partition("-")
    return int(ms), int(seq or 0)


def format_id(entry_id: StreamId) -> str:
    """Returns the text form of a stream id."""
    return f"{entry_id[0]}-{entry_id[1]}"


@dataclass
class Nack:
    """One pending entry: who holds it, when it was last delivered (ms) and how many times."""

    consumer: str
    delivery_ms: int
    count: int


@dataclass
class Group:
    """A consumer group: its read position, its pending entry list and its consumers' last activity (ms)."""

    last_delivered: StreamId
    pel: dict[StreamId, Nack] = field(default_factory=dict)
    consumers: dict[str, int] = field(default_factory=dict)


@dataclass
class Stream:
    """A stream: entries in id order, the nodes holding them, the last id handed out, and its groups."""

    entries: dict[StreamId, dict[str, str]] = field(default_factory=dict)
    nodes: list[list[StreamId]] = field(default_factory=list)
    last_id: StreamId = ZERO_ID
    groups: dict[str, Group] = field(default_factory=dict)


def _below(score: float, bound: float, exclusive: bool) -> bool:
    return score < bound if exclusive else score <= bound


def _advance_frozen(clock: Clock) -> Callable[[int], None]:
    def wait(ms: int) -> None:
        if isinstance(clock, FrozenClock):
            clock.advance(ms)

    return wait


class RedisMemory:
    """One Redis database in memory; every method expects `lock` held except the probe readers."""

    def __init__(self, clock: Clock, wait: Callable[[int], None] | None = None) -> None:
        self.clock = clock
        self.lock = threading.RLock()
        # What a blocking command does with its timeout; a test may replace it (to act during a wait).
        self.on_wait: Callable[[int], None] = wait or _advance_frozen(clock)
        self._zsets: dict[str, dict[str, float]] = {}
        self._lists: dict[str, list[str]] = {}
        self._hashes: dict[str, dict[str, str]] = {}
        self._strings: dict[str, str] = {}
        self._streams: dict[str, Stream] = {}
        self._expires: dict[str, int] = {}

    # Time and the keyspace.

    def now(self) -> int:
        """Returns the model's own time (Redis's clock)."""
        return self.clock.now_ms()

    def wait(self, ms: int) -> None:
        """Spends ms as a blocking command would (called without the lock)."""
        self.on_wait(ms)

    def flushall(self) -> None:
        """Loses every key, as a fail-over to an empty replica or FLUSHALL does."""
        with self.lock:
            for space in self._spaces():
                space.clear()
            self._expires.clear()

    def _spaces(self) -> tuple[dict[str, Any], ...]:
        return (self._zsets, self._lists, self._hashes, self._strings, self._streams)

    def _expire(self, key: str) -> None:
        at = self._expires.get(key)
        if at is not None and self.now() > at:
            self._delete(key)

    def _delete(self, key: str) -> None:
        for space in self._spaces():
            space.pop(key, None)
        self._expires.pop(key, None)

    def exists(self, key: str) -> bool:
        """Tells whether key exists (EXISTS)."""
        self._expire(key)
        return any(key in space for space in self._spaces())

    def pexpire(self, key: str, ms: int) -> None:
        """Makes an existing key expire ms from now; ms <= 0 deletes it at once (PEXPIRE)."""
        if not self.exists(key):
            return
        if ms <= 0:
            self._delete(key)
            return
        self._expires[key] = self.now() + ms

    def pttl(self, key: str) -> int:
        """Returns the key's remaining life in ms, -1 without expiry, -2 when missing (PTTL)."""
        if not self.exists(key):
            return -2
        at = self._expires.get(key)
        return -1 if at is None else at - self.now()

    # Sorted sets.

    def _zset(self, key: str) -> dict[str, float]:
        self._expire(key)
        return self._zsets.get(key, {})

    def _zclean(self, key: str) -> None:
        if key in self._zsets and not self._zsets[key]:
            self._delete(key)

    def zadd(self, key: str, score: float, member: str, *, xx: bool = False) -> int:
        """Sets member's score (ZADD [XX]); returns 1 when it was added."""
        current = self._zset(key)
        if xx and member not in current:
            return 0
        added = int(member not in current)
        self._zsets.setdefault(key, current)[member] = float(score)
        return added

    def zrem(self, key: str, *members: str) -> int:
        """Removes members (ZREM); returns how many were there."""
        current = self._zset(key)
        removed = sum(1 for m in members if current.pop(m, None) is not None)
        self._zclean(key)
        return removed

    def zscore(self, key: str, member: str) -> float | None:
        """Returns member's score, None when absent (ZSCORE)."""
        return self._zset(key).get(member)

    def zcard(self, key: str) -> int:
        """Returns the number of members (ZCARD)."""
        return len(self._zset(key))

    def zordered(self, key: str) -> list[tuple[str, float]]:
        """Returns (member, score) in Redis's order: by score, then by member."""
        return sorted(self._zset(key).items(), key=lambda pair: (pair[1], pair[0].encode()))

    def zfirst(self, key: str) -> tuple[str, float] | None:
        """Returns the lowest (member, score), None when empty (ZRANGE key 0 0 WITHSCORES)."""
        ordered = self.zordered(key)
        return ordered[0] if ordered else None

    def zrange_at(self, key: str, index: int) -> tuple[str, float] | None:
        """Returns the (member, score) at a rank, negative from the end (ZRANGE key i i WITHSCORES)."""
        ordered = self.zordered(key)
        return ordered[index] if -len(ordered) <= index < len(ordered) else None

    def zrangebyscore(
        self, key: str, max_score: float, limit: int, *, exclusive: bool = False
    ) -> list[tuple[str, float]]:
        """Returns up to limit (member, score) with score <= max_score, or < with exclusive
        (ZRANGEBYSCORE -inf [(]max LIMIT 0 n)."""
        return [pair for pair in self.zordered(key) if _below(pair[1], max_score, exclusive)][:limit]

    def zcount(self, key: str, max_score: float, *, exclusive: bool = False) -> int:
        """Counts members with score <= max_score, or < with exclusive (ZCOUNT -inf [(]max)."""
        return sum(1 for score in self._zset(key).values() if _below(score, max_score, exclusive))

    def zremrangebyscore(self, key: str, max_score: float, *, exclusive: bool = False) -> int:
        """Removes members with score <= max_score, or < with exclusive (ZREMRANGEBYSCORE -inf [(]max)."""
        current = self._zset(key)
        gone = [m for m, s in current.items() if _below(s, max_score, exclusive)]
        for member in gone:
            del current[member]
        self._zclean(key)
        return len(gone)

    # Lists and hashes.

    def rpush(self, key: str, value: str) -> int:
        """Appends value (RPUSH); returns the new length."""
        self._expire(key)
        self._lists.setdefault(key, []).append(value)
        return len(self._lists[key])

    def lpop(self, key: str) -> str | None:
        """Takes the first value (LPOP), None when empty."""
        self._expire(key)
        values = self._lists.get(key)
        if not values:
            return None
        value = values.pop(0)
        if not values:
            self._delete(key)
        return value

    def llen(self, key: str) -> int:
        """Returns the list's length (LLEN)."""
        self._expire(key)
        return len(self._lists.get(key, []))

    def hget(self, key: str, name: str) -> str | None:
        """Returns one field (HGET)."""
        self._expire(key)
        return self._hashes.get(key, {}).get(name)

    def hset(self, key: str, name: str, value: str) -> None:
        """Sets one field (HSET)."""
        self._expire(key)
        self._hashes.setdefault(key, {})[name] = value

    def hsetnx(self, key: str, name: str, value: str) -> int:
        """Sets one field unless it exists (HSETNX); returns 1 when set."""
        if self.hget(key, name) is not None:
            return 0
        self.hset(key, name, value)
        return 1

    def get(self, key: str) -> str | None:
        """Returns a string key's value (GET)."""
        self._expire(key)
        return self._strings.get(key)

    def set(self, key: str, value: str, px: int | None = None) -> None:
        """Sets a string key, replacing any expiry, with a new one px ms from now if given (SET [PX])."""
        self._expire(key)
        self._delete(key)
        self._strings[key] = value
        if px is not None:
            self._expires[key] = self.now() + px

    def hdel(self, key: str, name: str) -> int:
        """Deletes one field (HDEL); returns 1 when it was there."""
        self._expire(key)
        fields = self._hashes.get(key, {})
        removed = int(fields.pop(name, None) is not None)
        if key in self._hashes and not fields:
            self._delete(key)
        return removed

    # Streams.

    def _stream(self, key: str) -> Stream | None:
        self._expire(key)
        return self._streams.get(key)

    def _group(self, key: str, group: str) -> Group:
        stream = self._stream(key)
        if stream is None or group not in stream.groups:
            raise NoGroup(f"NOGROUP No such key '{key}' or consumer group '{group}'")
        return stream.groups[group]

    def xadd(self, key: str, fields: dict[str, str], max_len: int | None = None) -> str:
        """Appends an entry with an id from the clock (XADD key [MAXLEN ~ n] * ...); returns the id."""
        stream = self._stream(key)
        if stream is None:
            stream = self._streams[key] = Stream()
        ms = self.now()
        last_ms, last_seq = stream.last_id
        entry_id = (last_ms, last_seq + 1) if ms <= last_ms else (ms, 0)
        stream.last_id = entry_id
        stream.entries[entry_id] = dict(fields)
        if not stream.nodes or len(stream.nodes[-1]) >= STREAM_NODE_ENTRIES:
            stream.nodes.append([])
        stream.nodes[-1].append(entry_id)
        if max_len is not None:
            self.xtrim(key, max_len)
        return format_id(entry_id)

    def xdel(self, key: str, entry_id: str) -> int:
        """Deletes an entry from the stream (not from any pending list) (XDEL)."""
        stream = self._stream(key)
        if stream is None or parse_id(entry_id) not in stream.entries:
            return 0
        gone = parse_id(entry_id)
        del stream.entries[gone]
        for node in stream.nodes:
            if gone in node:
                node.remove(gone)
        stream.nodes = [node for node in stream.nodes if node]  # an emptied node is freed
        return 1

    def xlen(self, key: str) -> int:
        """Returns the number of entries (XLEN)."""
        stream = self._stream(key)
        return 0 if stream is None else len(stream.entries)

    def xtrim(self, key: str, max_len: int) -> int:
        """Trims approximately (MAXLEN ~): drops whole oldest nodes while at least max_len entries remain.

        Redis also closes a node at 4 KiB (stream-node-max-bytes); the model counts entries only, so where
        trimming stops can differ by up to a node: the port promises only "about max_len".
        """
        stream = self._stream(key)
        if stream is None:
            return 0
        removed = 0
        while stream.nodes and len(stream.entries) - len(stream.nodes[0]) >= max_len:
            for entry_id in stream.nodes.pop(0):
                del stream.entries[entry_id]
                removed += 1
        return removed

    def xgroup_create(self, key: str, group: str, *, mkstream: bool) -> None:
        """Creates a group reading from the start (XGROUP CREATE key group 0 [MKSTREAM])."""
        stream = self._stream(key)
        if stream is None:
            if not mkstream:
                raise ScriptError("ERR The XGROUP subcommand requires the key to exist")
            stream = self._streams[key] = Stream()
        if group in stream.groups:
            raise BusyGroup("BUSYGROUP Consumer Group name already exists")
        stream.groups[group] = Group(last_delivered=ZERO_ID)

    def xreadgroup(
        self, group: str, consumer: str, keys: Sequence[str], count: int
    ) -> list[tuple[str, list[tuple[str, dict[str, str]]]]]:
        """Delivers up to count new entries per stream to consumer (XREADGROUP ... STREAMS k.. > ..)."""
        groups = [self._group(key, group) for key in keys]  # NOGROUP for any key fails the whole call
        now = self.now()
        reply = []
        for key, found in zip(keys, groups, strict=True):
            stream = self._streams[key]
            fresh = [i for i in stream.entries if i > found.last_delivered][:count]
            if fresh:  # Redis 7.0 makes (or refreshes) a consumer only when it is handed something
                found.consumers[consumer] = now
            for entry_id in fresh:
                found.pel[entry_id] = Nack(consumer, now, 1)
                found.last_delivered = entry_id
            if fresh:
                reply.append((key, [(format_id(i), dict(stream.entries[i])) for i in fresh]))
        return reply

    def xack(self, key: str, group: str, entry_id: str) -> int:
        """Removes an entry from the group's pending list (XACK); returns 1 when it was pending."""
        stream = self._stream(key)
        if stream is None or group not in stream.groups:
            return 0
        return int(stream.groups[group].pel.pop(parse_id(entry_id), None) is not None)

    def xautoclaim(
        self, key: str, group: str, consumer: str, min_idle_ms: int, start: str, count: int
    ) -> tuple[str, list[tuple[str, dict[str, str]]]]:
        """Claims pending entries idle >= min_idle_ms from start on (XAUTOCLAIM, Redis 7 reply).

        Looks at no more than 10 * count pending entries; an entry deleted from the stream is dropped from
        the pending list and counts towards count; a claimed entry changes consumer, has its delivery time
        reset and its count raised. Returns the cursor (the next unvisited id, 0-0 at the end) and the
        claimed entries (deleted ones are not returned).
        """
        found = self._group(key, group)
        stream = self._streams[key]
        now = self.now()
        ids = sorted(i for i in found.pel if i >= parse_id(start))
        attempts, left, claimed = count * 10, count, []
        position = 0
        while attempts and left and position < len(ids):
            attempts -= 1
            entry_id = ids[position]
            position += 1
            nack = found.pel[entry_id]
            if entry_id not in stream.entries:
                del found.pel[entry_id]
                left -= 1
                continue
            if now - nack.delivery_ms < min_idle_ms:
                continue
            found.pel[entry_id] = Nack(consumer, now, nack.count + 1)
            claimed.append((format_id(entry_id), dict(stream.entries[entry_id])))
            left -= 1
        if claimed:  # as for XREADGROUP, the consumer is made or refreshed only when it gets something
            found.consumers[consumer] = now
        cursor = format_id(ids[position]) if position < len(ids) else "0-0"
        return cursor, claimed

    def xpending_of(self, key: str, group: str, entry_id: str, consumer: str) -> bool:
        """Tells whether entry_id is pending under consumer (XPENDING key group id id 1 consumer)."""
        nack = self._group(key, group).pel.get(parse_id(entry_id))
        return nack is not None and nack.consumer == consumer

    def xclaim_justid(self, key: str, group: str, consumer: str, entry_id: str) -> bool:
        """XCLAIM key group consumer 0 id JUSTID: the entry moves to consumer with its idle time reset and
        its delivery count unchanged; one deleted from the stream is dropped from the pending list instead
        (Redis 7.0). Returns whether it was claimed."""
        found = self._group(key, group)
        stream = self._streams[key]
        at = parse_id(entry_id)
        nack = found.pel.get(at)
        if nack is None:
            return False
        if at not in stream.entries:
            del found.pel[at]
            return False
        found.pel[at] = Nack(consumer, self.now(), nack.count)
        found.consumers[consumer] = self.now()
        return True

    def xclaim_idle(
        self, key: str, group: str, consumer: str, min_idle_ms: int, count: int
    ) -> list[tuple[str, dict[str, str], int]]:
        """XPENDING key group IDLE min_idle - + count, then XCLAIM of each to consumer (claim_idle.lua).

        Returns (id, fields, times handed out before this claim) per claimed entry, oldest first; a pending
        entry deleted from the stream is dropped from the pending list instead.
        """
        found = self._group(key, group)
        stream = self._streams[key]
        now = self.now()
        idle = [i for i in sorted(found.pel) if now - found.pel[i].delivery_ms >= min_idle_ms][:count]
        claimed = []
        for entry_id in idle:
            nack = found.pel[entry_id]
            if entry_id not in stream.entries:
                del found.pel[entry_id]
                continue
            found.pel[entry_id] = Nack(consumer, now, nack.count + 1)
            claimed.append((format_id(entry_id), dict(stream.entries[entry_id]), nack.count))
        if claimed:
            found.consumers[consumer] = now
        return claimed

    def xinfo_groups(self, key: str) -> list[tuple[str, int, StreamId]]:
        """Returns (name, pending count, last delivered id) of the stream's groups (XINFO GROUPS)."""
        stream = self._stream(key)
        if stream is None:
            raise ScriptError("ERR no such key")
        return [(name, len(g.pel), g.last_delivered) for name, g in stream.groups.items()]

    def unread(self, key: str, group: str) -> int:
        """Returns how many entries of the stream lie after the group's last delivered id."""
        found = self._group(key, group)
        return sum(1 for entry_id in self._streams[key].entries if entry_id > found.last_delivered)

    def xinfo_consumers(self, key: str, group: str) -> list[tuple[str, int, int]]:
        """Returns (name, pending entries, idle ms) of the group's consumers (XINFO CONSUMERS)."""
        found = self._group(key, group)
        now = self.now()
        return [
            (name, sum(1 for n in found.pel.values() if n.consumer == name), now - seen)
            for name, seen in found.consumers.items()
        ]

    def xgroup_delconsumer(self, key: str, group: str, consumer: str) -> int:
        """Deletes a consumer and its pending entries (XGROUP DELCONSUMER); returns how many it held."""
        found = self._group(key, group)
        held = [i for i, n in found.pel.items() if n.consumer == consumer]
        for entry_id in held:
            del found.pel[entry_id]
        found.consumers.pop(consumer, None)
        return len(held)

    # Probe readers: the contract tests read the fake and real Redis through these same names.

    def zset(self, key: str) -> dict[str, float]:
        """Returns a ZSET's contents as member -> score."""
        with self.lock:
            return dict(self.zordered(key))

    def stream(self, key: str) -> list[tuple[str, dict[str, str]]]:
        """Returns a stream's entries, oldest first, as (id, fields)."""
        with self.lock:
            found = self._stream(key)
            return [] if found is None else [(format_id(i), dict(f)) for i, f in found.entries.items()]

    def pending(self, key: str, group: str) -> list[tuple[str, str, int]]:
        """Returns the group's pending entries in id order as (entry id, consumer, times delivered)."""
        with self.lock:
            found = self._stream(key)
            if found is None or group not in found.groups:
                return []
            pel = found.groups[group].pel
            return [(format_id(i), pel[i].consumer, pel[i].count) for i in sorted(pel)]

    def list_length(self, key: str) -> int:
        """Returns a list's length."""
        with self.lock:
            return self.llen(key)

    def hash(self, key: str) -> dict[str, str]:
        """Returns a hash's fields."""
        with self.lock:
            self._expire(key)
            return dict(self._hashes.get(key, {}))

    def string(self, key: str) -> str | None:
        """Returns a string key's value."""
        with self.lock:
            return self.get(key)

    def flush(self) -> None:
        """Loses every key (FLUSHALL)."""
        self.flushall()

    def read_raw(self, key: str, group: str, consumer: str) -> list[str]:
        """XREADGROUPs every new entry for consumer without decoding; returns their ids."""
        with self.lock:
            return [
                entry_id
                for _, messages in self.xreadgroup(group, consumer, [key], 10_000)
                for entry_id, _ in messages
            ]

    def consumers(self, key: str, group: str) -> dict[str, int]:
        """Returns the group's consumers and how many entries each holds."""
        with self.lock:
            return {name: held for name, held, _ in self.xinfo_consumers(key, group)}

    def add_entry(self, key: str, fields: dict[str, str]) -> str:
        """Appends a raw entry (a test seeds a malformed one this way); returns its id."""
        with self.lock:
            return self.xadd(key, fields)

    def delete_entry(self, key: str, entry_id: str) -> None:
        """Deletes an entry from a stream (XDEL), leaving it in any pending list."""
        with self.lock:
            self.xdel(key, entry_id)
