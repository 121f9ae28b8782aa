"""Whether Redis takes writes: the health route's look at every node's memory."""

from __future__ import annotations

from typing import Any, cast

import redis
from redis.cluster import RedisCluster

from hookline.adapters.redis.cluster import is_cluster

OK = "ok"
# A node holds more than its maxmemory and could evict nothing to make room: it answers reads and
# deletes but refuses every write (OOM), so nothing is promoted, indexed or acknowledged until memory frees.
OUT_OF_MEMORY = "out_of_memory"


def redis_state(client: redis.Redis) -> str:
    """Returns OK, or OUT_OF_MEMORY when a node (any primary of a cluster) refuses writes for want of memory.

    Reads INFO memory, which costs no write: Redis tries to evict before every command, so a node still
    over its maxmemory after that (used memory less what does not count towards it) refuses the next
    write. Raises the client's error when Redis does not answer.
    """
    if is_cluster(client):
        cluster = cast(RedisCluster, client)
        replies = [cluster.info("memory", target_nodes=node) for node in cluster.get_primaries()]  # type: ignore[no-untyped-call]
    else:
        replies = [client.info("memory")]
    return OUT_OF_MEMORY if any(_over_maxmemory(reply) for reply in replies) else OK


def _over_maxmemory(memory: dict[str, Any]) -> bool:
    maxmemory = int(memory.get("maxmemory", 0))
    counted = int(memory.get("used_memory", 0)) - int(memory.get("mem_not_counted_for_evict", 0))
    return 0 < maxmemory < counted
