"""Turns jobs and executions into DynamoDB items (low-level attribute-value form) and back."""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from hookline.adapters.dynamo import tables
from hookline.domain import constants
from hookline.domain.models import Execution, ExecutionOutcome, FlowControl, Job, JobStatus
from hookline.domain.reconcile import LiveJob

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()

Item = dict[str, Any]


def error_code(error: ClientError) -> str:
    """Returns the AWS error code of a failed call (e.g. ConditionalCheckFailedException)."""
    return str(error.response.get("Error", {}).get("Code", ""))


def attribute_names(known: Mapping[str, str], *expressions: str) -> dict[str, str]:
    """Returns ExpressionAttributeNames for exactly the placeholders the expressions use.

    DynamoDB rejects a name the expressions do not use, so the map is derived from the expressions.
    """
    return {p: known[p] for expression in expressions for p in re.findall(r"#\w+", expression)}


def live_index_page(
    client: Any,
    table: str,
    partition: str,
    start_key: dict[str, Any] | None,
    limit: int,
    sort_at_most: int | None = None,
    item_filter: tuple[str, dict[str, str], dict[str, Any]] | None = None,
) -> tuple[list[Item], Any]:
    """Returns one page of the live GSI's partition and the key to go on from (None at the end).

    With sort_at_most, only items whose live_due_ms is at most that (ascending, as the index orders them).
    item_filter is (FilterExpression, its names, its plain values): applied by DynamoDB after the page's
    `limit` items were read, so a page may hold fewer items and still carry a key to go on from.
    """
    condition = "#live_pk = :partition"
    values: dict[str, Any] = {":partition": partition}
    names = {"#live_pk": tables.LIVE_PK}
    if sort_at_most is not None:
        condition += " AND #live_sk <= :sort_at_most"
        values[":sort_at_most"] = sort_at_most
        names["#live_sk"] = tables.LIVE_SK
    extra: dict[str, Any] = {}
    if item_filter is not None:
        expression, filter_names, filter_values = item_filter
        extra["FilterExpression"] = expression
        names.update(filter_names)
        values.update(filter_values)
    request: dict[str, Any] = {
        "TableName": table,
        "IndexName": tables.LIVE_INDEX,
        "KeyConditionExpression": condition,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": to_attribute_values(values),
        "Limit": limit,
        **extra,
    }
    if start_key is not None:
        request["ExclusiveStartKey"] = start_key
    reply = client.query(**request)
    return reply.get("Items", []), reply.get("LastEvaluatedKey")


def to_attribute_values(values: dict[str, Any]) -> Item:
    """Serialises plain Python values (None values are dropped) into attribute values."""
    return {name: serialize(value) for name, value in values.items() if value is not None}


def from_attribute_values(item: Item) -> dict[str, Any]:
    """Deserialises attribute values, turning whole Decimals into ints."""
    return {name: deserialize(value) for name, value in item.items()}


# Every claim and finish serialises and deserialises a job's values; boto3's TypeSerializer and
# TypeDeserializer (checks through abstract base classes, a Decimal per number) were about a sixth of a
# hot-path call's CPU with the JSON client. The types the items hold are done here directly, with the same
# result (tests/unit/test_codec_fast_path.py compares them); anything else still goes through boto3's.
_MAX_EXACT_INT = 10**38  # DynamoDB numbers keep 38 digits; a longer int is boto3's to refuse


def serialize(value: Any) -> Any:
    """Returns value's attribute value, exactly as boto3's TypeSerializer does."""
    kind = type(value)
    if kind is str:
        return {"S": value}
    if kind is bool:
        return {"BOOL": value}
    if kind is int and -_MAX_EXACT_INT < value < _MAX_EXACT_INT:
        return {"N": str(value)}
    if kind is dict:
        return {"M": {key: serialize(inner) for key, inner in value.items()}}
    if value is None:
        return {"NULL": True}
    return _serializer.serialize(value)


def deserialize(value: Any) -> Any:
    """Returns an attribute value's Python value, as TypeDeserializer and _plain together do."""
    if "S" in value:
        return value["S"]
    if "N" in value:
        number = value["N"]
        digits = number[1:] if number[:1] == "-" else number
        if digits.isascii() and digits.isdigit():
            return int(number)
        return _plain(_deserializer.deserialize(value))
    if "M" in value:
        return {key: deserialize(inner) for key, inner in value["M"].items()}
    if "BOOL" in value:
        return value["BOOL"]
    if "NULL" in value:
        return None
    if "L" in value:
        return [deserialize(inner) for inner in value["L"]]
    return _plain(_deserializer.deserialize(value))


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def job_key(keyspace: tables.Keyspace, tenant: str, job_id: str) -> Item:
    """Returns the primary key of a job item (its tenant's bucket, and its id)."""
    return to_attribute_values(
        {tables.JOBS_PK: keyspace.job_pk(tenant, job_id), tables.JOBS_SK: tables.job_sk(job_id)}
    )


def job_to_item(job: Job, keyspace: tables.Keyspace) -> Item:
    """Returns the full item of a job, with the live-index attributes only while it is live."""
    values: dict[str, Any] = {
        tables.JOBS_PK: keyspace.job_pk(job.tenant, job.job_id),
        tables.JOBS_SK: tables.job_sk(job.job_id),
        "job_id": job.job_id,
        "status": job.status.value,
        "generation": job.generation,
        "attempt": job.attempt,
        "max_attempts": job.max_attempts,
        "url": job.url,
        "method": job.method,
        "headers": job.headers,
        "body": job.body,
        "due_ms": job.due_ms,
        "created_ms": job.created_ms,
        "updated_ms": job.updated_ms,
        "min_backoff_ms": job.min_backoff_ms,
        "max_backoff_ms": job.max_backoff_ms,
        "timeout_ms": job.timeout_ms,
        "shard": job.shard,
        "idempotency_key": job.idempotency_key,
        "flow": None if job.flow.is_empty else job.flow.encode(),
        "lease_expires_at_ms": job.lease_expires_at_ms,
        "last_status_code": job.last_status_code,
        "last_error": job.last_error,
        "schedule_id": job.schedule_id,
        "fire_time_ms": job.fire_time_ms,
        "attempt_base": job.attempt_base or None,
    }
    if job.status.is_live:
        values[tables.LIVE_PK] = keyspace.live_pk(job.shard, job.job_id)
        values[tables.LIVE_SK] = job.due_ms
    return to_attribute_values(values)


def item_to_job(item: Item) -> Job:
    """Returns the job an item holds."""
    v = from_attribute_values(item)
    return Job(
        tenant=tables.tenant_of(v[tables.JOBS_PK]),
        job_id=v["job_id"],
        status=JobStatus(v["status"]),
        generation=v["generation"],
        attempt=v["attempt"],
        max_attempts=v["max_attempts"],
        url=v["url"],
        method=v["method"],
        headers=dict(v.get("headers", {})),
        body=v.get("body", ""),
        due_ms=v["due_ms"],
        created_ms=v["created_ms"],
        updated_ms=v["updated_ms"],
        min_backoff_ms=v["min_backoff_ms"],
        max_backoff_ms=v["max_backoff_ms"],
        timeout_ms=v["timeout_ms"],
        shard=v["shard"],
        idempotency_key=v.get("idempotency_key"),
        flow=FlowControl.decode(v["flow"]) if v.get("flow") else FlowControl(),
        lease_expires_at_ms=v.get("lease_expires_at_ms"),
        last_status_code=v.get("last_status_code"),
        last_error=v.get("last_error"),
        schedule_id=v.get("schedule_id"),
        fire_time_ms=v.get("fire_time_ms"),
        attempt_base=v.get("attempt_base", 0),
    )


def item_to_live_job(item: Item) -> LiveJob:
    """Returns what reconciliation needs of a live job, from its item as the live GSI projects it."""
    v = from_attribute_values(item)
    return LiveJob(
        tenant=tables.tenant_of(v[tables.JOBS_PK]),
        job_id=v["job_id"],
        status=JobStatus(v["status"]),
        generation=v["generation"],
        due_ms=v["due_ms"],
        shard=v["shard"],
        flow=FlowControl.decode(v["flow"]) if v.get("flow") else FlowControl(),
        lease_expires_at_ms=v.get("lease_expires_at_ms"),
    )


def execution_to_map(execution: Execution) -> dict[str, Any]:
    """Returns an attempt's record as a map attribute value, for a job item's FIRST_EXECUTION.

    It holds what the execution item holds but its key, job id and expiry (the job item's own).
    """
    return {"M": to_attribute_values({tables.EXECUTIONS_SK: execution.attempt, **_outcome_fields(execution)})}


def _outcome_fields(execution: Execution) -> dict[str, Any]:
    """Returns what an attempt's record holds besides its key, job id and expiry."""
    return {
        "generation": execution.generation,
        "started_ms": execution.started_ms,
        "finished_ms": execution.finished_ms,
        "latency_ms": execution.latency_ms,
        "outcome": execution.outcome.value,
        "status_code": execution.status_code,
        "error_class": execution.error_class,
        "error_message": execution.error_message,
        "response_preview": execution.response_preview,
    }


def first_execution(tenant: str, item: Item) -> Execution | None:
    """Returns the record of attempt 1 a job item holds (None: not ended yet, or an item of an older
    version, which kept it in the executions table)."""
    value = item.get(tables.FIRST_EXECUTION)
    if value is None or "M" not in value:
        return None
    job_id = item.get("job_id", {}).get("S", "")
    return item_to_execution(tenant, {**value["M"], "job_id": {"S": job_id}})


def execution_to_item(execution: Execution) -> Item:
    """Returns the item recording one attempt, expiring after the retention period."""
    return to_attribute_values(
        {
            tables.EXECUTIONS_PK: tables.execution_pk(execution.tenant, execution.job_id),
            tables.EXECUTIONS_SK: execution.attempt,
            "job_id": execution.job_id,
            **_outcome_fields(execution),
            tables.TTL_ATTRIBUTE: execution.finished_ms // 1000 + constants.EXECUTION_RETENTION_S,
        }
    )


def item_to_execution(tenant: str, item: Item) -> Execution:
    """Returns the attempt an execution item records."""
    v = from_attribute_values(item)
    return Execution(
        tenant=tenant,
        job_id=v["job_id"],
        attempt=v[tables.EXECUTIONS_SK],
        generation=v["generation"],
        started_ms=v["started_ms"],
        finished_ms=v["finished_ms"],
        outcome=ExecutionOutcome(v["outcome"]),
        latency_ms=v.get("latency_ms", 0),
        status_code=v.get("status_code"),
        error_class=v.get("error_class"),
        error_message=v.get("error_message"),
        response_preview=v.get("response_preview"),
    )
