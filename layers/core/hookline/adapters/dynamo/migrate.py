"""Moves the jobs table's jobs and idempotency markers to the keys of a Keyspace (`hookline migrate-keys`).

Two layouts are read: the one before buckets (pk "<tenant>", live_shard "<shard>") and a bucketed one of
any count (pk "<tenant>#<bucket>", live_shard "<shard>#<bucket>"). Tenant ids hold no "#", so a pk without
one is the old layout. Schedules and their listing items stay under "<tenant>" in both: they are skipped.

Each item that is not where the keyspace puts it is moved by one transaction: put it under its new key (on
condition that nothing is there) and delete the old one (on condition that it is unchanged: same status,
generation and updated_ms for a job, same job for a marker). So a crash or an interruption leaves every item
in exactly one place, and running again goes on where it stopped (moved items are skipped). An item changed
meanwhile (the functions were not stopped) is left where it is and counted; run again once they are stopped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from hookline.adapters.dynamo import codec, tables

CRON_LIVE_PREFIX = "cron:"


@dataclass
class MigrationReport:
    """What one pass over the jobs table did."""

    scanned: int = 0
    moved: int = 0
    in_place: int = 0  # already under the keyspace's keys
    changed: int = 0  # changed while being moved, or its new key taken: left in place, run again

    @property
    def complete(self) -> bool:
        """Tells whether every job and marker is now where the keyspace puts it."""
        return self.changed == 0


def item_tenant(pk: str) -> str:
    """Returns the tenant of a job's or marker's pk, in either layout."""
    return tables.tenant_of(pk) if "#" in pk else pk


class KeyMigration:
    """Moves job and marker items to a keyspace's keys; idempotent and resumable."""

    def __init__(
        self, client: Any, jobs_table: str, keyspace: tables.Keyspace, dry_run: bool = False
    ) -> None:
        self._client = client
        self._table = jobs_table
        self._keyspace = keyspace
        self._dry_run = dry_run

    def run(self, page: int = 100) -> MigrationReport:
        """Scans the whole table once, moving what is out of place; returns the counts."""
        report = MigrationReport()
        request: dict[str, Any] = {"TableName": self._table, "Limit": page, "ConsistentRead": True}
        while True:
            reply = self._client.scan(**request)
            for item in reply.get("Items", []):
                self._migrate(item, report)
            if "LastEvaluatedKey" not in reply:
                return report
            request["ExclusiveStartKey"] = reply["LastEvaluatedKey"]

    def _migrate(self, item: codec.Item, report: MigrationReport) -> None:
        values = codec.from_attribute_values(item)
        sk = str(values[tables.JOBS_SK])
        pk = str(values[tables.JOBS_PK])
        if sk.startswith(tables.JOB_SK_PREFIX):
            job_id = str(values["job_id"])
            target = self._keyspace.job_pk(item_tenant(pk), job_id)
            live = values.get(tables.LIVE_PK)
            target_live = None if live is None else self._keyspace.live_pk(int(values["shard"]), job_id)
            unchanged = {"#status": "status", "#generation": "generation", "#updated": "updated_ms"}
        elif sk.startswith(tables.IDEMPOTENCY_SK_PREFIX):
            target = self._keyspace.marker_pk(item_tenant(pk), sk.removeprefix(tables.IDEMPOTENCY_SK_PREFIX))
            live = target_live = None
            unchanged = {"#job_id": "job_id"}
        else:
            return  # schedules and listing items: under "<tenant>" in every layout
        report.scanned += 1
        if pk == target and live == target_live:
            report.in_place += 1
            return
        if self._dry_run:
            report.moved += 1
            return
        moved = dict(item)
        moved[tables.JOBS_PK] = {"S": target}
        if target_live is not None:
            moved[tables.LIVE_PK] = {"S": target_live}
        condition = " AND ".join(f"{name} = :{name[1:]}" for name in unchanged)
        old_values = codec.to_attribute_values(
            {f":{name[1:]}": values[attr] for name, attr in unchanged.items()}
        )
        if pk == target:
            # Same item, only its live partition is out of place (it cannot happen with a moved pk).
            operations = [
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": moved,
                        "ConditionExpression": condition,
                        "ExpressionAttributeNames": unchanged,
                        "ExpressionAttributeValues": old_values,
                    }
                }
            ]
        else:
            operations = [
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": moved,
                        "ConditionExpression": "attribute_not_exists(#pk)",
                        "ExpressionAttributeNames": {"#pk": tables.JOBS_PK},
                    }
                },
                {
                    "Delete": {
                        "TableName": self._table,
                        "Key": {tables.JOBS_PK: item[tables.JOBS_PK], tables.JOBS_SK: item[tables.JOBS_SK]},
                        "ConditionExpression": condition,
                        "ExpressionAttributeNames": unchanged,
                        "ExpressionAttributeValues": old_values,
                    }
                },
            ]
        try:
            self._client.transact_write_items(TransactItems=operations)
        except ClientError as error:
            if codec.error_code(error) != "TransactionCanceledException":
                raise
            # A condition failed (the item changed, or its new key is taken) or DynamoDB cancelled for a
            # transient reason: nothing was written; the item stays where it was for the next run.
            report.changed += 1
            return
        report.moved += 1
