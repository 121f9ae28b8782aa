"""The promotion backstop: what no promoter moved in time, the executors and the reaper move themselves.

Promoter invocations are started by a schedule and loop until their deadline; one that dies (a crash, a
timeout, a killed sandbox) leaves no promoter until the next tick, and every job falling due meanwhile
would wait for it. The backstop closes that gap without a leader or a liveness key: it promotes only
members due more than gap_ms ago, which a working promoter never leaves behind (it sleeps at most
PROMOTER_MAX_SLEEP_MS), so while promoters run it finds nothing, and when none runs a due job waits at
most gap_ms plus the caller's interval. promote.lua is atomic: a backstop and a promoter racing move each
member once. Cron schedules still wait for a promoter (firing one needs the schedule store).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from hookline.domain import constants
from hookline.ports import Clock, DueIndex, MetricsSink

logger = logging.getLogger(__name__)


class PromotionBackstop:
    """Promotes, on every shard, the members due more than gap_ms ago (at most `batch` per shard a pass)."""

    def __init__(
        self,
        index: DueIndex,
        clock: Clock,
        shards: Sequence[int],
        metrics: MetricsSink,
        gap_ms: int = constants.PROMOTER_GAP_MS,
        batch: int = constants.PROMOTE_BATCH,
    ) -> None:
        self._index = index
        self._clock = clock
        self._shards = list(shards)
        self._metrics = metrics
        self._gap_ms = gap_ms
        self._batch = batch

    def promote_overdue(self) -> int:
        """Runs one pass over every shard; returns how many members it moved.

        The script is given now - gap_ms as its time, so it moves nothing due later than that, and records
        that time as the members' promotion time in the in-flight ZSET (gap_ms early, which reconciliation,
        counting a member lost only after the longest attempt, does not notice). Raises what the index
        raises (IndexUnavailable): the caller's next pass tries again.
        """
        cutoff_ms = self._clock.now_ms() - self._gap_ms
        moved = sum(self._index.promote(shard, cutoff_ms, self._batch).moved for shard in self._shards)
        if moved:
            logger.warning(
                "promoted jobs no promoter had moved", extra={"moved": moved, "overdue_ms": self._gap_ms}
            )
            self._metrics.count("BackstopPromoted", moved)
        return moved
