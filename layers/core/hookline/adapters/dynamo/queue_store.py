"""Does the named queue items of the jobs table: `queue#<name>` under the tenant's partition (pk = tenant).

A queue's item is the truth about it; Redis holds an expiring copy of its live settings (adapters/redis/
queues.py). Every write is conditional on the version the writer read, when it gives one.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from hookline.adapters.dynamo import codec, tables
from hookline.domain.errors import Conflict, QueueNotFound
from hookline.domain.queues import Queue

# Named conditions; attribute names always go through ExpressionAttributeNames.
ITEM_EXISTS = "attribute_exists(#pk)"
SAME_VERSION = "attribute_exists(#pk) AND #version = :expected_version"
_NAMES = {"#pk": tables.JOBS_PK, "#sk": tables.JOBS_SK, "#version": "version"}
_OPTIONAL = ("max_attempts", "min_backoff_ms", "max_backoff_ms", "timeout_ms")


def _names(*expressions: str) -> dict[str, str]:
    return codec.attribute_names(_NAMES, *expressions)


def queue_sk(name: str) -> str:
    """Returns the sort key of a queue item."""
    return f"{tables.QUEUE_SK_PREFIX}{name}"


def queue_to_item(queue: Queue) -> codec.Item:
    """Returns the full item of a queue (an unset default is left out)."""
    values: dict[str, Any] = {
        tables.JOBS_PK: queue.tenant,
        tables.JOBS_SK: queue_sk(queue.name),
        "name": queue.name,
        "rate_limit": queue.rate_limit,
        "rate_period_ms": queue.rate_period_ms,
        "max_concurrency": queue.max_concurrency,
        "paused_since_ms": queue.paused_since_ms,
        "version": queue.version,
        "created_ms": queue.created_ms,
        "updated_ms": queue.updated_ms,
    }
    values.update({field: getattr(queue, field) for field in _OPTIONAL if getattr(queue, field) is not None})
    return codec.to_attribute_values(values)


def item_to_queue(item: codec.Item) -> Queue:
    """Returns the queue an item holds."""
    v = codec.from_attribute_values(item)
    return Queue(
        tenant=v[tables.JOBS_PK],
        name=v["name"],
        rate_limit=int(v["rate_limit"]),
        rate_period_ms=int(v["rate_period_ms"]),
        max_concurrency=int(v["max_concurrency"]),
        paused_since_ms=int(v["paused_since_ms"]),
        version=int(v["version"]),
        created_ms=int(v["created_ms"]),
        updated_ms=int(v["updated_ms"]),
        **{field: int(v[field]) for field in _OPTIONAL if v.get(field) is not None},
    )


class DynamoQueueStore:
    """Reads and writes named queues (hookline.ports.QueueStore)."""

    def __init__(self, client: Any, jobs_table: str) -> None:
        self._client = client
        self._jobs = jobs_table

    def put(self, queue: Queue, expected_version: int | None) -> None:
        """Writes a queue; with expected_version, only over that version (NotFound, Conflict otherwise)."""
        request: dict[str, Any] = {"TableName": self._jobs, "Item": queue_to_item(queue)}
        if expected_version is not None:
            request.update(
                ConditionExpression=SAME_VERSION,
                ExpressionAttributeNames=_names(SAME_VERSION),
                ExpressionAttributeValues=codec.to_attribute_values({":expected_version": expected_version}),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        try:
            self._client.put_item(**request)
        except ClientError as error:
            if codec.error_code(error) != "ConditionalCheckFailedException":
                raise
            if "Item" not in dict(error.response):
                raise QueueNotFound(f"queue {queue.name} not found") from error
            raise Conflict(
                f"queue {queue.name} is not at version {expected_version}; read it and retry"
            ) from error

    def get(self, tenant: str, name: str) -> Queue:
        """Returns the tenant's queue; raises QueueNotFound."""
        reply = self._client.get_item(TableName=self._jobs, Key=self._key(tenant, name), ConsistentRead=True)
        if "Item" not in reply:
            raise QueueNotFound(f"queue {name} not found")
        return item_to_queue(reply["Item"])

    def list_all(self, tenant: str) -> list[Queue]:
        """Returns every queue of the tenant, by name (a tenant has few: all pages are read)."""
        request: dict[str, Any] = {
            "TableName": self._jobs,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "ExpressionAttributeNames": _names("#pk #sk"),
            "ExpressionAttributeValues": codec.to_attribute_values(
                {":pk": tenant, ":prefix": tables.QUEUE_SK_PREFIX}
            ),
            "ConsistentRead": True,
        }
        queues: list[Queue] = []
        while True:
            reply = self._client.query(**request)
            queues += [item_to_queue(item) for item in reply.get("Items", [])]
            if "LastEvaluatedKey" not in reply:
                return queues
            request["ExclusiveStartKey"] = reply["LastEvaluatedKey"]

    def delete(self, tenant: str, name: str) -> Queue:
        """Deletes a queue and returns it as it was; raises QueueNotFound."""
        try:
            reply = self._client.delete_item(
                TableName=self._jobs,
                Key=self._key(tenant, name),
                ConditionExpression=ITEM_EXISTS,
                ExpressionAttributeNames=_names(ITEM_EXISTS),
                ReturnValues="ALL_OLD",
            )
        except ClientError as error:
            if codec.error_code(error) == "ConditionalCheckFailedException":
                raise QueueNotFound(f"queue {name} not found") from error
            raise
        return item_to_queue(reply["Attributes"])

    def _key(self, tenant: str, name: str) -> codec.Item:
        return codec.to_attribute_values({tables.JOBS_PK: tenant, tables.JOBS_SK: queue_sk(name)})
