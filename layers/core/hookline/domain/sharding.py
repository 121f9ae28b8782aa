"""Which shard a job's Redis keys live in."""

import zlib


def shard_of(job_id: str, shards: int) -> int:
    """Returns the job's shard: a stable hash of its id, so every component agrees without asking."""
    return zlib.crc32(job_id.encode()) % shards if shards > 1 else 0
