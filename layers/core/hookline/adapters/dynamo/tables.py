"""DynamoDB attribute and index names the code relies on, and the jobs table's keyspace (Keyspace).

`template.yaml` is the single definition of the tables; tests/unit/test_template_contract.py fails when the
names here and the template disagree, and local tables are created from the template itself.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

# Jobs table: sk = "<item type>#<id>". A job or an idempotency marker sits under pk "<tenant>#<bucket>"
# (Keyspace), a schedule and its listing items under pk "<tenant>": see Keyspace.
JOBS_PK = "pk"
JOBS_SK = "sk"
JOB_SK_PREFIX = "job#"
IDEMPOTENCY_SK_PREFIX = "idem#"
SCHEDULE_SK_PREFIX = "sched#"
QUEUE_SK_PREFIX = "queue#"
# Sparse GSI: only live jobs (live_shard "<shard>#<bucket>") and active schedules ("cron:<shard>") carry
# these two attributes; the reaper's reconciliation reads it.
LIVE_INDEX = "live"
LIVE_PK = "live_shard"
LIVE_SK = "live_due_ms"
# The attributes the live GSI projects besides the keys (INCLUDE): what reconciliation reads, never a job's
# body or headers. Jobs (codec.item_to_live_job) and schedules (schedule_store.item_to_schedule) share it.
LIVE_JOB_ATTRIBUTES = ("job_id", "status", "generation", "due_ms", "shard", "flow", "lease_expires_at_ms")
LIVE_SCHEDULE_ATTRIBUTES = (
    "schedule_id",
    "expression",
    "timezone",
    "job",
    "catch_up",
    "paused",
    "version",
    "shard",
    "created_ms",
    "updated_ms",
    "start_ms",
    "end_ms",
)
TTL_ATTRIBUTE = "expires_at_s"
# A job item holds the record of the job's attempt 1 (a map, codec.execution_to_map) once that attempt ended:
# attempt numbers keep counting across retries and replays, so attempt 1 is one attempt per job, and its
# finish writes one item (a conditional UpdateItem, not a transaction with an executions-table put). The
# record lives as long as the job item: constants.TERMINAL_JOB_RETENTION_S after the job ends, which must be
# no shorter than an execution item's EXECUTION_RETENTION_S after its attempt.
FIRST_EXECUTION = "first_execution"
FIRST_ATTEMPT = 1

# Executions table: one item per attempt after the first (FIRST_EXECUTION); items older versions wrote hold
# attempt 1 too.
EXECUTIONS_PK = "pk"  # "<tenant>#<job id>"
EXECUTIONS_SK = "attempt"

# API keys table: key id → tenant, secret hash, scopes; tenant items hold signing secrets.
API_KEYS_PK = "key_id"
TENANT_ITEM_PREFIX = "tenant#"
# The deployment's own items, under key ids no API key can have (a key id has no "#"): SHARD_COUNT_KEY
# holds `shards`, the most shards the engine has run with (usecases/shards.py).
DEPLOYMENT_ITEM_PREFIX = "deployment#"
SHARD_COUNT_KEY = f"{DEPLOYMENT_ITEM_PREFIX}shards"
# One item per shard (adapters/dynamo/unindexed.py): jobs written while Redis did not answer.
UNINDEXED_KEY_PREFIX = f"{DEPLOYMENT_ITEM_PREFIX}unindexed#"
# BUCKET_COUNT_KEY holds `buckets`, the Keyspace bucket count the jobs table's items were written with.
BUCKET_COUNT_KEY = f"{DEPLOYMENT_ITEM_PREFIX}buckets"
RESERVED_KEY_PREFIXES = (TENANT_ITEM_PREFIX, DEPLOYMENT_ITEM_PREFIX)


def job_sk(job_id: str) -> str:
    """Returns the sort key of a job item."""
    return f"{JOB_SK_PREFIX}{job_id}"


def idempotency_sk(key: str) -> str:
    """Returns the sort key of an idempotency marker item."""
    return f"{IDEMPOTENCY_SK_PREFIX}{key}"


def execution_pk(tenant: str, job_id: str) -> str:
    """Returns the partition key of a job's execution items."""
    return f"{tenant}#{job_id}"


def unindexed_key(shard: int) -> str:
    """Returns the key id of a shard's note of jobs written while Redis did not answer."""
    return f"{UNINDEXED_KEY_PREFIX}{shard}"


def tenant_item_key(tenant: str) -> str:
    """Returns the key id under which a tenant's signing secrets are stored in the API keys table."""
    return f"{TENANT_ITEM_PREFIX}{tenant}"


# A tenant's jobs and markers spread over this many partition keys (HOOKLINE_JOB_BUCKETS). DynamoDB serves
# about 1,000 WCU/s per partition key value, and a one-attempt job's life (put, claim, finish) costs about
# 3 WCU at 1 KB in the table and again in the live index: 8 buckets lift one tenant, and one shard's live
# index, from ~330 to ~2,600 jobs/s, while a listing page costs 8 small queries and a reconcile pass 8 per
# shard.
# Split-for-heat does not help here: job ids (ULIDs) grow, so every write lands at the end of the range.
DEFAULT_JOB_BUCKETS = 8
MAX_JOB_BUCKETS = 64


@dataclass(frozen=True)
class Keyspace:
    """Where each item of the jobs table lives, for a deployment's fixed bucket count.

    - job `job#<id>`: pk "<tenant>#<bucket(id)>"; in the live GSI under "<shard>#<bucket(id)>".
    - idempotency marker `idem#<key>`: pk "<tenant>#<bucket(key)>".
    - schedule `sched#<id>` and listing items `sjob#<schedule id>#<job id>`: pk "<tenant>". A tenant's
      schedule writes are few (API changes; one small listing item per occurrence, bounded by the cron
      frequency floor), and a schedule's instances list from one partition in order; active schedules sit
      in the live GSI under "cron:<shard>".

    The bucket is a hash of the id, so get, claim, finish, cancel and replay find an item with no extra read;
    it is blake2b, not the shard's crc32, so a shard's jobs still spread over every bucket. A pk ends in
    "#<digits>" only for jobs and markers and tenant ids hold no "#" (cli/keys.py TENANT_PATTERN), so no two
    tenants share a partition, and the tenant is the pk up to its last "#".

    The count is fixed per deployment: a different count would look for existing jobs under other keys.
    The engine records it (BUCKET_COUNT_KEY) and refuses to start with another; `hookline migrate-keys`
    moves items to the layout of a new count while the functions are stopped (cli/migrate.py).
    """

    buckets: int = DEFAULT_JOB_BUCKETS

    def __post_init__(self) -> None:
        if not 1 <= self.buckets <= MAX_JOB_BUCKETS:
            raise ValueError(f"job buckets must be 1..{MAX_JOB_BUCKETS}, not {self.buckets}")

    def bucket_of(self, key: str) -> int:
        """Returns the bucket of a job id or an idempotency key."""
        digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big") % self.buckets

    def job_pk(self, tenant: str, job_id: str) -> str:
        """Returns the partition key of a job item."""
        return bucket_pk(tenant, self.bucket_of(job_id))

    def marker_pk(self, tenant: str, idempotency_key: str) -> str:
        """Returns the partition key of an idempotency marker (spread by the key, not by the job id)."""
        return bucket_pk(tenant, self.bucket_of(IDEMPOTENCY_SK_PREFIX + idempotency_key))

    def live_pk(self, shard: int, job_id: str) -> str:
        """Returns the live GSI partition of a live job: its shard and its bucket."""
        return f"{shard}#{self.bucket_of(job_id)}"

    def live_pks(self, shard: int) -> list[str]:
        """Returns every live GSI partition of a shard's jobs, bucket 0 first."""
        return [f"{shard}#{bucket}" for bucket in range(self.buckets)]


def bucket_pk(tenant: str, bucket: int) -> str:
    """Returns the partition key of a tenant's bucket."""
    return f"{tenant}#{bucket}"


def tenant_of(pk: str) -> str:
    """Returns the tenant of a job's or a marker's partition key (everything before the last "#")."""
    return pk.rpartition("#")[0]
