"""The live indexes of one Redis in all four roles, for the composition root and the Lua table tests.

The use cases see only the role they need (hookline.ports DueIndex, ReadyStream, Limiters, QueueGate,
CronIndex, RebuildMarkStore, ExecutorLedger);
each role's code lives in its own module beside this one, all sharing one client and its scripts.
"""

from __future__ import annotations

from hookline.adapters.redis.cron import RedisCronIndex
from hookline.adapters.redis.due import RedisDueIndex
from hookline.adapters.redis.fanout import RedisExecutorLedger
from hookline.adapters.redis.limiters import RedisLimiters
from hookline.adapters.redis.queues import RedisQueues
from hookline.adapters.redis.rebuild import RedisRebuildMarks
from hookline.adapters.redis.stream import RedisReadyStream


class RedisIndex(
    RedisDueIndex,
    RedisReadyStream,
    RedisLimiters,
    RedisQueues,
    RedisCronIndex,
    RedisRebuildMarks,
    RedisExecutorLedger,
):
    """Plays every Redis role over one client (the roles share nothing but the client and the scripts)."""
