"""The log of jobs written while Redis did not answer (hookline.ports.UnindexedLog), in the API keys table.

One item per shard, under a key id no API key can have (`deployment#unindexed#<shard>`):

- `jobs`: a string set of `<due_ms> <member>` (a member has no space), at most MAX_NOTED entries;
- `overflow`: true once a note did not fit: the reaper then reads the shard's every live job instead;
- `version`: grows with every note, so the reaper deletes the item only if nothing was noted after its read.

Writes happen only while Redis is failing, so the item is absent nearly always, and the reaper's read of it
each second is one BatchGetItem of small (or no) items.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from hookline.adapters.dynamo import codec, tables
from hookline.domain.models import Member
from hookline.domain.reconcile import UnindexedJob, UnindexedJobs

# 2,000 entries of about 80 bytes stay far below DynamoDB's 400 KB item limit.
MAX_NOTED = 2_000
BATCH_GET_LIMIT = 100  # keys per BatchGetItem


class DynamoUnindexedLog:
    """Notes, reads and clears each shard's jobs that could not be indexed."""

    def __init__(self, client: Any, table: str, max_noted: int = MAX_NOTED) -> None:
        self._client = client
        self._table = table
        self._max_noted = max_noted

    def note_unindexed(self, member: Member, shard: int, due_ms: int, now_ms: int) -> None:
        """Adds the job to the shard's note; once the note is full, marks it overflowed instead."""
        key = {tables.API_KEYS_PK: {"S": tables.unindexed_key(shard)}}
        try:
            self._client.update_item(
                TableName=self._table,
                Key=key,
                UpdateExpression="ADD #jobs :job, #version :one SET #updated = :now",
                ConditionExpression="attribute_not_exists(#jobs) OR size(#jobs) < :max",
                ExpressionAttributeNames={"#jobs": "jobs", "#version": "version", "#updated": "updated_ms"},
                ExpressionAttributeValues={
                    ":job": {"SS": [f"{due_ms} {member.encode()}"]},
                    ":one": {"N": "1"},
                    ":now": {"N": str(now_ms)},
                    ":max": {"N": str(self._max_noted)},
                },
            )
        except ClientError as error:
            if codec.error_code(error) != "ConditionalCheckFailedException":
                raise
            self._client.update_item(
                TableName=self._table,
                Key=key,
                UpdateExpression="ADD #version :one SET #overflow = :true, #updated = :now",
                ExpressionAttributeNames={
                    "#version": "version",
                    "#overflow": "overflow",
                    "#updated": "updated_ms",
                },
                ExpressionAttributeValues={
                    ":one": {"N": "1"},
                    ":true": {"BOOL": True},
                    ":now": {"N": str(now_ms)},
                },
            )

    def unindexed(self, shards: Sequence[int]) -> list[UnindexedJobs]:
        """Returns the shards' notes that exist (consistent reads)."""
        found: list[UnindexedJobs] = []
        for start in range(0, len(shards), BATCH_GET_LIMIT):
            keys: list[dict[str, Any]] = [
                {tables.API_KEYS_PK: {"S": tables.unindexed_key(shard)}}
                for shard in shards[start : start + BATCH_GET_LIMIT]
            ]
            request: dict[str, Any] = {self._table: {"Keys": keys, "ConsistentRead": True}}
            while request:
                reply = self._client.batch_get_item(RequestItems=request)
                found.extend(_note(item) for item in reply.get("Responses", {}).get(self._table, []))
                # Keys DynamoDB did not get to (throttling) are asked again; a persistent failure raises.
                request = reply.get("UnprocessedKeys") or {}
        return sorted(found, key=lambda note: note.shard)

    def clear_unindexed(self, shard: int, version: int) -> bool:
        """Deletes the shard's note if no job was noted since it was read at version."""
        try:
            self._client.delete_item(
                TableName=self._table,
                Key={tables.API_KEYS_PK: {"S": tables.unindexed_key(shard)}},
                ConditionExpression="#version = :version",
                ExpressionAttributeNames={"#version": "version"},
                ExpressionAttributeValues={":version": {"N": str(version)}},
            )
        except ClientError as error:
            if codec.error_code(error) != "ConditionalCheckFailedException":
                raise
            return False
        return True


def _note(item: dict[str, Any]) -> UnindexedJobs:
    shard = int(item[tables.API_KEYS_PK]["S"].removeprefix(tables.UNINDEXED_KEY_PREFIX))
    jobs = []
    for entry in sorted(item.get("jobs", {}).get("SS", [])):
        due_ms, member = entry.split(" ", 1)
        jobs.append(UnindexedJob(Member.decode(member), int(due_ms)))
    return UnindexedJobs(
        shard,
        tuple(jobs),
        bool(item.get("overflow", {}).get("BOOL", False)),
        int(item.get("version", {}).get("N", "0")),
    )
