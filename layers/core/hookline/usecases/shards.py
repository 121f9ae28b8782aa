"""The deployment's shard count: the engine refuses to start with fewer shards than jobs were written with.

A job's shard is fixed when it is written (a hash of its id modulo HOOKLINE_SHARDS), and promoters,
executors and the reaper serve shards 0 .. HOOKLINE_SHARDS - 1 only. Lowering the count would strand every
job on the dropped shards; raising it is safe (old jobs stay where they are, new ones spread wider). So
every engine start records its count unless a larger one is recorded, and refuses to run below it. The
record lives in DynamoDB, which outlives Redis (a flush or a new cache would forget a Redis key).
"""

from __future__ import annotations

from hookline.domain.errors import ShardCountLowered
from hookline.ports import Clock, ShardCountRecord


def check_shard_count(record: ShardCountRecord, configured: int, clock: Clock) -> int:
    """Records the configured count (when larger); raises ShardCountLowered when a larger one is recorded."""
    recorded = record.record_shards(configured, clock.now_ms())
    if recorded > configured:
        raise ShardCountLowered(recorded, configured)
    return recorded
