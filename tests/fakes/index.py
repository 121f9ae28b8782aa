"""All four Redis roles over one RedisMemory, as adapters/redis/index.py RedisIndex plays them."""

from __future__ import annotations

from tests.fakes.cron import FakeCronIndex
from tests.fakes.due import FakeDueIndex
from tests.fakes.limiters import FakeLimiters
from tests.fakes.stream import FakeReadyStream


class FakeIndex(FakeDueIndex, FakeReadyStream, FakeLimiters, FakeCronIndex):
    """Plays every Redis role for one consumer; several share a RedisMemory as processes share a Redis."""
