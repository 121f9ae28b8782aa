"""The jobs table's keyspace on moto: one tenant's jobs, and one shard's live index, spread out.

DynamoDB serves about 1,000 WCU/s per partition key value, so a tenant whose every job shares one partition
key, or a shard whose live jobs share one live-index partition, is capped there. These tests read the items
as DynamoDB holds them (a scan of the table and of the index), not through the adapter's own key functions.
"""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any, cast

import pytest

from hookline.adapters.dynamo import codec, tables
from hookline.adapters.dynamo.job_store import DynamoJobStore
from hookline.domain.sharding import shard_of
from hookline.plumbing.settings import Settings
from tests.contract.conftest import DynamoBackend
from tests.contract.test_job_store import NOW, make_job

pytestmark = pytest.mark.integration

SHARDS = 8
SHARD = 5
JOBS = 64


def scan(client: Any, table: str, index: str | None = None) -> list[dict[str, Any]]:
    """Returns every item of the table (or of one of its indexes), as plain values."""
    request: dict[str, Any] = {"TableName": table}
    if index is not None:
        request["IndexName"] = index
    items: list[dict[str, Any]] = []
    while True:
        reply = client.scan(**request)
        items += [codec.from_attribute_values(item) for item in reply.get("Items", [])]
        if "LastEvaluatedKey" not in reply:
            return items
        request["ExclusiveStartKey"] = reply["LastEvaluatedKey"]


def test_given_one_tenants_jobs_on_one_shard_then_they_spread_over_several_partition_keys_and_live_partitions(
    contract_tables: tuple[Settings, Any],
) -> None:
    settings, client = contract_tables
    store = DynamoJobStore(client, settings.jobs_table, settings.executions_table)
    tenant = f"t{uuid.uuid4().hex[:10]}"
    backend = cast(DynamoBackend, SimpleNamespace(tenant=tenant, shard=SHARD))  # make_job reads these two
    # Ids of one shard, as the submitter derives it with 8 shards: the bucket hash must not follow the
    # shard's (crc32), or a shard's jobs would all share one bucket.
    ids = [f"01KSPREAD{n:017d}" for n in range(2_000) if shard_of(f"01KSPREAD{n:017d}", SHARDS) == SHARD]
    jobs = [make_job(backend, job_id=job_id) for job_id in ids[:JOBS]]
    for job in jobs:
        store.create(job, "hash", NOW)
    keyed = make_job(backend, idempotency_key="order-1")
    store.create(keyed, "hash", NOW)

    items = [item for item in scan(client, settings.jobs_table) if item["pk"].startswith(f"{tenant}#")]
    job_pks = {item["pk"] for item in items if item["sk"].startswith(tables.JOB_SK_PREFIX)}
    live = [
        item
        for item in scan(client, settings.jobs_table, tables.LIVE_INDEX)
        if item["pk"].startswith(f"{tenant}#")
    ]
    live_partitions = {item[tables.LIVE_PK] for item in live}

    assert len(job_pks) == tables.DEFAULT_JOB_BUCKETS  # 64 jobs of one tenant: every bucket takes some
    assert {tables.tenant_of(pk) for pk in job_pks} == {tenant}
    assert len(live) == JOBS + 1
    assert len(live_partitions) == tables.DEFAULT_JOB_BUCKETS  # one shard: no single live partition
    assert all(partition.startswith(f"{SHARD}#") for partition in live_partitions)
    # The idempotency marker is its own item under the tenant's bucket of the key; the job reads back.
    assert any(item["sk"] == tables.idempotency_sk("order-1") for item in items)
    assert store.get(tenant, keyed.job_id) == keyed
    assert {job.job_id for job in store.list_jobs(tenant, None, None, 100)[0]} == {*ids[:JOBS], keyed.job_id}
