"""A clock that tells the Redis server's time: the host's clock corrected by its measured offset.

Every executor, promoter and reaper compares times another process wrote: lease expiries (claim, renewal,
take-over), due times (the claim refuses a job before its due_ms; promotion; retries), semaphore leases.
Read from each host's own clock, a host running 30 s ahead would take over leases still held for 30 s more
and deliver jobs early, and one running behind would extend its leases and schedule its retries late. Read
from one reference, the Redis server's clock (TIME), every host agrees however far its own clock drifts.

TIME is asked once at the first reading and again every recalibrate_ms after that (a cached offset, not a
round trip per reading): a reading costs the host clock's read and one comparison. The offset is measured
as Redis's time minus the local reading after its reply, less a millisecond (both are whole milliseconds):
Redis read its clock before that reply arrived, so the offset is never larger than the true one, and the
clock never reads ahead of Redis's; it may read behind by up to one round trip (at most MAX_ROUND_TRIP_MS,
well within the lease margin). Ahead would deliver early: the claim accepts a job once its due time has
come on this clock. While Redis does not answer, the last offset stays in use (before the first answer:
none, the host's clock) and the next try comes retry_ms later, so an outage puts a round trip into one
reading a second, not into every one. Until the first answer a skewed host is as wrong as before: the
engine's loops need Redis for their work anyway, and the claim still refuses a job before its due time
on whatever clock the executor has.
"""

from __future__ import annotations

import logging
import threading

import redis

from hookline.ports import Clock

logger = logging.getLogger(__name__)

# How often the offset is measured again: drift between two measurements stays far below a millisecond.
RECALIBRATE_MS = 10_000
# After a failed or too coarse measurement, the next try comes this much later.
RETRY_MS = 1_000
# A measurement whose round trip took longer than this is too coarse to keep (the clock may read behind by
# up to a round trip).
MAX_ROUND_TRIP_MS = 100


class RedisTimeClock:
    """Tells the Redis server's time from the host clock `local` and a periodically measured offset."""

    def __init__(
        self,
        client: redis.Redis,
        local: Clock,
        recalibrate_ms: int = RECALIBRATE_MS,
        retry_ms: int = RETRY_MS,
    ) -> None:
        self._client = client
        self._local = local
        self._recalibrate_ms = recalibrate_ms
        self._retry_ms = retry_ms
        self._offset_ms = 0
        self._next_check_ms: int | None = None  # local time of the next measurement (None: never measured)
        self._measuring = threading.Lock()

    @property
    def offset_ms(self) -> int:
        """Returns Redis's time minus the host's, as last measured (0 before any measurement)."""
        return self._offset_ms

    def now_ms(self) -> int:
        """Returns milliseconds since the Unix epoch on the Redis server's clock."""
        local_ms = self._local.now_ms()
        if (self._next_check_ms is None or local_ms >= self._next_check_ms) and self._measuring.acquire(
            blocking=False
        ):
            # One thread measures; the others go on with the offset they have.
            try:
                self._measure(local_ms)
            finally:
                self._measuring.release()
            local_ms = self._local.now_ms()
        return local_ms + self._offset_ms

    def _measure(self, local_ms: int) -> None:
        """Measures the offset once; a failure or a slow answer keeps the old one until the next try."""
        sent_ms = local_ms
        try:
            seconds, micros = self._client.time()
        except (redis.RedisError, OSError) as error:
            self._next_check_ms = self._local.now_ms() + self._retry_ms
            logger.warning("could not read Redis's time; the clock keeps its last offset: %s", error)
            return
        received_ms = self._local.now_ms()
        if received_ms - sent_ms > MAX_ROUND_TRIP_MS:
            self._next_check_ms = received_ms + self._retry_ms
            return
        server_ms = int(seconds) * 1000 + int(micros) // 1000
        self._offset_ms = server_ms - received_ms - 1
        self._next_check_ms = received_ms + self._recalibrate_ms
