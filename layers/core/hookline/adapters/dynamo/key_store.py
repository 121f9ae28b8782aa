"""The API keys table: key records (hash of the secret, never the secret) and tenant signing secrets."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from hookline.adapters.dynamo import codec, tables
from hookline.domain.errors import NotFound
from hookline.domain.keys import KeyRecord, SigningSecrets

KEY_IS_NEW = "attribute_not_exists(#key_id)"
KEY_EXISTS = "attribute_exists(#key_id)"
CURRENT_SECRET_IS = "#signing_secret = :seen_current"


class DynamoKeyStore:
    """Reads and writes API keys and tenant items."""

    def __init__(self, client: Any, table: str) -> None:
        self._client = client
        self._table = table

    def put_key(self, record: KeyRecord) -> None:
        """Stores a new key record."""
        self._client.put_item(
            TableName=self._table,
            Item=codec.to_attribute_values(
                {
                    tables.API_KEYS_PK: record.key_id,
                    "tenant": record.tenant,
                    "secret_sha256": record.secret_sha256,
                    "scopes": list(record.scopes),
                    "created_ms": record.created_ms,
                    "rate_limit_per_s": record.rate_limit_per_s,
                }
            ),
            ConditionExpression=KEY_IS_NEW,
            ExpressionAttributeNames={"#key_id": tables.API_KEYS_PK},
        )

    def get_key(self, key_id: str) -> KeyRecord | None:
        """Returns the key record, or None when there is none."""
        reply = self._client.get_item(
            TableName=self._table, Key=codec.to_attribute_values({tables.API_KEYS_PK: key_id})
        )
        if "Item" not in reply or key_id.startswith(tables.RESERVED_KEY_PREFIXES):
            return None
        return _record(codec.from_attribute_values(reply["Item"]))

    def revoke_key(self, key_id: str, now_ms: int) -> None:
        """Marks the key revoked; raises NotFound when there is no such key."""
        try:
            self._client.update_item(
                TableName=self._table,
                Key=codec.to_attribute_values({tables.API_KEYS_PK: key_id}),
                UpdateExpression="SET #revoked = if_not_exists(#revoked, :now_ms)",
                ConditionExpression=KEY_EXISTS,
                ExpressionAttributeNames={"#key_id": tables.API_KEYS_PK, "#revoked": "revoked_ms"},
                ExpressionAttributeValues=codec.to_attribute_values({":now_ms": now_ms}),
            )
        except ClientError as error:
            if codec.error_code(error) == "ConditionalCheckFailedException":
                raise NotFound(f"key {key_id} not found") from error
            raise

    def list_keys(self) -> list[KeyRecord]:
        """Returns every key record (an admin listing; the table is small)."""
        records: list[KeyRecord] = []
        request: dict[str, Any] = {"TableName": self._table}
        while True:
            reply = self._client.scan(**request)
            for item in reply.get("Items", []):
                values = codec.from_attribute_values(item)
                if not str(values[tables.API_KEYS_PK]).startswith(tables.RESERVED_KEY_PREFIXES):
                    records.append(_record(values))
            if "LastEvaluatedKey" not in reply:
                return sorted(records, key=lambda r: r.created_ms)
            request["ExclusiveStartKey"] = reply["LastEvaluatedKey"]

    def get_signing_secrets(self, tenant: str) -> SigningSecrets | None:
        """Returns the tenant's signing secrets, or None for a tenant that has none yet."""
        reply = self._client.get_item(
            TableName=self._table,
            Key=codec.to_attribute_values({tables.API_KEYS_PK: tables.tenant_item_key(tenant)}),
            ConsistentRead=True,
        )
        if "Item" not in reply:
            return None
        values = codec.from_attribute_values(reply["Item"])
        return SigningSecrets(
            values["signing_secret"], values.get("previous_secret"), values.get("previous_until_ms")
        )

    def put_signing_secrets(
        self, tenant: str, secrets: SigningSecrets, now_ms: int, *, only_if_missing: bool = False
    ) -> bool:
        """Stores the tenant's signing secrets; with only_if_missing, False when some already exist."""
        condition = {
            "ConditionExpression": KEY_IS_NEW,
            "ExpressionAttributeNames": {"#key_id": tables.API_KEYS_PK},
        }
        try:
            self._put_tenant(tenant, secrets, now_ms, condition if only_if_missing else {})
        except ClientError as error:
            if codec.error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def replace_signing_secrets(
        self, tenant: str, secrets: SigningSecrets, now_ms: int, seen_current: str | None
    ) -> bool:
        """Stores the tenant's signing secrets while its current one is seen_current (None: none yet).

        A compare-and-set on the current secret, so that of two rotations that read the same secrets one
        fails (False) instead of replacing the other's new secret, which its caller was shown as current.
        """
        condition: dict[str, Any]
        if seen_current is None:
            condition = {
                "ConditionExpression": KEY_IS_NEW,
                "ExpressionAttributeNames": {"#key_id": tables.API_KEYS_PK},
            }
        else:
            condition = {
                "ConditionExpression": CURRENT_SECRET_IS,
                "ExpressionAttributeNames": {"#signing_secret": "signing_secret"},
                "ExpressionAttributeValues": codec.to_attribute_values({":seen_current": seen_current}),
            }
        try:
            self._put_tenant(tenant, secrets, now_ms, condition)
        except ClientError as error:
            if codec.error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def record_shards(self, shards: int, now_ms: int) -> int:
        """Records shards as the deployment's shard count unless as many or more are; returns the larger.

        One conditional put: it succeeds at the first start and when the count grows (so concurrent cold
        starts agree: the larger count wins); otherwise the count already recorded is read and returned.
        """
        try:
            self._client.put_item(
                TableName=self._table,
                Item=codec.to_attribute_values(
                    {tables.API_KEYS_PK: tables.SHARD_COUNT_KEY, "shards": shards, "updated_ms": now_ms}
                ),
                ConditionExpression="attribute_not_exists(#key_id) OR #shards < :shards",
                ExpressionAttributeNames={"#key_id": tables.API_KEYS_PK, "#shards": "shards"},
                ExpressionAttributeValues=codec.to_attribute_values({":shards": shards}),
            )
        except ClientError as error:
            if codec.error_code(error) != "ConditionalCheckFailedException":
                raise
            reply = self._client.get_item(
                TableName=self._table,
                Key=codec.to_attribute_values({tables.API_KEYS_PK: tables.SHARD_COUNT_KEY}),
                ConsistentRead=True,
            )
            return int(codec.from_attribute_values(reply["Item"])["shards"])
        return shards

    def record_buckets(self, buckets: int, now_ms: int) -> int:
        """Records buckets as the jobs table's bucket count unless one is recorded; returns the one recorded.

        A read first (every start after the first one costs only that), then one conditional put, so
        concurrent first starts agree: the first put wins, the others read it.
        """
        recorded = self.recorded_buckets()
        if recorded is not None:
            return recorded
        try:
            self._client.put_item(
                TableName=self._table,
                Item=codec.to_attribute_values(
                    {tables.API_KEYS_PK: tables.BUCKET_COUNT_KEY, "buckets": buckets, "updated_ms": now_ms}
                ),
                ConditionExpression="attribute_not_exists(#key_id)",
                ExpressionAttributeNames={"#key_id": tables.API_KEYS_PK},
            )
        except ClientError as error:
            if codec.error_code(error) != "ConditionalCheckFailedException":
                raise
            recorded = self.recorded_buckets()
            assert recorded is not None  # the condition failed: the item exists
            return recorded
        return buckets

    def recorded_buckets(self) -> int | None:
        """Returns the recorded bucket count, None before the first start."""
        reply = self._client.get_item(
            TableName=self._table,
            Key=codec.to_attribute_values({tables.API_KEYS_PK: tables.BUCKET_COUNT_KEY}),
            ConsistentRead=True,
        )
        return int(codec.from_attribute_values(reply["Item"])["buckets"]) if "Item" in reply else None

    def set_buckets(self, buckets: int, now_ms: int) -> None:
        """Records buckets whatever is recorded (`hookline migrate-keys`, once every item was moved)."""
        self._client.put_item(
            TableName=self._table,
            Item=codec.to_attribute_values(
                {tables.API_KEYS_PK: tables.BUCKET_COUNT_KEY, "buckets": buckets, "updated_ms": now_ms}
            ),
        )

    def _put_tenant(
        self, tenant: str, secrets: SigningSecrets, now_ms: int, condition: dict[str, Any]
    ) -> None:
        self._client.put_item(
            TableName=self._table,
            Item=codec.to_attribute_values(
                {
                    tables.API_KEYS_PK: tables.tenant_item_key(tenant),
                    "tenant": tenant,
                    "signing_secret": secrets.current,
                    "previous_secret": secrets.previous,
                    "previous_until_ms": secrets.previous_until_ms,
                    "updated_ms": now_ms,
                }
            ),
            **condition,
        )


def _record(values: dict[str, Any]) -> KeyRecord:
    return KeyRecord(
        key_id=values[tables.API_KEYS_PK],
        tenant=values["tenant"],
        secret_sha256=values["secret_sha256"],
        scopes=tuple(values.get("scopes", [])),
        created_ms=values["created_ms"],
        revoked_ms=values.get("revoked_ms"),
        rate_limit_per_s=values.get("rate_limit_per_s"),
    )
