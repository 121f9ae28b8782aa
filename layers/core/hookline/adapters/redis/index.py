"""The Redis adapter: one typed method per Lua script, plus the plain stream reads around them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import redis
from redis.commands.core import Script

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.scripts import SCRIPT_NAMES, script_source
from hookline.domain import constants
from hookline.domain.cron.schedule import ScheduleMember
from hookline.domain.models import Member


@dataclass(frozen=True)
class PromoteResult:
    """What one promote.lua call did."""

    moved: int
    next_due_ms: int | None


@dataclass(frozen=True)
class StreamEntry:
    """One delivery read from a ready stream."""

    shard: int
    entry_id: str
    member: Member
    deliveries: int


@dataclass(frozen=True)
class RedeliverResult:
    """What one redeliver.lua call did."""

    redelivered: int
    exhausted: list[StreamEntry]
    next_cursor: str  # "0-0" when the whole pending list was scanned

    @property
    def scan_finished(self) -> bool:
        """Tells whether no pending entry is left to look at."""
        return self.next_cursor == "0-0"


@dataclass(frozen=True)
class LimiterVerdict:
    """A limiter's answer: admitted, or refused until retry_at_ms."""

    admitted: bool
    retry_at_ms: int


@dataclass(frozen=True)
class CronClaim:
    """One schedule claimed by cron_claim.lua: the occurrence to handle, until claim_until_ms."""

    member: ScheduleMember
    fire_ms: int
    claim_until_ms: int


@dataclass(frozen=True)
class CronClaimResult:
    """What one cron_claim.lua call claimed, and the lowest score left (a fire time or a claim expiry)."""

    claims: list[CronClaim]
    next_ms: int | None


class RedisIndex:
    """Keeps the live indexes (due ZSET, ready stream, in-flight ZSET, dead stream) and the limiters."""

    def __init__(self, client: redis.Redis, consumer: str = "executor") -> None:
        self._redis = client
        self._consumer = consumer
        self._scripts: dict[str, Script] = {
            name: client.register_script(script_source(name)) for name in SCRIPT_NAMES
        }

    @property
    def client(self) -> redis.Redis:
        """Returns the underlying client (for health checks and tests)."""
        return self._redis

    def ensure_group(self, shard: int) -> None:
        """Creates the ready stream's consumer group if it is missing (also after Redis lost everything)."""
        try:
            self._redis.xgroup_create(
                redis_keys.ready_stream(shard), redis_keys.CONSUMER_GROUP, id="0", mkstream=True
            )
        except redis.ResponseError as error:
            if "BUSYGROUP" not in str(error):
                raise

    def index(self, member: Member, shard: int, due_ms: int, now_ms: int) -> bool:
        """Indexes a member for its due time; returns True when it went straight onto the ready stream."""
        keys = [
            redis_keys.due_key(shard),
            redis_keys.ready_stream(shard),
            redis_keys.inflight_key(shard),
            redis_keys.wake_key(shard),
        ]
        result = self._scripts["index"](keys=keys, args=[member.encode(), due_ms, now_ms])
        return int(cast(int, result)) == 1

    def unindex(self, member: Member, shard: int) -> bool:
        """Removes a member from the due ZSET (a cancelled job); True when it was there.

        One ZREM is atomic on its own, so this needs no script. A member already promoted stays in the
        ready stream: the executor's claim fails on the cancelled job and drops the entry.
        """
        return int(self._redis.zrem(redis_keys.due_key(shard), member.encode())) == 1

    def promote(self, shard: int, now_ms: int, batch: int = constants.PROMOTE_BATCH) -> PromoteResult:
        """Moves at most `batch` due members onto the ready stream."""
        keys = [redis_keys.due_key(shard), redis_keys.ready_stream(shard), redis_keys.inflight_key(shard)]
        moved, next_due = cast(list[int], self._scripts["promote"](keys=keys, args=[now_ms, batch]))
        return PromoteResult(int(moved), None if int(next_due) < 0 else int(next_due))

    def wait_for_wake(self, shards: Sequence[int], timeout_ms: int) -> bool:
        """Blocks until a submit signals an earlier due time or timeout_ms passes; True when signalled.

        Redis checks blocking timeouts on its ~100 ms cron, so callers needing precision wait coarsely here
        and finely with poll_wake.
        """
        keys = [redis_keys.wake_key(shard) for shard in shards]
        return self._redis.blpop(keys, timeout=max(timeout_ms, 1) / 1000) is not None

    def poll_wake(self, shards: Sequence[int]) -> bool:
        """Takes a wake token without blocking; True when one was there."""
        pipe = self._redis.pipeline(transaction=False)
        for shard in shards:
            pipe.lpop(redis_keys.wake_key(shard))
        return any(value is not None for value in pipe.execute())

    def read_ready(self, shards: Sequence[int], count: int, block_ms: int) -> list[StreamEntry]:
        """Reads up to `count` new deliveries for this consumer, blocking up to block_ms (0: not at all).

        Redis reads BLOCK 0 as "forever", so 0 here sends no BLOCK.
        """
        streams = {redis_keys.ready_stream(shard): ">" for shard in shards}
        shard_of = {redis_keys.ready_stream(shard): shard for shard in shards}
        try:
            reply = cast(
                list[Any] | None,
                self._redis.xreadgroup(
                    redis_keys.CONSUMER_GROUP,
                    self._consumer,
                    cast(Any, streams),
                    count=count,
                    block=block_ms if block_ms > 0 else None,
                ),
            )
        except redis.ResponseError as error:
            if "NOGROUP" not in str(error):
                raise
            # Redis lost the stream (flush, fail-over): recreate it; the reaper re-indexes the jobs.
            for shard in shards:
                self.ensure_group(shard)
            return []
        entries: list[StreamEntry] = []
        for stream_name, messages in reply or []:
            shard = shard_of[_text(stream_name)]
            for entry_id, fields in messages:
                entries.append(_entry(shard, _text(entry_id), fields))
        return entries

    def ack(self, entry: StreamEntry) -> bool:
        """Finishes a delivery after DynamoDB holds its outcome; False when it was already finished."""
        keys = [redis_keys.ready_stream(entry.shard), redis_keys.inflight_key(entry.shard)]
        args = [redis_keys.CONSUMER_GROUP, entry.entry_id, entry.member.encode()]
        return int(cast(int, self._scripts["ack"](keys=keys, args=args))) == 1

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
        return None if dead_id is None else _text(dead_id)

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
        redelivered, flat, next_cursor = cast(list[Any], self._scripts["redeliver"](keys=keys, args=args))
        exhausted = [
            StreamEntry(shard, _text(flat[i]), Member.decode(_text(flat[i + 1])), max_deliveries)
            for i in range(0, len(flat), 2)
        ]
        return RedeliverResult(int(redelivered), exhausted, _text(next_cursor))

    def admit_rate(self, key: str, now_ms: int, limit: int, period_ms: int, token: str) -> LimiterVerdict:
        """Asks the sliding-window limiter stored at `key` to admit one more event."""
        admitted, retry_at = cast(
            list[int], self._scripts["rate_limit"](keys=[key], args=[now_ms, limit, period_ms, token])
        )
        return LimiterVerdict(int(admitted) == 1, int(retry_at))

    def acquire_slot(
        self, key: str, now_ms: int, limit: int, token: str, lease_expires_ms: int
    ) -> LimiterVerdict:
        """Asks the semaphore stored at `key` for a slot held until lease_expires_ms or release."""
        admitted, retry_at = cast(
            list[int],
            self._scripts["concurrency_acquire"](keys=[key], args=[now_ms, limit, token, lease_expires_ms]),
        )
        return LimiterVerdict(int(admitted) == 1, int(retry_at))

    def release_slots(self, slots: Sequence[tuple[str, str]]) -> None:
        """Frees semaphore slots given as (key, token) pairs."""
        if not slots:
            return
        pipe = self._redis.pipeline(transaction=False)
        for key, token in slots:
            pipe.zrem(key, token)
        pipe.execute()

    def indexed_members(self, shard: int, members: Sequence[Member]) -> list[bool]:
        """Tells, for each member, whether the due or in-flight index holds it (one pipelined round trip)."""
        pipe = self._redis.pipeline(transaction=False)
        for member in members:
            pipe.zscore(redis_keys.due_key(shard), member.encode())
            pipe.zscore(redis_keys.inflight_key(shard), member.encode())
        scores = pipe.execute()
        return [scores[i] is not None or scores[i + 1] is not None for i in range(0, len(scores), 2)]

    def trim_dead(self, shard: int, max_len: int = constants.DEAD_STREAM_MAX_LEN) -> int:
        """Trims the dead stream to about max_len entries; returns how many were removed."""
        return int(self._redis.xtrim(redis_keys.dead_stream(shard), maxlen=max_len, approximate=True))

    def prune_consumers(self, shard: int, idle_ms: int) -> int:
        """Deletes consumers that hold nothing and were idle for idle_ms; returns how many.

        Every executor process reads as a consumer of its own, so the group gains one per Lambda cold start.
        A consumer with pending entries is kept: deleting it would drop them from the pending list.
        """
        stream = redis_keys.ready_stream(shard)
        removed = 0
        for consumer in self._redis.xinfo_consumers(stream, redis_keys.CONSUMER_GROUP):
            if int(consumer["pending"]) == 0 and int(consumer["idle"]) >= idle_ms:
                # The reply counts the entries it had pending (0 here), not whether it was deleted.
                self._redis.xgroup_delconsumer(stream, redis_keys.CONSUMER_GROUP, consumer["name"])
                removed += 1
        return removed

    def depth(self, shard: int) -> tuple[int, int]:
        """Returns (due members, in-flight members) of a shard, for the queue-depth metric."""
        pipe = self._redis.pipeline(transaction=False)
        pipe.zcard(redis_keys.due_key(shard))
        pipe.zcard(redis_keys.inflight_key(shard))
        due, inflight = pipe.execute()
        return int(due), int(inflight)

    def claim_cron(self, shard: int, now_ms: int, claim_until_ms: int, batch: int) -> CronClaimResult:
        """Claims at most `batch` due schedules until claim_until_ms (cron_claim.lua)."""
        keys = [redis_keys.cron_key(shard), redis_keys.cron_claims_key(shard)]
        reply = cast(list[Any], self._scripts["cron_claim"](keys=keys, args=[now_ms, claim_until_ms, batch]))
        claims = [
            CronClaim(ScheduleMember.decode(_text(reply[i])), int(_text(reply[i + 1])), claim_until_ms)
            for i in range(1, len(reply), 2)
        ]
        next_ms = int(float(_text(reply[0])))
        return CronClaimResult(claims, None if next_ms < 0 else next_ms)

    def advance_cron(self, shard: int, claim: CronClaim, next_fire_ms: int | None) -> bool:
        """Moves a claimed schedule to next_fire_ms (None removes it) while the claim holds (cron_advance)."""
        keys = [redis_keys.cron_key(shard), redis_keys.cron_claims_key(shard)]
        args: list[str | int] = [
            claim.member.encode(),
            claim.claim_until_ms,
            -1 if next_fire_ms is None else next_fire_ms,
        ]
        return int(cast(int, self._scripts["cron_advance"](keys=keys, args=args))) == 1

    def set_cron(
        self,
        shard: int,
        old: ScheduleMember | None,
        new: ScheduleMember | None,
        next_fire_ms: int | None,
        only_if_absent: bool = False,
    ) -> bool:
        """Replaces a schedule's old version with new at next_fire_ms (cron_set.lua); True if new was written.

        new=None (or next_fire_ms=None: nothing left to fire) only removes old.
        """
        keys = [redis_keys.cron_key(shard), redis_keys.cron_claims_key(shard), redis_keys.wake_key(shard)]
        add = new is not None and next_fire_ms is not None
        args: list[str | int] = [
            "" if old is None else old.encode(),
            new.encode() if add and new is not None else "",
            next_fire_ms if next_fire_ms is not None else -1,
            "1" if only_if_absent else "0",
        ]
        return int(cast(int, self._scripts["cron_set"](keys=keys, args=args))) == 1

    def cron_scores(self, shard: int, members: Sequence[ScheduleMember]) -> list[int | None]:
        """Returns each member's score in the cron ZSET (None when absent), in one pipelined round trip."""
        pipe = self._redis.pipeline(transaction=False)
        for member in members:
            pipe.zscore(redis_keys.cron_key(shard), member.encode())
        return [None if score is None else int(score) for score in pipe.execute()]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _entry(shard: int, entry_id: str, fields: dict[Any, Any]) -> StreamEntry:
    decoded = {_text(k): _text(v) for k, v in fields.items()}
    return StreamEntry(shard, entry_id, Member.decode(decoded["m"]), int(decoded.get("d", "0")))
