"""Does the schedule items of the jobs table, the jobs their occurrences create, and per-schedule listings.

Item layout (pk = tenant for these; an instance's job item is keyed as any job, tables.Keyspace):
- `sched#<schedule id>`: the schedule. While active (not paused) it also sits in the sparse `live` GSI under
  live_shard = "cron:<shard>" (a string no job uses: jobs use "<shard>#<bucket>"), so reconciliation can
  list a shard's active schedules without a new index. Its live_due_ms is the next fire time as of the
  item's last write, not kept current per occurrence (that would double the writes); nothing reads it as a
  due time.
- `sjob#<schedule id>#<job id>`: one listing item per instance. Instance ids are time-ordered by fire time,
  so a Query on the prefix lists a schedule's instances newest first in pages, however many jobs the
  tenant has (a filter on the tenant's jobs would read all of them).
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from hookline.adapters.dynamo import codec, tables
from hookline.domain import constants
from hookline.domain.cron.schedule import CatchUp, Schedule, template_text
from hookline.domain.errors import Conflict, NotFound
from hookline.domain.models import Job

SCHEDULE_JOB_SK_PREFIX = "sjob#"
# A listing item outlives its job's retention (terminal jobs expire after TERMINAL_JOB_RETENTION_S);
# listing pages skip ids whose job is gone.
LISTING_RETENTION_S = constants.TERMINAL_JOB_RETENTION_S + 7 * 24 * 3600
BATCH_GET_MAX = 100

# Named conditions; attribute names always go through ExpressionAttributeNames.
ITEM_IS_NEW = "attribute_not_exists(#pk)"
ITEM_EXISTS = "attribute_exists(#pk)"
SAME_VERSION = "attribute_exists(#pk) AND #version = :expected_version"

_NAMES = {
    "#pk": tables.JOBS_PK,
    "#sk": tables.JOBS_SK,
    "#version": "version",
    "#live_pk": tables.LIVE_PK,
    "#live_sk": tables.LIVE_SK,
}


def _names(*expressions: str) -> dict[str, str]:
    return codec.attribute_names(_NAMES, *expressions)


def cron_live_shard(shard: int) -> str:
    """Returns the live GSI partition of a shard's active schedules."""
    return f"cron:{shard}"


def schedule_sk(schedule_id: str) -> str:
    """Returns the sort key of a schedule item."""
    return f"{tables.SCHEDULE_SK_PREFIX}{schedule_id}"


def listing_prefix(schedule_id: str) -> str:
    """Returns the sort-key prefix of a schedule's instance listing items."""
    return f"{SCHEDULE_JOB_SK_PREFIX}{schedule_id}#"


def schedule_to_item(schedule: Schedule, next_fire_ms: int | None) -> codec.Item:
    """Returns the full item of a schedule; in the live GSI only while active."""
    values: dict[str, Any] = {
        tables.JOBS_PK: schedule.tenant,
        tables.JOBS_SK: schedule_sk(schedule.schedule_id),
        "schedule_id": schedule.schedule_id,
        "expression": schedule.expression,
        "timezone": schedule.timezone,
        # JSON text: a job body may hold floats, which DynamoDB's number type does not take as such.
        "job": template_text(schedule.job),
        "catch_up": schedule.catch_up.value,
        "paused": schedule.paused,
        "version": schedule.version,
        "shard": schedule.shard,
        "created_ms": schedule.created_ms,
        "updated_ms": schedule.updated_ms,
        "start_ms": schedule.start_ms,
        "end_ms": schedule.end_ms,
    }
    if not schedule.paused and next_fire_ms is not None:
        values[tables.LIVE_PK] = cron_live_shard(schedule.shard)
        values[tables.LIVE_SK] = next_fire_ms
    return codec.to_attribute_values(values)


def item_to_schedule(item: codec.Item) -> Schedule:
    """Returns the schedule an item holds."""
    v = codec.from_attribute_values(item)
    return Schedule(
        tenant=v[tables.JOBS_PK],
        schedule_id=v["schedule_id"],
        expression=v["expression"],
        timezone=v["timezone"],
        job=json.loads(v["job"]),
        catch_up=CatchUp(v["catch_up"]),
        paused=bool(v["paused"]),
        version=v["version"],
        shard=v["shard"],
        created_ms=v["created_ms"],
        updated_ms=v["updated_ms"],
        start_ms=v.get("start_ms"),
        end_ms=v.get("end_ms"),
    )


class DynamoScheduleStore:
    """Reads and writes schedules and their instances; every write is conditional."""

    def __init__(self, client: Any, jobs_table: str, keyspace: tables.Keyspace | None = None) -> None:
        self._client = client
        self._jobs = jobs_table
        self._keyspace = keyspace or tables.Keyspace()

    def create(self, schedule: Schedule, next_fire_ms: int | None) -> None:
        """Stores a new schedule (its id is fresh, so the condition only guards against a reused id)."""
        self._client.put_item(
            TableName=self._jobs,
            Item=schedule_to_item(schedule, next_fire_ms),
            ConditionExpression=ITEM_IS_NEW,
            ExpressionAttributeNames=_names(ITEM_IS_NEW),
        )

    def get(self, tenant: str, schedule_id: str) -> Schedule:
        """Returns the tenant's schedule; raises NotFound (also for another tenant's id)."""
        reply = self._client.get_item(
            TableName=self._jobs, Key=self._key(tenant, schedule_id), ConsistentRead=True
        )
        if "Item" not in reply:
            raise NotFound(f"schedule {schedule_id} not found")
        return item_to_schedule(reply["Item"])

    def replace(self, schedule: Schedule, expected_version: int, next_fire_ms: int | None) -> None:
        """Writes a changed schedule if it is still at expected_version; raises NotFound or Conflict."""
        try:
            self._client.put_item(
                TableName=self._jobs,
                Item=schedule_to_item(schedule, next_fire_ms),
                ConditionExpression=SAME_VERSION,
                ExpressionAttributeNames=_names(SAME_VERSION),
                ExpressionAttributeValues=codec.to_attribute_values({":expected_version": expected_version}),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if codec.error_code(error) != "ConditionalCheckFailedException":
                raise
            if "Item" not in dict(error.response):
                raise NotFound(f"schedule {schedule.schedule_id} not found") from error
            raise Conflict(
                f"schedule {schedule.schedule_id} changed concurrently; read it and retry"
            ) from error

    def delete(self, tenant: str, schedule_id: str) -> Schedule:
        """Deletes a schedule and returns it as it was; raises NotFound. Its instances stay, as jobs."""
        try:
            reply = self._client.delete_item(
                TableName=self._jobs,
                Key=self._key(tenant, schedule_id),
                ConditionExpression=ITEM_EXISTS,
                ExpressionAttributeNames=_names(ITEM_EXISTS),
                ReturnValues="ALL_OLD",
            )
        except ClientError as error:
            if codec.error_code(error) == "ConditionalCheckFailedException":
                raise NotFound(f"schedule {schedule_id} not found") from error
            raise
        return item_to_schedule(reply["Attributes"])

    def list_page(self, tenant: str, after_id: str | None, limit: int) -> tuple[list[Schedule], str | None]:
        """Returns a page of the tenant's schedules, newest first, and the id to go on after (or None)."""
        items, last = self._query_prefix(tenant, tables.SCHEDULE_SK_PREFIX, after_id, limit)
        return [item_to_schedule(item) for item in items], last

    def active(self, shard: int, start_key: dict[str, Any] | None, limit: int) -> tuple[list[Schedule], Any]:
        """Returns a page of the shard's active schedules (live GSI) and the key to go on from (or None)."""
        items, last_key = codec.live_index_page(
            self._client, self._jobs, cron_live_shard(shard), start_key, limit
        )
        return [item_to_schedule(item) for item in items], last_key

    def retire(self, schedule: Schedule) -> None:
        """Takes a schedule with no occurrence left (past end_at) out of the live GSI, if still unchanged."""
        update = "REMOVE #live_pk, #live_sk"
        try:
            self._client.update_item(
                TableName=self._jobs,
                Key=self._key(schedule.tenant, schedule.schedule_id),
                UpdateExpression=update,
                ConditionExpression=SAME_VERSION,
                ExpressionAttributeNames=_names(update, SAME_VERSION),
                ExpressionAttributeValues=codec.to_attribute_values({":expected_version": schedule.version}),
            )
        except ClientError as error:
            if codec.error_code(error) != "ConditionalCheckFailedException":
                raise
            # Changed or deleted meanwhile: the newer version decides whether it is live.

    def create_instance(self, job: Job) -> bool:
        """Stores an occurrence's job unless its (derived) id exists; True when this call created it.

        The conditional put is what makes an occurrence fire once: a second promoter, a retry after a
        crash or a replayed tick derives the same id and loses here. The listing item is written after the
        job, on both outcomes, so a crash between the two writes is healed by whoever retries.
        """
        assert job.schedule_id is not None and job.fire_time_ms is not None
        created = True
        try:
            self._client.put_item(
                TableName=self._jobs,
                Item=codec.job_to_item(job, self._keyspace),
                ConditionExpression=ITEM_IS_NEW,
                ExpressionAttributeNames=_names(ITEM_IS_NEW),
            )
        except ClientError as error:
            if codec.error_code(error) != "ConditionalCheckFailedException":
                raise
            created = False  # already created: by design not an error
        listing = {
            tables.JOBS_PK: job.tenant,
            tables.JOBS_SK: f"{listing_prefix(job.schedule_id)}{job.job_id}",
            "job_id": job.job_id,
            "fire_time_ms": job.fire_time_ms,
            tables.TTL_ATTRIBUTE: job.fire_time_ms // 1000 + LISTING_RETENTION_S,
        }
        self._client.put_item(TableName=self._jobs, Item=codec.to_attribute_values(listing))
        return created

    def instances(
        self, tenant: str, schedule_id: str, after_job_id: str | None, limit: int
    ) -> tuple[list[Job], str | None]:
        """Returns a page of the jobs a schedule created, newest first, and the id to go on after."""
        items, last = self._query_prefix(tenant, listing_prefix(schedule_id), after_job_id, limit)
        ids = [codec.from_attribute_values(item)["job_id"] for item in items]
        jobs = {job.job_id: job for job in self._batch_get_jobs(tenant, ids)}
        return [jobs[job_id] for job_id in ids if job_id in jobs], last

    def last_fire_ms(self, tenant: str, schedule_id: str) -> int | None:
        """Returns the fire time of the newest instance the schedule created, or None."""
        items, _ = self._query_prefix(tenant, listing_prefix(schedule_id), None, 1)
        return codec.from_attribute_values(items[0])["fire_time_ms"] if items else None

    def _query_prefix(
        self, tenant: str, prefix: str, after_id: str | None, limit: int
    ) -> tuple[list[codec.Item], str | None]:
        request: dict[str, Any] = {
            "TableName": self._jobs,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "ExpressionAttributeNames": _names("#pk #sk"),
            "ExpressionAttributeValues": codec.to_attribute_values({":pk": tenant, ":prefix": prefix}),
            "ScanIndexForward": False,
            "Limit": limit,
            "ConsistentRead": True,
        }
        if after_id is not None:
            request["ExclusiveStartKey"] = codec.to_attribute_values(
                {tables.JOBS_PK: tenant, tables.JOBS_SK: f"{prefix}{after_id}"}
            )
        reply = self._client.query(**request)
        items: list[codec.Item] = reply.get("Items", [])
        if "LastEvaluatedKey" not in reply or not items:
            return items, None
        return items, str(codec.from_attribute_values(items[-1])[tables.JOBS_SK])[len(prefix) :]

    def _batch_get_jobs(self, tenant: str, job_ids: list[str]) -> list[Job]:
        jobs: list[Job] = []
        for start in range(0, len(job_ids), BATCH_GET_MAX):
            keys = [
                codec.job_key(self._keyspace, tenant, job_id)
                for job_id in job_ids[start : start + BATCH_GET_MAX]
            ]
            request: dict[str, Any] = {self._jobs: {"Keys": keys, "ConsistentRead": True}}
            while request:
                reply = self._client.batch_get_item(RequestItems=request)
                jobs += [codec.item_to_job(item) for item in reply.get("Responses", {}).get(self._jobs, [])]
                request = reply.get("UnprocessedKeys") or {}
        return jobs

    def _key(self, tenant: str, schedule_id: str) -> codec.Item:
        return codec.to_attribute_values({tables.JOBS_PK: tenant, tables.JOBS_SK: schedule_sk(schedule_id)})
