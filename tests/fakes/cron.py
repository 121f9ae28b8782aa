"""The cron index (hookline.ports.CronIndex) over RedisMemory: lua/cron_claim, cron_advance and cron_set."""

from __future__ import annotations

from collections.abc import Sequence

from hookline.adapters.redis import keys as redis_keys
from hookline.domain.cron.schedule import ScheduleMember
from hookline.domain.delivery import CronClaim, CronClaimResult
from tests.fakes.faults import port_call
from tests.fakes.redis_role import FakeRedisRole


class FakeCronIndex(FakeRedisRole):
    """Cron ZSETs (member -> next fire, or claim expiry while claimed) and their claims hashes."""

    @port_call
    def claim_cron(self, shard: int, now_ms: int, claim_until_ms: int, batch: int) -> CronClaimResult:
        """cron_claim.lua: claims up to batch due members; a re-claim keeps the occurrence first claimed."""
        cron, claims_key = redis_keys.cron_key(shard), redis_keys.cron_claims_key(shard)
        m = self.memory
        with m.lock:
            claims = []
            for member, score in m.zrangebyscore(cron, now_ms, batch):
                fire = m.hget(claims_key, member)
                if fire is None:
                    fire = str(int(score))
                    m.hset(claims_key, member, fire)
                m.zadd(cron, claim_until_ms, member, xx=True)
                claims.append(CronClaim(ScheduleMember.decode(member), int(fire), claim_until_ms))
            lowest = m.zfirst(cron)
            return CronClaimResult(claims, None if lowest is None else int(lowest[1]))

    @port_call
    def advance_cron(self, shard: int, claim: CronClaim, next_fire_ms: int | None) -> bool:
        """cron_advance.lua: while the score is still this claim's expiry, moves it on (None removes it)."""
        cron, member = redis_keys.cron_key(shard), claim.member.encode()
        m = self.memory
        with m.lock:
            score = m.zscore(cron, member)
            if score is None or score != claim.claim_until_ms:
                return False
            m.hdel(redis_keys.cron_claims_key(shard), member)
            if next_fire_ms is None:
                m.zrem(cron, member)
            else:
                m.zadd(cron, next_fire_ms, member)
            return True

    @port_call
    def set_cron(
        self,
        shard: int,
        old: ScheduleMember | None,
        new: ScheduleMember | None,
        next_fire_ms: int | None,
        only_if_absent: bool = False,
    ) -> bool:
        """cron_set.lua: removes old (and its claim), writes new at next_fire_ms, wakes if it is earliest."""
        cron, claims = redis_keys.cron_key(shard), redis_keys.cron_claims_key(shard)
        old_text = "" if old is None else old.encode()
        new_text = new.encode() if new is not None and next_fire_ms is not None else ""
        m = self.memory
        with m.lock:
            if old_text and old_text != new_text:
                m.zrem(cron, old_text)
                m.hdel(claims, old_text)
            if not new_text or next_fire_ms is None:
                return False
            if only_if_absent and m.zscore(cron, new_text) is not None:
                return False
            earliest = m.zfirst(cron)
            m.hdel(claims, new_text)
            m.zadd(cron, next_fire_ms, new_text)
            wake = redis_keys.wake_key(shard)
            if (earliest is None or next_fire_ms < earliest[1]) and m.llen(wake) == 0:
                m.rpush(wake, "1")
            return True

    @port_call
    def cron_scores(self, shard: int, members: Sequence[ScheduleMember]) -> list[int | None]:
        """Returns each member's score (None when absent)."""
        with self.memory.lock:
            scores = [self.memory.zscore(redis_keys.cron_key(shard), member.encode()) for member in members]
        return [None if score is None else int(score) for score in scores]
