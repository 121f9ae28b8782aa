"""Which Redis the integration tests run against: one redis-server, or a Redis Cluster (a second pass).

HOOKLINE_TEST_REDIS=cluster selects a real 3-master cluster and spreads jobs over CLUSTER_SHARDS shards.
"""

from __future__ import annotations

import os
from typing import cast

import redis
from redis.cluster import RedisCluster

from hookline.adapters.redis.cluster import close_cluster

CLUSTER_MODE = os.environ.get("HOOKLINE_TEST_REDIS", "single") == "cluster"
# Shards the engine spreads jobs over in the cluster run: more than the 3 masters, so two shards share a
# node and every node holds one (shards 0-3 hash to slots 9260, 13325, 1134 and 5199).
CLUSTER_SHARDS = 4
SHARDS = CLUSTER_SHARDS if CLUSTER_MODE else 1


def connect(url: str) -> redis.Redis:
    """Returns a new client to the test Redis (in the cluster run a cluster client, typed as one-node)."""
    if CLUSTER_MODE:
        return cast(redis.Redis, RedisCluster.from_url(url))
    return redis.Redis.from_url(url)


def disconnect(client: redis.Redis) -> None:
    """Closes a client connect() returned, with every socket it opened."""
    if isinstance(client, RedisCluster):
        close_cluster(client)
    else:
        client.close()
