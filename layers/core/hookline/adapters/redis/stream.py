"""The ready stream and its consumer group: deliveries, acks, re-deliveries and the dead stream."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any, cast

import redis

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.base import SHARDS_POLL_MS, MalformedEntry, RedisBase, entry, member_of, text
from hookline.adapters.redis.rebuild import new_epoch
from hookline.domain import constants
from hookline.domain.delivery import ClaimResult, RedeliverResult, StreamEntry

logger = logging.getLogger(__name__)

MALFORMED_REASON = "malformed_entry"


class RedisReadyStream(RedisBase):
    """Reads and ends deliveries of the ready streams (hookline.ports.ReadyStream)."""

    def ensure_group(self, shard: int) -> None:
        """Creates the ready stream's consumer group if it is missing (also after Redis lost everything).

        A group created here starts a new epoch of the shard (rebuild.py): Redis had lost it, or never had
        it, so the reaper rebuilds every index of the shard from DynamoDB at once.
        """
        try:
            self._redis.xgroup_create(
                redis_keys.ready_stream(shard), redis_keys.CONSUMER_GROUP, id="0", mkstream=True
            )
        except redis.ResponseError as error:
            if "BUSYGROUP" not in str(error):
                raise
            return
        # Not atomic with the group: a crash in between leaves no epoch, which also means "rebuild".
        self._redis.hset(redis_keys.rebuild_key(shard), "epoch", new_epoch())

    def read_ready(self, shards: Sequence[int], count: int, block_ms: int) -> list[StreamEntry]:
        """Reads up to `count` new deliveries per shard for this consumer, blocking up to block_ms (0: not).

        Each shard's stream is read by its own XREADGROUP: streams of different shards live in different
        slots (different nodes of a cluster), where one command over several would be refused. A blocking
        read takes one shard (the executor runs a reader per shard); given several, they are read in turn
        without blocking, again every SHARDS_POLL_MS until block_ms has passed if none had anything.
        """
        if len(shards) == 1:
            return self._read_shard(shards[0], count, block_ms)
        give_up_at = time.monotonic() + max(block_ms, 0) / 1000
        while True:
            entries = [entry for shard in shards for entry in self._read_shard(shard, count, 0)]
            left_s = give_up_at - time.monotonic()
            if entries or left_s <= 0:
                return entries
            time.sleep(min(left_s, SHARDS_POLL_MS / 1000))

    def _read_shard(self, shard: int, count: int, block_ms: int) -> list[StreamEntry]:
        """Reads up to `count` new deliveries of one shard (BLOCK 0 means "forever": 0 sends none)."""
        stream = redis_keys.ready_stream(shard)
        try:
            reply = cast(
                list[Any] | None,
                self._own_client().xreadgroup(
                    redis_keys.CONSUMER_GROUP,
                    self._consumer,
                    cast(Any, {stream: ">"}),
                    count=count,
                    block=block_ms if block_ms > 0 else None,
                ),
            )
        except redis.ResponseError as error:
            # NOGROUP: Redis lost the stream (flush, fail-over) before the read; UNBLOCKED: it lost it while
            # the read was blocked on it. Either way recreate it; the reaper re-indexes the jobs.
            if "NOGROUP" not in str(error) and "UNBLOCKED" not in str(error):
                raise
            self.ensure_group(shard)
            return []
        entries: list[StreamEntry] = []
        for _, messages in reply or []:
            for entry_id, fields in messages:
                try:
                    entries.append(entry(shard, text(entry_id), fields or {}))
                except MalformedEntry as error:
                    self._discard(shard, text(entry_id), error)
        return entries

    def ack(self, entry: StreamEntry) -> bool:
        """Finishes a delivery after DynamoDB holds its outcome; False when it was already finished."""
        keys = [redis_keys.ready_stream(entry.shard), redis_keys.inflight_key(entry.shard)]
        args = [redis_keys.CONSUMER_GROUP, entry.entry_id, entry.member.encode()]
        return int(cast(int, self._scripts["ack"](keys=keys, args=args))) == 1

    def ack_many(self, entries: Sequence[StreamEntry]) -> int:
        """Finishes several deliveries, each as ack() does, in one script call per shard; returns how many.

        Raises what a script call raises (a Redis error): the shards before it are finished, the rest stay
        pending, and the caller cannot tell which; an entry left pending is re-delivered once idle, its claim
        is refused (the job's outcome is recorded) and that delivery is acknowledged.
        """
        by_shard: dict[int, list[str]] = {}
        for one in entries:
            by_shard.setdefault(one.shard, []).extend((one.entry_id, one.member.encode()))
        acked = 0
        for shard, pairs in sorted(by_shard.items()):
            keys = [redis_keys.ready_stream(shard), redis_keys.inflight_key(shard)]
            reply = self._scripts["ack_many"](
                keys=keys, args=[redis_keys.CONSUMER_GROUP, *pairs], client=self._own_client()
            )
            acked += int(cast(int, reply))
        return acked

    def heartbeat(self, entries: Sequence[StreamEntry]) -> set[str]:
        """Resets the idle time of the entries this consumer still holds; returns their ids.

        The recoverers (every executor and the reaper) re-deliver only entries idle for redeliver_after_ms,
        so an entry whose executor beats more often than that is never duplicated while its attempt runs.
        """
        by_shard: dict[int, list[str]] = {}
        for one in entries:
            by_shard.setdefault(one.shard, []).append(one.entry_id)
        held: set[str] = set()
        for shard, entry_ids in sorted(by_shard.items()):
            keys = [redis_keys.ready_stream(shard)]
            args = [redis_keys.CONSUMER_GROUP, self._consumer, *entry_ids]
            try:
                reply = cast(list[Any], self._scripts["heartbeat"](keys=keys, args=args))
            except redis.ResponseError as error:
                if "NOGROUP" not in str(error):
                    raise
                continue  # Redis lost the stream: nothing is held there any more (reconcile re-indexes)
            held.update(text(entry_id) for entry_id in reply)
        return held

    def undelivered(self, shard: int) -> int:
        """Returns how many entries of the shard's ready stream no consumer has read yet.

        Pending entries are not counted: a live executor is working on them, or only a recoverer can free
        them, and neither goes faster with more executors. Redis 7 reports this as the group's `lag`; where
        it cannot (older servers, or a deletion it cannot see past) it is the stream's length less its
        pending entries, which is exact here because every finished entry is deleted from the stream.
        """
        stream = redis_keys.ready_stream(shard)
        pipe = self._redis.pipeline(transaction=True)  # both counts from one moment
        pipe.xlen(stream)
        pipe.xinfo_groups(stream)
        length, groups = pipe.execute(raise_on_error=False)
        if isinstance(groups, redis.ResponseError):
            return 0  # no stream yet (or Redis lost it): nothing waits
        for raw_group in cast(list[dict[Any, Any]], groups):
            # A cluster client's transaction leaves XINFO's field names as bytes (one node's: as text).
            group = {text(name): value for name, value in raw_group.items()}
            if text(group["name"]) != redis_keys.CONSUMER_GROUP:
                continue
            lag = group.get("lag")
            if lag is not None:
                return int(lag)
            return max(0, int(length) - int(group["pending"]))
        return int(length)

    def defer(self, entry: StreamEntry, due_ms: int) -> bool:
        """Puts a delivery back into the due ZSET for due_ms without spending an attempt."""
        shard = entry.shard
        keys = [
            redis_keys.due_key(shard),
            redis_keys.ready_stream(shard),
            redis_keys.inflight_key(shard),
            redis_keys.wake_key(shard),
        ]
        args: list[str | int] = [redis_keys.CONSUMER_GROUP, entry.entry_id, entry.member.encode(), due_ms]
        return int(cast(int, self._scripts["defer"](keys=keys, args=args))) == 1

    def dead_letter(self, entry: StreamEntry, reason: str, now_ms: int) -> str | None:
        """Records the dead job on the dead stream and finishes its delivery; returns the dead entry id.

        Returns None when the delivery had been finished already (nothing is recorded twice).
        """
        shard = entry.shard
        keys = [redis_keys.ready_stream(shard), redis_keys.inflight_key(shard), redis_keys.dead_stream(shard)]
        args: list[str | int] = [
            redis_keys.CONSUMER_GROUP,
            entry.entry_id,
            entry.member.encode(),
            reason,
            now_ms,
            constants.DEAD_STREAM_MAX_LEN,
        ]
        dead_id = self._scripts["dead_letter"](keys=keys, args=args)
        return None if dead_id is None else text(dead_id)

    def redeliver(
        self,
        shard: int,
        min_idle_ms: int,
        now_ms: int,
        max_deliveries: int,
        cursor: str = "0-0",
        batch: int = constants.AUTOCLAIM_BATCH,
    ) -> RedeliverResult:
        """Re-adds deliveries whose lease expired; returns those that ran out of deliveries."""
        keys = [redis_keys.ready_stream(shard), redis_keys.inflight_key(shard)]
        args: list[str | int] = [
            redis_keys.CONSUMER_GROUP,
            self._consumer,
            min_idle_ms,
            now_ms,
            batch,
            max_deliveries,
            cursor,
        ]
        try:
            redelivered, flat, next_cursor, malformed = cast(
                list[Any], self._scripts["redeliver"](keys=keys, args=args)
            )
        except redis.ResponseError as error:
            # NOGROUP: Redis lost the stream (a flush, a fail-over to an empty replica). Nothing is pending
            # there any more: the scan is over (the readers and the reaper recreate the group, and the
            # reaper re-indexes the jobs from DynamoDB).
            if "NOGROUP" not in str(error):
                raise
            return RedeliverResult(0, [], "0-0", 0)
        discarded = self._discard_malformed(shard, malformed)
        exhausted, unreadable = self._exhausted(shard, flat, max_deliveries)
        return RedeliverResult(int(redelivered), exhausted, text(next_cursor), discarded + unreadable)

    def claim_idle(
        self, shard: int, min_idle_ms: int, now_ms: int, max_deliveries: int, count: int
    ) -> ClaimResult:
        """Takes over up to `count` deliveries idle min_idle_ms (their consumer is gone), in place.

        The entries keep their place (claim_idle.lua), so this consumer serves them ahead of any backlog of
        new entries; each claimed entry comes back with its deliveries so far, and is pending under this
        consumer as if read. Exhausted ones are pending under it too, for the caller to dead-letter.
        """
        keys = [redis_keys.ready_stream(shard), redis_keys.inflight_key(shard)]
        args: list[str | int] = [
            redis_keys.CONSUMER_GROUP,
            self._consumer,
            min_idle_ms,
            now_ms,
            count,
            max_deliveries,
        ]
        try:
            flat, flat_exhausted, malformed = cast(
                list[Any], self._scripts["claim_idle"](keys=keys, args=args, client=self._own_client())
            )
        except redis.ResponseError as error:
            if "NOGROUP" not in str(error):
                raise
            return ClaimResult([], [])  # Redis lost the stream: nothing is pending there any more
        discarded = self._discard_malformed(shard, malformed)
        claimed: list[StreamEntry] = []
        for i in range(0, len(flat), 3):
            try:
                member = member_of(text(flat[i + 1]))
            except MalformedEntry as error:
                self._discard(shard, text(flat[i]), error)
                discarded += 1
                continue
            claimed.append(StreamEntry(shard, text(flat[i]), member, int(flat[i + 2])))
        exhausted, unreadable = self._exhausted(shard, flat_exhausted, max_deliveries)
        return ClaimResult(claimed, exhausted, discarded + unreadable)

    def _discard_malformed(self, shard: int, malformed: Sequence[Any]) -> int:
        """Discards the entries a script found without a member or a readable delivery count (a flat list
        of entry id, raw member); returns how many."""
        for i in range(0, len(malformed), 2):
            raw = text(malformed[i + 1])
            self._discard(shard, text(malformed[i]), MalformedEntry(raw, "no member or a bad delivery count"))
        return len(malformed) // 2

    def _exhausted(
        self, shard: int, flat: Sequence[Any], max_deliveries: int
    ) -> tuple[list[StreamEntry], int]:
        """Returns the exhausted entries of a script's flat list (entry id, member), for the caller to
        dead-letter, and how many it discarded because their member does not parse."""
        exhausted: list[StreamEntry] = []
        discarded = 0
        for i in range(0, len(flat), 2):
            try:
                member = member_of(text(flat[i + 1]))
            except MalformedEntry as error:
                self._discard(shard, text(flat[i]), error)
                discarded += 1
                continue
            exhausted.append(StreamEntry(shard, text(flat[i]), member, max_deliveries))
        return exhausted, discarded

    def _discard(self, shard: int, entry_id: str, error: MalformedEntry) -> None:
        """Moves an entry that holds no readable delivery to the dead stream (reason malformed_entry).

        Nothing can process it, and left pending it would poison every reaper run and every reader it is
        re-delivered to. The dead stream keeps its raw member for inspection; no job is touched (none can
        be named), and a job it might have meant is still live in DynamoDB, so reconciliation indexes it.
        """
        keys = [redis_keys.ready_stream(shard), redis_keys.inflight_key(shard), redis_keys.dead_stream(shard)]
        args: list[str | int] = [
            redis_keys.CONSUMER_GROUP,
            entry_id,
            error.raw_member,
            MALFORMED_REASON,
            self._clock.now_ms(),
            constants.DEAD_STREAM_MAX_LEN,
        ]
        self._scripts["dead_letter"](keys=keys, args=args)
        logger.error(
            "dead-lettered a malformed ready-stream entry",
            extra={"shard": shard, "entry_id": entry_id, "member": error.raw_member, "reason": str(error)},
        )
        self._metrics.count("MalformedEntries")

    def trim_dead(self, shard: int, max_len: int = constants.DEAD_STREAM_MAX_LEN) -> int:
        """Trims the dead stream to about max_len entries; returns how many were removed."""
        return int(self._redis.xtrim(redis_keys.dead_stream(shard), maxlen=max_len, approximate=True))

    def prune_consumers(self, shard: int, idle_ms: int) -> int:
        """Deletes consumers that hold nothing and were idle for idle_ms; returns how many.

        Every executor process reads as a consumer of its own, so the group gains one per Lambda cold start.
        A consumer with pending entries is kept: deleting it would drop them from the pending list. The
        check and the delete are one script (prune_consumers.lua), so no read can fall between them.
        """
        keys = [redis_keys.ready_stream(shard)]
        args: list[str | int] = [redis_keys.CONSUMER_GROUP, idle_ms]
        return int(cast(int, self._scripts["prune_consumers"](keys=keys, args=args)))
