"""The queue store (hookline.ports.QueueStore) in memory.

Conditions as adapters/dynamo/queue_store.py: put without a version writes whatever is there, with one
SAME_VERSION (QueueNotFound when missing, Conflict on another version); delete ITEM_EXISTS (QueueNotFound).
"""

from __future__ import annotations

from hookline.domain.errors import Conflict, QueueNotFound
from hookline.domain.queues import Queue
from tests.fakes.faults import Faults, dynamo_down, port_call


class FakeQueueStore:
    """Queues by (tenant, name)."""

    def __init__(self) -> None:
        self.queues: dict[tuple[str, str], Queue] = {}
        self._faults = Faults(dynamo_down)

    @property
    def faults(self) -> Faults:
        """Returns the fault plan of this fake's calls (default error: DynamoUnavailable)."""
        return self._faults

    @port_call
    def put(self, queue: Queue, expected_version: int | None) -> None:
        """Writes a queue, over expected_version only when given."""
        key = (queue.tenant, queue.name)
        if expected_version is not None:
            current = self.queues.get(key)
            if current is None:
                raise QueueNotFound(f"queue {queue.name} not found")
            if current.version != expected_version:
                raise Conflict(f"queue {queue.name} is not at version {expected_version}; read it and retry")
        self.queues[key] = queue

    @port_call
    def get(self, tenant: str, name: str) -> Queue:
        """Returns the queue or raises QueueNotFound."""
        try:
            return self.queues[(tenant, name)]
        except KeyError:
            raise QueueNotFound(f"queue {name} not found") from None

    @port_call
    def list_all(self, tenant: str) -> list[Queue]:
        """Returns the tenant's queues by name."""
        return sorted((q for (t, _), q in self.queues.items() if t == tenant), key=lambda q: q.name)

    @port_call
    def delete(self, tenant: str, name: str) -> Queue:
        """Deletes and returns the queue; raises QueueNotFound."""
        try:
            return self.queues.pop((tenant, name))
        except KeyError:
            raise QueueNotFound(f"queue {name} not found") from None
