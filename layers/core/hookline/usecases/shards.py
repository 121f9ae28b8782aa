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

from hookline.domain.errors import JobBucketsChanged, ShardCountLowered
from hookline.ports import Clock, JobBucketRecord, ShardCountRecord


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
