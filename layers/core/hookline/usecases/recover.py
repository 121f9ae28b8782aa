"""Recovery of abandoned deliveries: re-deliver the entries of executors that are gone.

As in asynq, where every worker runs the recoverer, every executor runs a bounded pass every few seconds, so
no crashed executor's work waits for the once-a-minute reaper; the reaper runs the same recovery, unbounded,
over each shard. It is safe to run anywhere and often: a live executor's entries are never idle
(usecases/heartbeat.py), and a re-delivered job whose lease is still held is not claimed before it expires.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from hookline.domain.delivery import StreamEntry
from hookline.domain.errors import StaleState
from hookline.domain.stats import Outcome
from hookline.ports import Clock, JobStore, MetricsSink, NullStats, ReadyStream, StatsRecorder

logger = logging.getLogger(__name__)

# Batches of one executor's recovery pass per shard; what is left waits for the next pass (bounded work).
MAX_BATCHES_PER_PASS = 10
# The dead reason of a job whose deliveries kept being abandoned.
DELIVERIES_EXHAUSTED = "deliveries_exhausted"
# Where a scan of a shard's pending entries starts (and what the stream answers once it went round).
SCAN_START = "0-0"


@dataclass
class Recovered:
    """What recovery did."""

    redelivered: int = 0
    dead_lettered: int = 0
    malformed: int = 0  # entries holding no readable delivery, dead-lettered by the stream itself


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
        stats: StatsRecorder | None = None,
        readd_grace_ms: int = 0,
    ) -> None:
        self._store = store
        self._stream = stream
        self._clock = clock
        self._shards = list(shards)
        self._metrics = metrics
        self._redeliver_after_ms = redeliver_after_ms
        self._max_deliveries = max_deliveries
        self._stats: StatsRecorder = stats or NullStats()
        # Re-adding waits this much longer than a claim in place (claim_idle), which a reader does first.
        self._readd_after_ms = redeliver_after_ms + readd_grace_ms

    def recover(self) -> int:
        """Runs one bounded pass over every shard (an executor's tick); returns how many were re-delivered."""
        done = Recovered()
        for shard in self._shards:
            self.recover_shard(shard, done, MAX_BATCHES_PER_PASS)
        if done.redelivered:
            self._metrics.count("Redelivered", done.redelivered)
        return done.redelivered

    def recover_shard(
        self,
        shard: int,
        into: Recovered,
        max_batches: int | None = None,
        cursor: str = SCAN_START,
        deadline_ms: int | None = None,
    ) -> str | None:
        """Scans the shard's pending entries from cursor, adding to `into`; returns where it stopped.

        The scan stops after max_batches batches (None: no limit) or, once a batch is done, at deadline_ms
        (None: none); it returns None when it looked at every pending entry, else the cursor to go on
        from. The first batch always runs, so a caller that comes back with the cursor makes progress.
        """
        batches = 0
        while max_batches is None or batches < max_batches:
            if batches and deadline_ms is not None and self._clock.now_ms() >= deadline_ms:
                return cursor
            result = self._stream.redeliver(
                shard, self._readd_after_ms, self._clock.now_ms(), self._max_deliveries, cursor
            )
            batches += 1
            into.redelivered += result.redelivered
            into.malformed += result.malformed
            for entry in result.exhausted:
                self._dead_letter(entry, into)
            if result.scan_finished:
                return None
            cursor = result.next_cursor
        return cursor

    def claim_idle(self, shard: int, count: int) -> list[StreamEntry]:
        """Takes over up to count entries idle redeliver_after_ms, in place; returns those to deliver now.

        An executor's shard reader calls this before reading new entries, so a gone executor's deliveries
        are served ahead of any backlog (a re-added entry would wait behind it). The returned entries are
        pending under this executor as if read; those out of deliveries are dead-lettered here.
        """
        result = self._stream.claim_idle(
            shard, self._redeliver_after_ms, self._clock.now_ms(), self._max_deliveries, count
        )
        done = Recovered(malformed=result.malformed)
        for entry in result.exhausted:
            try:
                self._dead_letter(entry, done)
            except Exception:
                # It stays pending under this executor, idle, and a later claim or pass ends it.
                logger.warning("dead-lettering an exhausted entry failed", exc_info=True)
        if result.claimed:
            self._metrics.count("Redelivered", len(result.claimed))
        return result.claimed

    def _dead_letter(self, entry: StreamEntry, into: Recovered) -> None:
        """Ends a delivery that kept being abandoned (a poison message must not loop forever).

        DynamoDB first (the record), then the dead stream's feed entry, which also finishes the delivery. If
        Redis fails between the two, the entry stays pending (under this recoverer) and comes back to a
        later pass, exhausted again: mark_dead then finds the job already dead for this reason in this
        generation and answers done, and the feed entry is written then.
        """
        now_ms = self._clock.now_ms()
        try:
            self._store.mark_dead(entry.member, DELIVERIES_EXHAUSTED, now_ms)
        except StaleState:
            # The job moved on (finished, retried, cancelled), or an attempt still holds its lease and will
            # record its own outcome: nothing to kill. If that attempt dies, its lease expires and the
            # reconciliation finds the job missing from Redis and indexes it again.
            self._stream.ack(entry)
            return
        try:
            dead_id = self._stream.dead_letter(entry, DELIVERIES_EXHAUSTED, now_ms)
        except Exception:
            logger.warning(
                "job is dead in DynamoDB; writing its dead-stream entry failed, a later pass writes it",
                extra={"job_id": entry.member.job_id},
                exc_info=True,
            )
            self._metrics.count("DeadFeedFailed")
            return
        if dead_id is None:
            return  # another recoverer finished this entry meanwhile: it counted the job
        into.dead_lettered += 1
        self._metrics.count("DeadLettered")
        self._stats.record(entry.member.tenant, Outcome.DEAD, now_ms, entry.member.job_id)
