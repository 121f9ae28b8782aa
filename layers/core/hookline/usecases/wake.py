"""Waiting for a wake token on any of several shards: one thread per shard, each blocking on its own list.

A submit that schedules a job sooner than the promoter planned to wake pushes a token onto its shard's wake
list. No one command can block on several shards' lists: their keys hash to different slots, which a Redis
Cluster serves from different nodes (a BLPOP over them is refused). So each shard gets a waiter thread
blocking on its own list, and the waiters raise one signal the promoter's loop waits on.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from hookline.domain.errors import IndexUnavailable
from hookline.ports import Clock, DueIndex, MetricsSink
from hookline.usecases.outage import Outage

logger = logging.getLogger(__name__)

# How long stopping may wait for a waiter: it leaves after its current BLPOP, which ends by the deadline
# (Redis checks blocking timeouts on its ~100 ms cron, so up to that late).
JOIN_TIMEOUT_S = 2.0


class ShardWaiters:
    """Runs one waiter thread per shard until stopped or the deadline; any token raises the signal.

    A token taken while the promoter is busy (ticking) leaves the signal raised, so its next wait returns
    at once: no wake-up is lost between a tick and a wait.
    """

    def __init__(
        self,
        index: DueIndex,
        clock: Clock,
        metrics: MetricsSink,
        shards: Sequence[int],
        max_block_ms: int,
    ) -> None:
        self._index = index
        self._clock = clock
        self._metrics = metrics
        self._shards = list(shards)
        self._max_block_ms = max(1, max_block_ms)
        self._signal = threading.Event()
        self._lock = threading.Lock()
        self._woken: set[int] = set()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._error: BaseException | None = None

    def start(self, deadline_ms: int) -> None:
        """Starts the waiters; each blocks on its shard's wake list until stop() or deadline_ms."""
        self._threads = [
            threading.Thread(
                target=self._wait_on, args=(shard, deadline_ms), name=f"wake-{shard}", daemon=True
            )
            for shard in self._shards
        ]
        for thread in self._threads:
            thread.start()

    def wait(self, timeout_ms: int) -> bool:
        """Waits up to timeout_ms for a token on any shard; True (and the signal lowered) when one came.

        Raises what a waiter met that was not a Redis blip (a bug must not leave the promoter deaf).
        """
        woken = self._signal.wait(max(0, timeout_ms) / 1000)
        if self._error is not None:
            raise self._error
        if woken:
            self._signal.clear()
        return woken

    def take_woken(self) -> set[int]:
        """Returns the shards whose wake list had a token since the last call (or whose wait failed, which
        may have lost one), and forgets them."""
        with self._lock:
            woken, self._woken = self._woken, set()
        return woken

    def _mark(self, shard: int) -> None:
        with self._lock:
            self._woken.add(shard)

    def stop(self) -> None:
        """Stops the waiters and waits for each to leave its BLPOP."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=JOIN_TIMEOUT_S)
        self._threads = []

    def _wait_on(self, shard: int, deadline_ms: int) -> None:
        outage = Outage(self._clock, self._metrics, f"promote wake shard {shard}")
        while not self._stop.is_set() and (now_ms := self._clock.now_ms()) < deadline_ms:
            try:
                woken = self._index.wait_for_wake([shard], min(self._max_block_ms, deadline_ms - now_ms))
            except IndexUnavailable as error:
                # The promoter's own loop backs off too; this waiter tries again after its own back-off. A
                # reply lost with its connection may have taken a token: the next tick visits the shard.
                self._mark(shard)
                self._stop.wait(outage.failed(error, deadline_ms))
                continue
            except BaseException as error:
                logger.exception("a wake waiter failed", extra={"shard": shard})
                self._error = error
                self._signal.set()
                return
            outage.succeeded()
            if woken:
                self._mark(shard)  # before the signal: the tick the signal starts must see the shard
                self._signal.set()
