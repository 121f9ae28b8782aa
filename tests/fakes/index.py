"""Every Redis role over one RedisMemory, as adapters/redis/index.py RedisIndex plays them."""

from __future__ import annotations

from tests.fakes.cron import FakeCronIndex
from tests.fakes.due import FakeDueIndex
from tests.fakes.fanout import FakeExecutorLedger
from tests.fakes.limiters import FakeLimiters
from tests.fakes.queues import FakeQueues
from tests.fakes.rebuild import FakeRebuildMarks
from tests.fakes.stream import FakeReadyStream


class FakeIndex(
    FakeDueIndex,
    FakeReadyStream,
    FakeQueues,
    FakeLimiters,
    FakeCronIndex,
    FakeRebuildMarks,
    FakeExecutorLedger,
):
    """Plays every Redis role for one consumer; several share a RedisMemory as processes share a Redis."""
