"""Limiters (hookline.ports.Limiters) over RedisMemory: lua/rate_limit.lua, concurrency_acquire.lua and
concurrency_release.lua line for line, under the adapter's key names and arguments.

Both limiters queue the waiters they refuse (a delivery's job:generation) and tell each when its turn comes;
a semaphore learns its typical hold time from releases (timed on this role's clock, as the adapter does).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from hookline.adapters.redis import keys as redis_keys
from hookline.adapters.redis.limiters import DEFAULT_HOLD_MS, HOLD_KEEP_MS, WAITER_FORGET_MS, WAITER_LATE_MS
from hookline.domain.delivery import LimiterVerdict, Slot
from tests.fakes.faults import port_call
from tests.fakes.redis_memory import RedisMemory
from tests.fakes.redis_role import FakeRedisRole

# The most expired holders concurrency_acquire.lua drops per call (its ZRANGEBYSCORE ... LIMIT 0 1000).
EXPIRED_BATCH = 1_000
# The most waiters of each kind (forgotten, late, headless) one call sweeps (waiter_queue.lua's
# WAITERS_SWEEP_BATCH).
SWEEP_BATCH = 100


def _keep_until(m: RedisMemory, key: str, ttl_ms: float) -> None:
    """PEXPIRE key ttl unless it lives longer already (PTTL -1 and -2 are less than any ttl)."""
    if m.pttl(key) < ttl_ms:
        m.pexpire(key, int(ttl_ms))


def _queue_place(
    m: RedisMemory, queue: str, told: str, waiter: str, now_ms: int
) -> tuple[float | None, int, bool]:
    """lua/shared/waiter_queue.lua's waiters_place: forgets waiters told long ago (from both keys), takes late
    ones out of the queue, drops queue heads with no told turn; returns (ticket, ahead, told)."""
    forgotten = [
        name for name, _ in m.zrangebyscore(told, now_ms - WAITER_FORGET_MS, SWEEP_BATCH, exclusive=True)
    ]
    if forgotten:
        m.zrem(told, *forgotten)
        m.zrem(queue, *forgotten)
    late = [name for name, _ in m.zrangebyscore(told, now_ms - WAITER_LATE_MS, SWEEP_BATCH, exclusive=True)]
    if late:
        m.zrem(queue, *late)
    for _ in range(SWEEP_BATCH):
        head = m.zfirst(queue)
        if head is None or head[0] == waiter or m.zscore(told, head[0]) is not None:
            break
        m.zrem(queue, head[0])
    ticket = m.zscore(queue, waiter)
    was_told = m.zscore(told, waiter) is not None
    ahead = 0  # a late waiter that came after all goes first
    if ticket is not None:
        ahead = m.zcount(queue, ticket, exclusive=True)
    elif not was_told:
        ahead = m.zcard(queue)  # a newcomer queues behind everyone
    return ticket, ahead, was_told


def _take_ticket(m: RedisMemory, queue: str, waiter: str, was_told: bool) -> None:
    """A newcomer takes the last place; a late waiter that came back takes the first."""
    edge = m.zrange_at(queue, 0 if was_told else -1)
    ticket = (0.0 if edge is None else edge[1]) + (-1 if was_told else 1)
    m.zadd(queue, ticket, waiter)


class FakeLimiters(FakeRedisRole):
    """Sliding-window logs and lease-expiring semaphores, each with a queue of refused waiters."""

    @port_call
    def admit_rate(
        self, tenant: str, name: str, now_ms: int, limit: int, period_ms: int, token: str, waiter: str = ""
    ) -> LimiterVerdict:
        """rate_limit.lua on the tenant's window called name; a refused waiter is queued."""
        keys = (
            redis_keys.rate_key(tenant, name),
            redis_keys.rate_queue_key(tenant, name),
            redis_keys.rate_told_key(tenant, name),
        )
        return self._window(keys, now_ms, limit, period_ms, token, waiter)

    @port_call
    def admit_api_call(
        self, key_id: str, now_ms: int, limit: int, period_ms: int, token: str
    ) -> LimiterVerdict:
        """rate_limit.lua on the API key's window (requests are not queued)."""
        queue, told = redis_keys.api_queue_keys(key_id)
        return self._window(
            (redis_keys.api_rate_key(key_id), queue, told), now_ms, limit, period_ms, token, ""
        )

    def _window(
        self, keys: tuple[str, str, str], now_ms: int, limit: int, period_ms: int, token: str, waiter: str
    ) -> LimiterVerdict:
        """rate_limit.lua: admits while the waiters ahead leave a place in (now - period, now]."""
        log, queue, told = keys
        m = self.memory
        with m.lock:
            m.zremrangebyscore(log, now_ms - period_ms)
            used = m.zcard(log)
            free = max(limit - used, 0)
            ticket, ahead, was_told = None, 0, False
            if waiter:
                ticket, ahead, was_told = _queue_place(m, queue, told, waiter, now_ms)
            if ahead < free:
                m.zadd(log, now_ms, token)
                m.pexpire(log, period_ms)
                if waiter:
                    m.zrem(queue, waiter)
                    m.zrem(told, waiter)
                return LimiterVerdict(True, 0)
            if not waiter:
                oldest = m.zfirst(log)
                assert oldest is not None
                return LimiterVerdict(False, int(oldest[1]) + period_ms)
            if ticket is None:
                _take_ticket(m, queue, waiter, was_told)
            # Slots come free: `free` now, then one as each admission leaves the window (the first
            # `used - limit` of them free nothing when the limit was lowered), every slot a period later.
            rounds, place = divmod(ahead, limit)
            base = now_ms
            if place >= free:
                at = m.zrange_at(log, place - free + max(used - limit, 0))
                assert at is not None
                base = int(at[1]) + period_ms
            retry_at = base + rounds * period_ms
            m.zadd(told, retry_at, waiter)
            for key in (queue, told):
                _keep_until(m, key, retry_at - now_ms + WAITER_FORGET_MS)
            return LimiterVerdict(False, retry_at)

    @port_call
    def acquire_slot(self, slot: Slot, now_ms: int, limit: int, lease_expires_ms: int) -> LimiterVerdict:
        """concurrency_acquire.lua: admits while fewer than limit hold a lease; a holder asking again only
        extends its lease (already_held); a refused token is queued and told when its turn is expected."""
        holders, started, queue, told, hold = (
            redis_keys.concurrency_key(slot.tenant, slot.name),
            redis_keys.concurrency_started_key(slot.tenant, slot.name),
            redis_keys.concurrency_queue_key(slot.tenant, slot.name),
            redis_keys.concurrency_told_key(slot.tenant, slot.name),
            redis_keys.concurrency_hold_key(slot.tenant, slot.name),
        )
        token = slot.token
        m = self.memory
        with m.lock:
            expired = [name for name, _ in m.zrangebyscore(holders, now_ms, EXPIRED_BATCH)]
            if expired:
                m.zrem(holders, *expired)
                m.zrem(started, *expired)
            if m.zscore(holders, token) is not None:
                m.zadd(holders, lease_expires_ms, token)
                _keep_until(m, holders, lease_expires_ms - now_ms)
                _keep_until(m, started, lease_expires_ms - now_ms)
                return LimiterVerdict(True, 0, already_held=True)
            ticket, ahead, was_told = _queue_place(m, queue, told, token, now_ms)
            used = m.zcard(holders)
            free = max(limit - used, 0)
            if ahead < free:
                m.zadd(holders, lease_expires_ms, token)
                m.zadd(started, now_ms, token)
                m.zrem(queue, token)
                m.zrem(told, token)
                _keep_until(m, holders, lease_expires_ms - now_ms)
                _keep_until(m, started, lease_expires_ms - now_ms)
                return LimiterVerdict(True, 0)
            if ticket is None:
                _take_ticket(m, queue, token, was_told)
            retry_at = self._turn(holders, started, hold, now_ms, limit, ahead, used, free)
            m.zadd(told, retry_at, token)
            _keep_until(m, queue, retry_at - now_ms + WAITER_FORGET_MS)
            _keep_until(m, told, retry_at - now_ms + WAITER_FORGET_MS)
            return LimiterVerdict(False, retry_at)

    def _turn(
        self, holders: str, started: str, hold: str, now_ms: int, limit: int, ahead: int, used: int, free: int
    ) -> int:
        """When a refused waiter's turn is expected: the (ahead mod limit)-th holder's expected end (its
        start plus the typical hold; an overrunning one as long again as it overran, at least a quarter
        hold; never after its lease), plus a typical hold per `limit` places ahead."""
        m = self.memory
        typical = m.get(hold)
        hold_ms = DEFAULT_HOLD_MS if typical is None else int(float(typical))
        rounds, place = divmod(ahead, limit)
        base = now_ms
        if place >= free:
            i = place - free + max(used - limit, 0)
            first = m.zrange_at(started, i)
            holder: str | None = None if first is None else first[0]
            started_ms = None if first is None else int(first[1])
            if started_ms is None:
                # A holder with no start time (taken before the script kept them): the i-th earliest lease.
                by_lease = m.zrange_at(holders, i)
                holder, started_ms = (None if by_lease is None else by_lease[0]), now_ms
            base = started_ms + hold_ms
            if base <= now_ms:
                base = now_ms + max(math.floor(hold_ms / 4), now_ms - started_ms - hold_ms, 1)
            lease = None if holder is None else m.zscore(holders, holder)
            if lease is not None:
                base = min(base, int(lease))
        return max(base, now_ms + 1) + rounds * hold_ms

    @port_call
    def release_slots(self, slots: Sequence[Slot]) -> None:
        """concurrency_release.lua per slot (a slot not held is ignored): frees it and folds how long it
        was held into the key's typical hold time (a quarter weight), timed on this role's clock."""
        if not slots:
            return
        now_ms = self.clock.now_ms()
        m = self.memory
        with m.lock:
            for slot in slots:
                holders = redis_keys.concurrency_key(slot.tenant, slot.name)
                started = redis_keys.concurrency_started_key(slot.tenant, slot.name)
                hold = redis_keys.concurrency_hold_key(slot.tenant, slot.name)
                started_ms = m.zscore(started, slot.token)
                m.zrem(started, slot.token)
                if m.zrem(holders, slot.token) == 0 or started_ms is None:
                    continue
                held_ms = max(now_ms - started_ms, 0)
                typical = m.get(hold)
                if typical is not None:
                    held_ms = math.floor(float(typical) * 0.75 + held_ms * 0.25 + 0.5)
                m.set(hold, lua_integer(held_ms), px=HOLD_KEEP_MS)


def lua_integer(number: float) -> str:
    """Returns an integral Lua number as a script writes it ("%.14g")."""
    return f"{number:.14g}"
