"""What every Redis role fake shares: the memory, this process's consumer name, a fault plan, decoding."""

from __future__ import annotations

from hookline.domain.delivery import StreamEntry
from hookline.domain.models import Member
from tests.fakes.faults import Faults, redis_down
from tests.fakes.redis_memory import RedisMemory


class FakeRedisRole:
    """Holds the shared memory (one Redis), the consumer name and the calls' fault plan."""

    def __init__(self, memory: RedisMemory, consumer: str = "executor") -> None:
        self.memory = memory
        self.consumer = consumer
        self._faults = Faults(redis_down)

    @property
    def faults(self) -> Faults:
        """Returns the fault plan of this fake's calls (default error: ConnectionError)."""
        return self._faults


def decode_entry(shard: int, entry_id: str, fields: dict[str, str]) -> StreamEntry:
    """Turns a stream entry into a StreamEntry exactly as the adapter does (same errors when malformed)."""
    return StreamEntry(shard, entry_id, Member.decode(fields["m"]), int(fields.get("d", "0")))
