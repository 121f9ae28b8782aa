"""The due-time index: one ZSET of members by due time per shard, promoted onto the ready stream when due."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import cast

from redis.exceptions import NoScriptError

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.base import SHARDS_POLL_MS, RedisBase
from hookline.domain import constants
from hookline.domain.delivery import PromoteResult
from hookline.domain.models import Member

# index.lua's reply: bit 0 the member went onto the ready stream, bit 1 this call took the wake claim.
_PLACED_READY = 1


class RedisDueIndex(RedisBase):
    """Keeps the due ZSETs, the wake lists and the in-flight ZSETs' membership (hookline.ports.DueIndex).

    With wake_promoters_with() configured (RedisBase), every index call also asks index.lua whether the
    member needs a promoter none is running for (due within the policy's horizon, no heartbeat, the claim
    taken), and calls on_wake(shard) for each call that took the claim: one caller in a burst starts one.
    """

    def index(self, member: Member, shard: int, due_ms: int, now_ms: int, new_member: bool = False) -> bool:
        """Indexes a member for its due time; returns True when it went straight onto the ready stream.

        new_member: the member was never indexed (its job or generation was created a moment ago), so it
        cannot be in the due ZSET and a member due now needs no ZREM there (see index.lua).
        """
        keys, args = _index_call(member, shard, due_ms, now_ms, new_member, self._wake_call(shard))
        result = int(cast(int, self._scripts["index"](keys=keys, args=args)))
        self._woke(shard, result)
        return result & _PLACED_READY == _PLACED_READY

    def index_many(
        self, entries: Sequence[tuple[Member, int, int]], now_ms: int, new_member: bool = False
    ) -> None:
        """Indexes (member, shard, due_ms) entries as index() does each: on one node in one pipelined round
        trip, on a cluster one call each (its client refuses scripts inside a pipeline).

        The pipeline sends EVALSHA alone (redis-py's own script pipelining asks SCRIPT EXISTS first, a
        second round trip every time); an entry that met NOSCRIPT (a restarted or flushed node) did not run
        and is indexed again through the script, which loads it. Any other failure raises after the
        pipeline, the entries before and after it possibly applied: the caller notes them all for the
        reaper, whose indexing of a member already there changes nothing.
        """
        script = self._scripts["index"]
        if self._cluster:
            for member, shard, due_ms in entries:
                self.index(member, shard, due_ms, now_ms, new_member)
            return
        pipe = self._redis.pipeline(transaction=False)
        for member, shard, due_ms in entries:
            keys, args = _index_call(member, shard, due_ms, now_ms, new_member, self._wake_call(shard))
            pipe.evalsha(script.sha, len(keys), *keys, *args)
        results = pipe.execute(raise_on_error=False)
        errors = [r for r in results if isinstance(r, Exception) and not isinstance(r, NoScriptError)]
        if errors:
            raise errors[0]
        for entry, result in zip(entries, results, strict=True):
            if isinstance(result, NoScriptError):
                self.index(*entry, now_ms, new_member)
            else:
                self._woke(entry[1], int(result))

    def unindex(self, member: Member, shard: int) -> bool:
        """Removes a member from the due ZSET (a cancelled job); True when it was there.

        One ZREM is atomic on its own, so this needs no script. A member already promoted stays in the
        ready stream: the executor's claim fails on the cancelled job and drops the entry.
        """
        return int(self._redis.zrem(redis_keys.due_key(shard), member.encode())) == 1

    def promote(
        self, shard: int, now_ms: int, batch: int = constants.PROMOTE_BATCH, alive_ms: int = 0
    ) -> PromoteResult:
        """Moves at most `batch` due members onto the ready stream; with alive_ms > 0 also sets the shard's
        promoter heartbeat for that long (a promoter's visit; the backstop passes 0)."""
        keys = [
            redis_keys.due_key(shard),
            redis_keys.ready_stream(shard),
            redis_keys.inflight_key(shard),
            redis_keys.promoter_alive_key(shard),
        ]
        moved, next_due = cast(list[int], self._scripts["promote"](keys=keys, args=[now_ms, batch, alive_ms]))
        return PromoteResult(int(moved), None if int(next_due) < 0 else int(next_due))

    def stand_down(self, shards: Sequence[int]) -> None:
        """Deletes the shards' promoter heartbeats and wake claims, and the deployment-wide claim (a promoter
        ending idle): from here on the next index call of a member due soon wakes a promoter, even within
        the claim time of the wake that started this one. One DEL per key (shards differ in slot), pipelined.
        """
        pipe = self._redis.pipeline(transaction=False)
        for shard in shards:
            # One key a DEL: the cluster client's pipeline refuses a DEL of several keys.
            pipe.delete(redis_keys.promoter_alive_key(shard))
            pipe.delete(redis_keys.wake_claim_key(shard))
        pipe.delete(redis_keys.global_wake_claim_key())
        pipe.execute()

    def earliest_due(self, shards: Sequence[int]) -> int | None:
        """Returns the earliest due member's or schedule's time (a claimed schedule: its claim's expiry) over
        the shards' due and cron ZSETs; None when they hold nothing. One pipelined round trip."""
        pipe = self._redis.pipeline(transaction=False)
        for shard in shards:
            pipe.zrange(redis_keys.due_key(shard), 0, 0, withscores=True)
            pipe.zrange(redis_keys.cron_key(shard), 0, 0, withscores=True)
        scores = [int(score) for first in pipe.execute() for _, score in first]
        return min(scores) if scores else None

    def in_flight(self, shards: Sequence[int]) -> int:
        """Returns the members in the shards' ready streams, read or not (their in-flight ZSETs' sizes)."""
        pipe = self._redis.pipeline(transaction=False)
        for shard in shards:
            pipe.zcard(redis_keys.inflight_key(shard))
        return sum(int(count) for count in pipe.execute())

    def wait_for_wake(self, shards: Sequence[int], timeout_ms: int) -> bool:
        """Blocks until a submit signals an earlier due time or timeout_ms passes; True when signalled.

        One shard: a BLPOP on its wake list. Redis checks blocking timeouts on its ~100 ms cron, so callers
        needing precision wait coarsely here and finely with poll_wake. Several shards: their wake lists
        live in different slots (different nodes of a cluster), so no one command can block on all of
        them; they are polled in turn (the first token found is taken) every SHARDS_POLL_MS until timeout_ms.
        The promoter never does that: it waits on each shard from a thread of its own.
        """
        if len(shards) == 1:
            key = redis_keys.wake_key(shards[0])
            return self._redis.blpop([key], timeout=max(timeout_ms, 1) / 1000) is not None
        give_up_at = time.monotonic() + max(timeout_ms, 0) / 1000
        while True:
            if any(self._redis.lpop(redis_keys.wake_key(shard)) is not None for shard in shards):
                return True
            left_s = give_up_at - time.monotonic()
            if left_s <= 0:
                return False
            time.sleep(min(left_s, SHARDS_POLL_MS / 1000))

    def poll_wake(self, shards: Sequence[int]) -> bool:
        """Takes every shard's wake token without blocking (an LPOP each, pipelined); True if one was."""
        pipe = self._redis.pipeline(transaction=False)
        for shard in shards:
            pipe.lpop(redis_keys.wake_key(shard))
        return any(value is not None for value in pipe.execute())

    def indexed_members(
        self, shard: int, members: Sequence[Member], stale_before_ms: int | None = None
    ) -> list[bool]:
        """Tells, for each member, whether the due, in-flight or parked index holds it (one pipelined round
        trip; a member of no named queue cannot be parked, and is not looked for there).

        An in-flight member that entered the ready stream before stale_before_ms does not count: no
        delivery lasts that long, so its entry was lost (a partial loss, a consumer deleted with it).
        """
        pipe = self._redis.pipeline(transaction=False)
        for member in members:
            pipe.zscore(redis_keys.due_key(shard), member.encode())
            pipe.zscore(redis_keys.inflight_key(shard), member.encode())
            queue = member.flow.queue
            if queue is not None:
                pipe.zscore(redis_keys.parked_key(shard, member.tenant, queue), member.encode())
        scores = iter(pipe.execute())
        floor = float("-inf") if stale_before_ms is None else stale_before_ms
        held = []
        for member in members:
            due, inflight = next(scores), next(scores)
            parked = next(scores) if member.flow.queue is not None else None
            held.append(due is not None or parked is not None or (inflight is not None and inflight >= floor))
        return held

    def depth(self, shard: int) -> tuple[int, int]:
        """Returns (due members, in-flight members) of a shard, for the queue-depth metric."""
        pipe = self._redis.pipeline(transaction=False)
        pipe.zcard(redis_keys.due_key(shard))
        pipe.zcard(redis_keys.inflight_key(shard))
        due, inflight = pipe.execute()
        return int(due), int(inflight)


def _index_call(
    member: Member,
    shard: int,
    due_ms: int,
    now_ms: int,
    new_member: bool,
    wake: tuple[list[str], list[str | int]] = ([], []),
) -> tuple[list[str], list[str | int]]:
    """Returns the keys and arguments of index.lua for one member (with wake: the wake claim's, appended)."""
    keys = [
        redis_keys.due_key(shard),
        redis_keys.ready_stream(shard),
        redis_keys.inflight_key(shard),
        redis_keys.wake_key(shard),
    ]
    args: list[str | int] = [member.encode(), due_ms, now_ms, int(new_member)]
    return keys + wake[0], args + wake[1]
