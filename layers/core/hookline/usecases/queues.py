"""Does named queue management (create, replace, read, delete, pause, resume); heals Redis from the records.

DynamoDB is written first (the record, conditional on the version read), Redis second (the live settings,
then the parked deliveries of a resumed queue). If the Redis step fails, nothing is lost: the settings
expire and are re-read from the record at the next delivery, and the reaper's heal() releases the parked
deliveries of every queue its record says is running (or that no longer exists).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from hookline.domain.errors import Conflict, QueueNotFound
from hookline.domain.queues import Queue, QueueFigures, QueueRequest
from hookline.ports import Clock, MetricsSink, QueueGate, QueueStore

logger = logging.getLogger(__name__)

# The most parked deliveries one unpark.lua call moves; the caller loops (a resume moves them all).
UNPARK_BATCH = 500
# How often a pause or resume re-reads and re-writes a queue another writer changed meanwhile.
STATE_WRITE_TRIES = 3


@dataclass(frozen=True)
class QueueState:
    """A queue with its live figures."""

    queue: Queue
    figures: QueueFigures


class QueueManager:
    """Keeps named queues in DynamoDB and their live settings and parked deliveries in Redis."""

    def __init__(
        self, store: QueueStore, gate: QueueGate, clock: Clock, shards: int, metrics: MetricsSink
    ) -> None:
        self._store = store
        self._gate = gate
        self._clock = clock
        self._shards = shards
        self._metrics = metrics

    def put(self, tenant: str, name: str, request: QueueRequest) -> tuple[Queue, bool]:
        """Creates or replaces a queue; returns it and whether it was created.

        With request.version, only a queue still at that version is replaced (Conflict otherwise, NotFound
        when there is none). A replace keeps the queue's pause and creation time and bumps its version.
        """
        now_ms = self._clock.now_ms()
        fresh = Queue.from_request(tenant, name, request, now_ms)
        try:
            current = self._store.get(tenant, name)
        except QueueNotFound:
            if request.version is not None:
                raise
            self._store.put(fresh, None)
            self._gate.write_settings(fresh)
            return fresh, True
        if request.version is not None and request.version != current.version:
            raise Conflict(f"queue {name} is at version {current.version}, not {request.version}")
        queue = replace(
            fresh,
            version=current.version + 1,
            created_ms=current.created_ms,
            paused_since_ms=current.paused_since_ms,
        )
        self._store.put(queue, current.version)
        self._gate.write_settings(queue)
        return queue, False

    def get(self, tenant: str, name: str) -> QueueState:
        """Returns a queue with its live figures; raises QueueNotFound."""
        queue = self._store.get(tenant, name)
        return QueueState(queue, self._gate.figures(queue, self._shards, self._clock.now_ms()))

    def list_all(self, tenant: str) -> list[Queue]:
        """Returns the tenant's queues."""
        return self._store.list_all(tenant)

    def delete(self, tenant: str, name: str) -> Queue:
        """Deletes a queue; its waiting jobs then pass with no queue limit (their parked deliveries are
        released now). Raises QueueNotFound."""
        queue = self._store.delete(tenant, name)
        self._gate.forget_settings(tenant, name)
        self._release(tenant, name)
        return queue

    def pause(self, tenant: str, name: str) -> Queue:
        """Pauses a queue: no delivery of it starts (each is parked, no attempt spent) until resumed."""
        return self._set_paused(tenant, name, paused=True)

    def resume(self, tenant: str, name: str) -> Queue:
        """Resumes a queue and releases its parked deliveries onto the ready streams at once."""
        queue = self._set_paused(tenant, name, paused=False)
        self._release(tenant, name)
        return queue

    def heal(self, shard: int) -> int:
        """Re-syncs the shard's queues with parked deliveries from their records; returns how many released.

        The cure for a lost resume: a queue whose record says running (or that was deleted) has its
        settings written and its parked deliveries released; a paused one has its settings written.
        """
        released = 0
        for tenant, name in self._gate.parked_queues(shard):
            try:
                queue = self._store.get(tenant, name)
            except QueueNotFound:
                self._gate.forget_settings(tenant, name)
                released += self._release_shard(shard, tenant, name)
                continue
            self._gate.write_settings(queue)
            if not queue.paused:
                released += self._release_shard(shard, tenant, name)
        if released:
            self._metrics.count("QueueUnparkedByReaper", released)
        return released

    def _set_paused(self, tenant: str, name: str, paused: bool) -> Queue:
        for _ in range(STATE_WRITE_TRIES):
            current = self._store.get(tenant, name)
            if current.paused == paused:
                self._gate.write_settings(current)
                return current
            now_ms = self._clock.now_ms()
            queue = replace(
                current,
                paused_since_ms=now_ms if paused else 0,
                version=current.version + 1,
                updated_ms=now_ms,
            )
            try:
                self._store.put(queue, current.version)
            except Conflict:
                continue  # changed meanwhile: read it again
            self._gate.write_settings(queue)
            return queue
        raise Conflict(f"queue {name} keeps changing; try again")

    def _release(self, tenant: str, name: str) -> None:
        released = sum(self._release_shard(shard, tenant, name) for shard in range(self._shards))
        if released:
            self._metrics.count("QueueUnparked", released)

    def _release_shard(self, shard: int, tenant: str, name: str) -> int:
        released, left = 0, 1
        while left:
            moved, left = self._gate.unpark(shard, tenant, name, self._clock.now_ms(), UNPARK_BATCH)
            released += moved
            if moved == 0:
                break
        return released
