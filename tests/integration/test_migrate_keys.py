"""`hookline migrate-keys` on moto: a table written before buckets, moved to 8 buckets, then to 4.

The items before buckets are written as that version wrote them (pk "<tenant>", live_shard "<shard>"). After
the move the stores of the new count find every job and marker (get, list, the live index, an idempotent
retry), schedules are untouched, a second run moves nothing, and the count is recorded for the functions.
"""

from __future__ import annotations

import dataclasses
import io
from typing import Any

import pytest

from hookline.adapters.dynamo import codec, tables
from hookline.adapters.dynamo.job_store import DynamoJobStore
from hookline.adapters.dynamo.migrate import KeyMigration
from hookline.adapters.dynamo.schedule_store import DynamoScheduleStore
from hookline.cli.migrate import migrate_keys
from hookline.domain.cron.schedule import CatchUp, Schedule
from hookline.domain.errors import JobBucketsChanged, NotFound
from hookline.domain.ids import new_id
from hookline.domain.models import FlowControl, Job, JobStatus
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from hookline_client.cli import main

pytestmark = pytest.mark.integration

NOW = 1_767_225_600_000
TENANTS = ("acme", "globex")
SHARD = 2


def job(tenant: str, n: int, status: JobStatus = JobStatus.SCHEDULED, key: str | None = None) -> Job:
    return Job(
        tenant=tenant,
        job_id=new_id(NOW + n),
        status=status,
        generation=1,
        attempt=0,
        max_attempts=3,
        url="https://example.com/hook",
        method="POST",
        headers={},
        body='{"n":1}',
        due_ms=NOW + 1_000 + n,
        created_ms=NOW,
        updated_ms=NOW,
        min_backoff_ms=1_000,
        max_backoff_ms=60_000,
        timeout_ms=5_000,
        shard=SHARD,
        idempotency_key=key,
        flow=FlowControl(),
    )


def legacy_item(value: Job) -> dict[str, Any]:
    """Returns the job's item as the version before buckets wrote it."""
    item = codec.job_to_item(value, tables.Keyspace(1))
    item[tables.JOBS_PK] = {"S": value.tenant}
    if tables.LIVE_PK in item:
        item[tables.LIVE_PK] = {"S": str(value.shard)}
    return item


def legacy_marker(value: Job) -> dict[str, Any]:
    assert value.idempotency_key is not None
    return codec.to_attribute_values(
        {
            tables.JOBS_PK: value.tenant,
            tables.JOBS_SK: tables.idempotency_sk(value.idempotency_key),
            "job_id": value.job_id,
            "request_hash": "hash",
            tables.TTL_ATTRIBUTE: NOW // 1000 + 3600,
        }
    )


def stores(settings: Settings, buckets: int) -> DynamoJobStore:
    container = Container(dataclasses.replace(settings, job_buckets=buckets))
    return DynamoJobStore(
        container.dynamodb, settings.jobs_table, settings.executions_table, keyspace=tables.Keyspace(buckets)
    )


def live_ids(store: DynamoJobStore) -> set[str]:
    found: set[str] = set()
    cursor = None
    while True:
        jobs, cursor = store.live_jobs(SHARD, cursor, 100)
        found |= {j.job_id for j in jobs}
        if cursor is None:
            return found


def test_given_a_table_before_buckets_when_migrated_then_every_job_marker_and_live_entry_is_found(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = Container(settings).dynamodb
    jobs = [
        job(t, n, JobStatus.SCHEDULED if n % 3 else JobStatus.SUCCEEDED) for t in TENANTS for n in range(12)
    ]
    keyed = job("acme", 99, key="order-7")
    for value in [*jobs, keyed]:
        client.put_item(TableName=settings.jobs_table, Item=legacy_item(value))
    client.put_item(TableName=settings.jobs_table, Item=legacy_marker(keyed))
    schedule = Schedule(
        tenant="acme",
        schedule_id="01S0000000",
        expression="*/5 * * * *",
        timezone="UTC",
        job={"url": "https://example.com/r"},
        catch_up=CatchUp.SKIP,
        paused=False,
        version=1,
        shard=SHARD,
        created_ms=NOW,
        updated_ms=NOW,
    )
    DynamoScheduleStore(client, settings.jobs_table).create(schedule, NOW + 300_000)
    out = io.StringIO()

    assert migrate_keys(settings, 8, dry_run=True, out=out) == 0
    assert "would move 26" in out.getvalue()
    with pytest.raises(NotFound):  # nothing moved yet: the new keys do not see the old layout
        stores(settings, 8).get("acme", keyed.job_id)

    assert migrate_keys(settings, 8, out=out) == 0

    store = stores(settings, 8)
    for value in [*jobs, keyed]:
        assert store.get(value.tenant, value.job_id) == value
    listed, after = store.list_jobs("acme", None, None, 100)
    assert [j.job_id for j in listed] == sorted(
        [j.job_id for j in [*jobs, keyed] if j.tenant == "acme"], reverse=True
    )
    assert after is None
    assert live_ids(store) == {j.job_id for j in [*jobs, keyed] if j.status is JobStatus.SCHEDULED}
    again, created = store.create(job("acme", 100, key="order-7"), "hash", NOW)  # the marker moved too
    assert (again, created) == (keyed, False)
    assert DynamoScheduleStore(client, settings.jobs_table).get("acme", schedule.schedule_id) == schedule
    pks = {codec.from_attribute_values(i)["pk"] for i in client.scan(TableName=settings.jobs_table)["Items"]}
    assert "globex" not in pks and len({pk for pk in pks if pk.startswith("globex#")}) > 1
    # Resumable and idempotent: a second pass finds everything in place; the count is recorded.
    report = KeyMigration(client, settings.jobs_table, tables.Keyspace(8)).run()
    assert (report.moved, report.in_place, report.changed) == (0, 26, 0)
    assert Container(dataclasses.replace(settings, job_buckets=8)).check_buckets().buckets == 8
    with pytest.raises(JobBucketsChanged):
        Container(dataclasses.replace(settings, job_buckets=4)).check_buckets()

    # Another count: the same command moves the items again, and the functions then start with it.
    for name, text in (
        ("HOOKLINE_JOBS_TABLE", settings.jobs_table),
        ("HOOKLINE_API_KEYS_TABLE", settings.api_keys_table),
        ("HOOKLINE_AWS_ENDPOINT", str(settings.aws_endpoint_url)),
    ):
        monkeypatch.setenv(name, text)
    assert main(["migrate-keys", "--buckets", "4"]) == 0
    four = stores(settings, 4)
    assert {j.job_id for j in four.list_jobs("globex", None, None, 100)[0]} == {
        j.job_id for j in jobs if j.tenant == "globex"
    }
    assert live_ids(four) == {j.job_id for j in [*jobs, keyed] if j.status is JobStatus.SCHEDULED}
    assert Container(dataclasses.replace(settings, job_buckets=4)).check_buckets().buckets == 4


def test_given_a_job_changed_while_moving_then_it_stays_in_place_and_the_count_is_not_recorded(
    settings: Settings,
) -> None:
    client = Container(settings).dynamodb
    value = job("acme", 1)
    client.put_item(TableName=settings.jobs_table, Item=legacy_item(value))

    class ChangingClient:
        """Lets the scan read the item, then changes it before the move (a function still running)."""

        def __getattr__(self, name: str) -> Any:
            return getattr(client, name)

        def transact_write_items(self, **request: Any) -> Any:
            client.update_item(
                TableName=settings.jobs_table,
                Key={tables.JOBS_PK: {"S": "acme"}, tables.JOBS_SK: {"S": tables.job_sk(value.job_id)}},
                UpdateExpression="SET updated_ms = :now",
                ExpressionAttributeValues={":now": {"N": str(NOW + 5)}},
            )
            return client.transact_write_items(**request)

    report = KeyMigration(ChangingClient(), settings.jobs_table, tables.Keyspace(8)).run()

    assert (report.moved, report.changed, report.complete) == (0, 1, False)
    items = client.scan(TableName=settings.jobs_table)["Items"]
    assert [codec.from_attribute_values(i)["pk"] for i in items] == ["acme"]  # one copy, where it was
