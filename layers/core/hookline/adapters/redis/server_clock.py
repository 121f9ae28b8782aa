"""A clock that tells the Redis server's time: the host's clock corrected by its measured offset.

Every executor, promoter and reaper compares times another process wrote: lease expiries (claim, renewal,
take-over), due times (the claim refuses a job before its due_ms; promotion; retries), semaphore leases.
Read from each host's own clock, a host running 30 s ahead would take over leases still held, write its
own 30 s too long and schedule its retries 30 s late; one running behind would write leases already
expired and schedule its retries early. Read from one reference, the Redis server's clock (TIME), every
host agrees however far its own clock drifts. The handlers take their invocation deadlines from the same
clock as the loops that compare with them.

TIME is asked at the first reading (which waits for it) and again every recalibrate_ms after that, from a
short-lived thread of its own, so no later reading waits for Redis (a cached offset, not a round trip per
reading): a reading costs the host clock's read and one comparison, also while Redis is away.

The offset is Redis's time minus the local reading after its reply, less a millisecond (both are whole
milliseconds): Redis read its clock before that reply arrived, so the offset is never larger than the true
one and the clock never reads ahead of Redis's; it may read behind by up to one round trip (at most
MAX_ROUND_TRIP_MS, well within the lease margin). Ahead would deliver early: the claim accepts a job once
its due time has come on this clock.

While Redis does not answer, the last offset stays in use (before the first answer: none, the host's
clock) and the next try comes retry_ms later. Until the first answer a skewed host is as wrong as before;
the engine's loops need Redis for their work anyway.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import redis
from redis.exceptions import RedisClusterException

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
        spawn: Callable[[Callable[[], None]], None] | None = None,
    ) -> None:
        self._client = client
        self._local = local
        self._recalibrate_ms = recalibrate_ms
        self._retry_ms = retry_ms
        self._spawn = spawn or _in_a_thread
        self._offset_ms = 0
        self._next_check_ms: int | None = None  # local time of the next measurement (None: never measured)
        self._measuring = threading.Lock()  # held while one measurement runs

    def now_ms(self) -> int:
        """Returns milliseconds since the Unix epoch on the Redis server's clock."""
        local_ms = self._local.now_ms()
        if self._next_check_ms is None:
            # The first reading waits for the first measurement (readings before it would be the host's).
            with self._measuring:
                if self._next_check_ms is None:
                    self._measure()
            local_ms = self._local.now_ms()
        elif local_ms >= self._next_check_ms and self._measuring.acquire(blocking=False):
            # One measurement at a time, off the caller's thread; readings go on with the offset they have.
            self._next_check_ms = local_ms + self._recalibrate_ms
            self._spawn(self._measure_then_release)
        return local_ms + self._offset_ms

    def _measure_then_release(self) -> None:
        try:
            self._measure()
        finally:
            self._measuring.release()

    def _measure(self) -> None:
        """Measures the offset once; a failure or a slow answer keeps the old one until the next try."""
        sent_ms = self._local.now_ms()
        try:
            seconds, micros = self._client.time()
        except (redis.RedisError, RedisClusterException, OSError) as error:
            # A cluster client that reaches no node raises RedisClusterUnreachableError, not a RedisError.
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


def _in_a_thread(work: Callable[[], None]) -> None:
    """Runs work in a daemon thread of its own."""
    threading.Thread(target=work, name="server-clock", daemon=True).start()
