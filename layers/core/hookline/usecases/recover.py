"""Recovery inside every executor: re-deliver the entries of executors that are gone, every few seconds.

As in asynq, where every worker runs the recoverer, no executor waits for the once-a-minute reaper to pick up
a crashed executor's work. It is safe to run anywhere and often: a live executor's entries are never idle
(usecases/heartbeat.py), and a re-delivered job whose lease is still held is not claimed before it expires.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from hookline.domain.delivery import StreamEntry
from hookline.domain.errors import StaleState
from hookline.ports import Clock, JobStore, MetricsSink, ReadyStream

logger = logging.getLogger(__name__)

# Batches of one recovery pass per shard; what is left waits for the next pass (bounded work per tick).
MAX_BATCHES_PER_PASS = 10


class Recoverer:
    """Re-delivers idle pending entries and dead-letters those that ran out of deliveries."""

    def __init__(
        self,
        store: JobStore,
        stream: ReadyStream,
        clock: Clock,
        shards: Sequence[int],
        metrics: MetricsSink,
        redeliver_after_ms: int,
        max_deliveries: int,
    ) -> None:
        self._store = store
        self._stream = stream
        self._clock = clock
        self._shards = list(shards)
        self._metrics = metrics
        self._redeliver_after_ms = redeliver_after_ms
        self._max_deliveries = max_deliveries

    def recover(self) -> int:
        """Runs one pass over every shard; returns how many entries were re-delivered."""
        redelivered = 0
        for shard in self._shards:
            cursor = "0-0"
            for _ in range(MAX_BATCHES_PER_PASS):
                result = self._stream.redeliver(
                    shard, self._redeliver_after_ms, self._clock.now_ms(), self._max_deliveries, cursor
                )
                redelivered += result.redelivered
                for entry in result.exhausted:
                    self._dead_letter(entry)
                if result.scan_finished:
                    break
                cursor = result.next_cursor
        if redelivered:
            self._metrics.count("Redelivered", redelivered)
        return redelivered

    def _dead_letter(self, entry: StreamEntry) -> None:
        """Ends a delivery that kept being abandoned (a poison message must not loop forever)."""
        now_ms = self._clock.now_ms()
        try:
            self._store.mark_dead(entry.member, "deliveries_exhausted", now_ms)
        except StaleState:
            self._stream.ack(entry)  # the job moved on (finished, retried, cancelled): nothing to kill
            return
        self._stream.dead_letter(entry, "deliveries_exhausted", now_ms)
        self._metrics.count("DeadLettered")
