"""The deployment's shard and bucket counts: the engine refuses to start with counts that strand jobs.

Shards: the engine refuses to start with fewer shards than jobs were written with.

A job's shard is fixed when it is written (a hash of its id modulo HOOKLINE_SHARDS), and promoters,
executors and the reaper serve shards 0 .. HOOKLINE_SHARDS - 1 only. Lowering the count would strand every
job on the dropped shards; raising it is safe (old jobs stay where they are, new ones spread wider). So
every engine start records its count unless a larger one is recorded, and refuses to run below it. The
record lives in DynamoDB, which outlives Redis (a flush or a new cache would forget a Redis key).

Job buckets (HOOKLINE_JOB_BUCKETS): a job's DynamoDB partition key holds a hash of its id modulo the count,
so any change, up or down, hides every existing job from the engine and the API. The first start records
the count; every start (the API's included) refuses another one. `hookline migrate-keys` changes it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from hookline.domain.errors import JobBucketsChanged, ShardCountLowered
from hookline.ports import Clock, JobBucketRecord, MetricsSink, ShardCountRecord

logger = logging.getLogger(__name__)


def check_shard_count(record: ShardCountRecord, configured: int, clock: Clock) -> int:
    """Records the configured count (when larger); raises ShardCountLowered when a larger one is recorded."""
    recorded = record.record_shards(configured, clock.now_ms())
    if recorded > configured:
        raise ShardCountLowered(recorded, configured)
    return recorded


def check_bucket_count(record: JobBucketRecord, configured: int, clock: Clock) -> int:
    """Records the configured count at the first start; raises JobBucketsChanged when another is recorded."""
    recorded = record.record_buckets(configured, clock.now_ms())
    if recorded != configured:
        raise JobBucketsChanged(recorded, configured)
    return recorded


# Between tries of a start-up check that failed for a reason other than a refusal (throttled, timed out,
# unreachable): from the first delay, doubling, up to the longest.
START_UP_FIRST_DELAY_MS = 100
START_UP_MAX_DELAY_MS = 2_000


class StartUpChecks:
    """Runs the deployment checks once per process, inside an invocation, waiting out transient failures.

    The checks read and write DynamoDB. Run at import (a cold start), a throttle or a timeout there would
    end the invocation before it began, and every cold start during a throttling episode would die the
    same way; so the handlers run them first thing in each invocation until they have passed once, and a
    failure that is not a refusal is retried (backing off) until the invocation's deadline. Only a refusal
    (ShardCountLowered, JobBucketsChanged) stops the function at once: running with such counts would
    strand jobs. Until the checks pass, the function does no work.
    """

    def __init__(
        self,
        checks: Sequence[Callable[[], object]],
        clock: Clock,
        metrics: MetricsSink,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._checks = list(checks)
        self._clock = clock
        self._metrics = metrics
        self._sleep = sleep
        self._lock = threading.Lock()
        self._passed = False

    @property
    def passed(self) -> bool:
        """Tells whether every check has passed in this process."""
        return self._passed

    def ensure(self, deadline_ms: int) -> None:
        """Returns once every check has passed (at once after the first time).

        Raises ShardCountLowered or JobBucketsChanged at once; any other failure is retried until
        deadline_ms, and the last one is raised if none passed by then (the invocation did no work; the
        next one tries again).
        """
        if self._passed:
            return
        # Overlapping invocations of one process check once: the others wait for the first's verdict.
        with self._lock:
            delay_ms = START_UP_FIRST_DELAY_MS
            while not self._passed:
                try:
                    for check in self._checks:
                        check()
                except (ShardCountLowered, JobBucketsChanged):
                    raise
                except Exception as error:
                    left_ms = deadline_ms - self._clock.now_ms()
                    self._metrics.count("StartUpCheckFailed")
                    if left_ms <= 0:
                        raise
                    logger.warning(
                        "a start-up check failed; trying again",
                        extra={"error": repr(error), "in_ms": delay_ms},
                    )
                    self._sleep(min(delay_ms, left_ms) / 1000)
                    delay_ms = min(delay_ms * 2, START_UP_MAX_DELAY_MS)
                    continue
                self._passed = True
