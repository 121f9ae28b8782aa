"""The executor's acknowledgements, sent in batches from a thread of their own.

An attempt whose outcome DynamoDB holds ends with its stream entry acknowledged (ack.lua: XACK, XDEL,
ZREM): one Redis round trip and four commands per job. While an executor runs, finished entries are queued
here instead, and this thread acknowledges what has gathered (waiting up to ACK_GATHER_MS after the first,
or until ACK_BATCH are queued) in one ack_many.lua call per shard: each entry exactly as ack.lua would.

What a delay or a failure does to a job: nothing beyond what a failed single ack did. The outcome is in
DynamoDB before the entry is queued. Until it is acknowledged the entry stays pending (no longer beaten,
since its attempt ended); a batch is sent within milliseconds, far inside redeliver_after_ms. If the batch
fails (Redis down) or the executor dies with entries queued, those entries stay pending, a recoverer
re-delivers them once idle, their claim is refused (the job is finished, or its next generation waits) and
that delivery is acknowledged: the job is neither lost nor run again.

An entry gives its delivery slot back when its attempt ends, not when its acknowledgement is sent. Holding
the slot through the gathering and the round trip would make them part of every delivery's cycle, a
ceiling on an executor's rate whatever its CPU (docs/performance.md). So the entries pending
under the executor are at most its concurrency (attempts running) plus the acknowledgements queued here and
not yet sent (`queued - sent`): finished entries, whose outcome DynamoDB holds, which one or two round trips
clear. Nothing re-delivers them sooner than redeliver_after_ms, and a re-delivery is refused at its claim.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from hookline.domain.delivery import StreamEntry
from hookline.ports import MetricsSink, ReadyStream

logger = logging.getLogger(__name__)

ACK_GATHER_MS = 2  # how long a first finished entry waits for others to share its round trip
ACK_BATCH = 64  # entries sent at once at most
# How long running() waits at its end for the last batches; past it they are left to the recoverer (a batch
# stuck on a Redis that stopped answering must not hold the executor's invocation past its deadline).
ACK_STOP_S = 5.0


class Acker:
    """Queues finished entries and acknowledges them in batches while running(); thread-safe."""

    def __init__(
        self,
        stream: ReadyStream,
        metrics: MetricsSink,
        gather_ms: int = ACK_GATHER_MS,
        batch: int = ACK_BATCH,
        stop_s: float = ACK_STOP_S,
    ) -> None:
        self._stream = stream
        self._stop_s = stop_s
        self._metrics = metrics
        self._gather_s = gather_ms / 1000
        self._batch = batch
        self._queued: list[StreamEntry] = []
        self._changed = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.queued = 0  # entries given to ack() (for tests and benches)
        self.sent = 0  # entries handed to ack_many, once it returned or failed (for tests and benches)

    @property
    def active(self) -> bool:
        """Tells whether entries given to ack() are acknowledged by this thread (else the caller acks)."""
        return self._thread is not None

    def ack(self, entry: StreamEntry) -> None:
        """Queues entry, whose outcome DynamoDB holds, for the next batch."""
        with self._changed:
            self.queued += 1
            self._queued.append(entry)
            if len(self._queued) >= self._batch or len(self._queued) == 1:
                self._changed.notify_all()

    @contextmanager
    def running(self) -> Iterator[None]:
        """Acknowledges queued entries in the background; on exit, sends everything still queued.

        The exit waits at most the acker's stop_s for them: entries not acknowledged by then stay pending in
        Redis, where a recoverer re-delivers them and their refused claims are acknowledged (see the module).
        """
        self._stopping = False
        thread = threading.Thread(target=self._loop, name="acker", daemon=True)
        self._thread = thread
        thread.start()
        try:
            yield
        finally:
            with self._changed:
                self._stopping = True
                self._changed.notify_all()
            thread.join(timeout=self._stop_s)
            if thread.is_alive():
                logger.warning(
                    "acknowledgements still unsent after %g s; left to the recoverer", self._stop_s
                )
            self._thread = None

    def _loop(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._queued) or self._stopping)
                if not self._queued:
                    return  # stopping, nothing left
                if not self._stopping:
                    self._changed.wait_for(
                        lambda: len(self._queued) >= self._batch or self._stopping, self._gather_s
                    )
                batch, self._queued = self._queued[: self._batch], self._queued[self._batch :]
            self._send(batch)

    def _send(self, batch: list[StreamEntry]) -> None:
        try:
            self._stream.ack_many(batch)
        except Exception:
            # Redis down, or a bug: the entries stay pending and are re-delivered once idle; their claims are
            # refused and those deliveries acknowledged (see the module docstring).
            logger.warning(
                "acknowledging %d deliveries failed; they will be re-delivered", len(batch), exc_info=True
            )
            self._metrics.count("AckErrors")
        self.sent += len(batch)
