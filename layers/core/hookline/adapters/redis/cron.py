"""The cron index: one ZSET of schedule versions by next fire time per shard, with claims by promoters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.base import RedisBase, text
from hookline.domain.cron.schedule import ScheduleMember
from hookline.domain.delivery import CronClaim, CronClaimResult


class RedisCronIndex(RedisBase):
    """Claims, advances and sets schedules in the cron ZSETs (hookline.ports.CronIndex)."""

    def claim_cron(self, shard: int, now_ms: int, claim_until_ms: int, batch: int) -> CronClaimResult:
        """Claims at most `batch` due schedules until claim_until_ms (cron_claim.lua)."""
        keys = [redis_keys.cron_key(shard), redis_keys.cron_claims_key(shard)]
        reply = cast(list[Any], self._scripts["cron_claim"](keys=keys, args=[now_ms, claim_until_ms, batch]))
        claims = [
            CronClaim(ScheduleMember.decode(text(reply[i])), int(text(reply[i + 1])), claim_until_ms)
            for i in range(1, len(reply), 2)
        ]
        next_ms = int(float(text(reply[0])))
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
        wake_keys, wake_args = self._wake_call(shard)
        if wake_keys:
            # Idle mode: a schedule firing within the horizon while no promoter runs wakes one.
            keys += wake_keys
            args += [self._clock.now_ms(), *wake_args]
        result = int(cast(int, self._scripts["cron_set"](keys=keys, args=args)))
        self._woke(shard, result)
        return result & 1 == 1

    def cron_scores(self, shard: int, members: Sequence[ScheduleMember]) -> list[int | None]:
        """Returns each member's score in the cron ZSET (None when absent), in one pipelined round trip."""
        pipe = self._redis.pipeline(transaction=False)
        for member in members:
            pipe.zscore(redis_keys.cron_key(shard), member.encode())
        return [None if score is None else int(score) for score in pipe.execute()]
