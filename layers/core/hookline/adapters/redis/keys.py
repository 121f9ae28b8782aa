"""Every Redis key name Hookline uses, one function per key.

All keys of one shard share the hash tag `{hl:s<shard>}`, so one Lua script may touch any of them in a
Redis cluster. Limiter keys get a hash tag of their own: their scripts touch nothing else.
"""

from hookline.domain.queues import limiter_name

CONSUMER_GROUP = "executors"


def _shard_tag(shard: int) -> str:
    return f"{{hl:s{shard}}}"


def due_key(shard: int) -> str:
    """ZSET: member → due time (ms). Jobs waiting for their time (first run, retry, limiter delay)."""
    return f"{_shard_tag(shard)}:due"


def ready_stream(shard: int) -> str:
    """STREAM with consumer group CONSUMER_GROUP: one entry per delivery to make now (field `m` = member)."""
    return f"{_shard_tag(shard)}:ready"


def inflight_key(shard: int) -> str:
    """ZSET: member → promotion time (ms). Members in the ready stream, pending or not yet acked.

    Streams cannot answer "is this job in here?"; this index can, so reconciliation knows what Redis lost.
    """
    return f"{_shard_tag(shard)}:inflight"


def wake_key(shard: int) -> str:
    """LIST: a token pushed when a job becomes due earlier than the promoter's planned wake-up."""
    return f"{_shard_tag(shard)}:wake"


def promoter_alive_key(shard: int) -> str:
    """STRING with an expiry: a promoter is running (it sets the key at each visit of the shard, promote.lua).

    index.lua wakes a promoter only while no such key exists; a promoter ending idle deletes it first.
    """
    return f"{_shard_tag(shard)}:promoter"


def wake_claim_key(shard: int) -> str:
    """STRING with an expiry: a submit took the claim to wake a promoter (index.lua, SET NX PX)."""
    return f"{_shard_tag(shard)}:wake-claim"


def dead_stream(shard: int) -> str:
    """STREAM: one entry per dead-lettered job (fields `m` member, `reason`), trimmed to a maximum length."""
    return f"{_shard_tag(shard)}:dead"


def rebuild_key(shard: int) -> str:
    """HASH: the shard's reconciliation marks: `epoch` (set when the consumer group is created), `rebuilt`
    (the epoch of the last complete rebuild) and `cursor` (`mode|position` where the last scan stopped).

    A flush takes it with everything else, so a Redis that lost its data is recognised and rebuilt at once.
    """
    return f"{_shard_tag(shard)}:rebuild"


def cron_key(shard: int) -> str:
    """ZSET: schedule member `tenant/schedule_id/version` → next fire time (ms), or claim expiry (ms)."""
    return f"{_shard_tag(shard)}:cron"


def cron_claims_key(shard: int) -> str:
    """HASH: schedule member → fire time (ms) of the occurrence a promoter's claim is for.

    Kept apart from the ZSET score (which holds the claim expiry) so a re-claim after an expired claim
    handles the same occurrence.
    """
    return f"{_shard_tag(shard)}:cron:claims"


def fan_out_key() -> str:
    """ZSET: token → launch time (ms); the executors the fan-out started, shared by every promoter."""
    return "{hl:fanout}:executors"


def global_wake_claim_key() -> str:
    """STRING with an expiry: the deployment-wide wake claim. A shard's claim (index.lua) bounds the callers
    to one per shard; this one (SET NX PX by that caller) to one per burst over every shard."""
    return "{hl:fanout}:wake-claim"


def executor_alive_key() -> str:
    """STRING with an expiry: some executor is reading (each refreshes it every recovery pass, deletes it
    when it ends idle); the fan-out starts one when the streams hold work and no such key exists."""
    return "{hl:fanout}:alive"


def rate_key(tenant: str, key: str) -> str:
    """ZSET: admission id → admission time (ms); the sliding-window log of one rate-limit key."""
    return f"{{hl:rl:{tenant}:{key}}}:rate"


def rate_queue_key(tenant: str, key: str) -> str:
    """ZSET: waiter (job:generation) → its place in line; deliveries a rate-limit key refused."""
    return f"{{hl:rl:{tenant}:{key}}}:queue"


def rate_told_key(tenant: str, key: str) -> str:
    """ZSET: waiter (job:generation) → the turn it was told (ms); see rate_queue_key."""
    return f"{{hl:rl:{tenant}:{key}}}:told"


def concurrency_key(tenant: str, key: str) -> str:
    """ZSET: holder token → lease expiry (ms); the holders of one concurrency-limit key."""
    return f"{{hl:cc:{tenant}:{key}}}:holders"


def concurrency_started_key(tenant: str, key: str) -> str:
    """ZSET: holder token → when it took its slot (ms); the same holders, by start."""
    return f"{{hl:cc:{tenant}:{key}}}:started"


def concurrency_queue_key(tenant: str, key: str) -> str:
    """ZSET: waiter token → its place in line; deliveries a concurrency-limit key refused."""
    return f"{{hl:cc:{tenant}:{key}}}:queue"


def concurrency_told_key(tenant: str, key: str) -> str:
    """ZSET: waiter token → the turn it was told (ms); see concurrency_queue_key."""
    return f"{{hl:cc:{tenant}:{key}}}:told"


def concurrency_hold_key(tenant: str, key: str) -> str:
    """STRING: the typical time (ms) a holder of one concurrency-limit key holds its slot."""
    return f"{{hl:cc:{tenant}:{key}}}:hold"


def parked_key(shard: int, tenant: str, queue: str) -> str:
    """ZSET: member → when it was parked (ms); a paused queue's deliveries in one shard (park.lua)."""
    return f"{_shard_tag(shard)}:parked:{tenant}/{queue}"


def parked_queues_key(shard: int) -> str:
    """SET: "tenant/queue" of each parked ZSET of the shard that may hold members (the reaper heals these)."""
    return f"{_shard_tag(shard)}:parked-queues"


def queue_settings_key(tenant: str, queue: str) -> str:
    """HASH: a named queue's live settings (limit, period_ms, max_concurrency, paused_since_ms), with expiry.

    Shares the hash tag of the queue's semaphore (concurrency_key(tenant, limiter_name(queue))), so
    queue_admit.lua reads the settings and takes the slot and the rate admission in one call.
    """
    return f"{{hl:cc:{tenant}:{limiter_name(queue)}}}:settings"


def queue_rate_keys(tenant: str, queue: str) -> list[str]:
    """ZSETs: a named queue's rate window (admission → time ms), its line (waiter → place) and told turns."""
    tag = f"{{hl:cc:{tenant}:{limiter_name(queue)}}}"
    return [f"{tag}:rate", f"{tag}:rate-queue", f"{tag}:rate-told"]


def api_rate_key(key_id: str) -> str:
    """ZSET: request id → request time (ms); the sliding-window log of one API key's request rate."""
    return f"{{hl:api:{key_id}}}:rate"


def stats_bucket_key(tenant: str, minute: int) -> str:
    """HASH: counter → value; one tenant's outcomes in one minute (ms // 60000), expiring after two hours."""
    return f"{{hl:st:{tenant}}}:m:{minute}"


def stats_dead_key(tenant: str) -> str:
    """ZSET: job id → expiry (s) of its record; the tenant's dead jobs, counted in O(log N)."""
    return f"{{hl:st:{tenant}}}:dead"


def api_queue_keys(key_id: str) -> list[str]:
    """Never written (API requests are not queued); named so that rate_limit.lua's keys share one slot."""
    return [f"{{hl:api:{key_id}}}:queue", f"{{hl:api:{key_id}}}:told"]
