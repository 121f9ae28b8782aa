"""DynamoDB attribute and index names the code relies on.

`template.yaml` is the single definition of the tables; tests/unit/test_template_contract.py fails when the
names here and the template disagree, and local tables are created from the template itself.
"""

# Jobs table: pk = tenant, sk = "<item type>#<id>", so a tenant's jobs list newest first.
JOBS_PK = "pk"
JOBS_SK = "sk"
JOB_SK_PREFIX = "job#"
IDEMPOTENCY_SK_PREFIX = "idem#"
SCHEDULE_SK_PREFIX = "sched#"
# Sparse GSI: only live jobs carry these two attributes; the reaper's reconciliation reads it.
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

# Executions table: one item per attempt.
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
