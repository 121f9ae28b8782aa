"""The dev moto server's TransactWriteItems backs up only the items it touches, and rolls back like moto's.

Each case runs against moto's own transact_write_items and against the replacement, so the two must agree.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb.models import DynamoDBBackend

from hookline_local.moto_server import item_level_rollback

TABLE = "things"
FLAT = "flat"  # hash key only


@pytest.fixture(params=["moto", "item_level"])
def ddb(request: pytest.FixtureRequest, fake_aws_credentials: None) -> Iterator[Any]:
    """Yields a client to moto with TABLE (pk, sk; GSI by-owner on owner, at) and FLAT (pk)."""
    patch = item_level_rollback() if request.param == "item_level" else nullcontext()
    with mock_aws(), patch:
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName=TABLE,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[
                {"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk", "owner", "at")
            ],
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": "by-owner",
                    "KeySchema": [
                        {"AttributeName": "owner", "KeyType": "HASH"},
                        {"AttributeName": "at", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
        )
        client.create_table(
            TableName=FLAT,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        )
        for i in range(3):
            client.put_item(TableName=TABLE, Item=_thing(f"p{i}", owner="ann", n=i))
        client.put_item(TableName=FLAT, Item={"pk": {"S": "f0"}, "n": {"N": "0"}})
        yield client


def _thing(pk: str, owner: str = "ann", n: int = 0) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": "x"}, "owner": {"S": owner}, "at": {"S": pk}, "n": {"N": str(n)}}


def _key(pk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": "x"}}


def _state(ddb: Any) -> dict[str, Any]:
    """Both tables scanned, and the GSI queried, as they are now."""
    return {
        TABLE: ddb.scan(TableName=TABLE)["Items"],
        FLAT: ddb.scan(TableName=FLAT)["Items"],
        "by-owner": ddb.query(
            TableName=TABLE,
            IndexName="by-owner",
            KeyConditionExpression="#o = :o",
            ExpressionAttributeNames={"#o": "owner"},
            ExpressionAttributeValues={":o": {"S": "ann"}},
        )["Items"],
    }


def _update(pk: str, n: int, condition: str | None = None, **extra: Any) -> dict[str, Any]:
    update: dict[str, Any] = {
        "TableName": TABLE,
        "Key": _key(pk),
        "UpdateExpression": "SET n = :n, #o = :o",
        "ExpressionAttributeNames": {"#o": "owner"},
        "ExpressionAttributeValues": {":n": {"N": str(n)}, ":o": {"S": "bob"}},
        **extra,
    }
    if condition:
        update["ConditionExpression"] = condition
    return {"Update": update}


def _cancelled(ddb: Any, items: list[dict[str, Any]]) -> ClientError:
    with pytest.raises(ClientError) as caught:
        ddb.transact_write_items(TransactItems=items)
    return caught.value


def test_given_all_conditions_hold_when_transacting_then_every_write_is_applied(ddb: Any) -> None:
    ddb.transact_write_items(
        TransactItems=[
            {
                "Put": {
                    "TableName": TABLE,
                    "Item": _thing("new"),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            _update(
                "p0",
                10,
                condition="n = :zero",
                ExpressionAttributeValues={":n": {"N": "10"}, ":o": {"S": "bob"}, ":zero": {"N": "0"}},
            ),
            {"Delete": {"TableName": TABLE, "Key": _key("p1")}},
            {
                "ConditionCheck": {
                    "TableName": TABLE,
                    "Key": _key("p2"),
                    "ConditionExpression": "attribute_exists(pk)",
                }
            },
            {
                "Update": {
                    "TableName": FLAT,
                    "Key": {"pk": {"S": "f0"}},
                    "UpdateExpression": "SET n = n + :one",
                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                }
            },
        ]
    )

    assert ddb.get_item(TableName=TABLE, Key=_key("new"))["Item"] == _thing("new")
    assert ddb.get_item(TableName=TABLE, Key=_key("p0"))["Item"] == _thing("p0", owner="bob", n=10)
    assert "Item" not in ddb.get_item(TableName=TABLE, Key=_key("p1"))
    assert ddb.get_item(TableName=FLAT, Key={"pk": {"S": "f0"}})["Item"]["n"] == {"N": "1"}


@pytest.mark.parametrize("first", ["update existing", "put new", "delete existing", "put over flat"])
def test_given_second_condition_fails_when_transacting_then_first_write_is_undone(
    ddb: Any, first: str
) -> None:
    before = _state(ddb)
    first_op = {
        "update existing": _update("p0", 7),
        "put new": {"Put": {"TableName": TABLE, "Item": _thing("new")}},
        "delete existing": {"Delete": {"TableName": TABLE, "Key": _key("p0")}},
        "put over flat": {"Put": {"TableName": FLAT, "Item": {"pk": {"S": "f0"}, "n": {"N": "9"}}}},
    }[first]

    error = _cancelled(
        ddb,
        [
            first_op,
            _update(
                "p1",
                8,
                condition="n = :zero",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                ExpressionAttributeValues={":n": {"N": "8"}, ":o": {"S": "bob"}, ":zero": {"N": "0"}},
            ),
        ],
    )

    assert error.response["Error"]["Code"] == "TransactionCanceledException"
    reasons = error.response["CancellationReasons"]
    assert [r["Code"] for r in reasons] == ["None", "ConditionalCheckFailed"]
    assert reasons[1]["Item"] == _thing("p1", n=1)
    assert _state(ddb) == before


def test_given_failed_condition_without_all_old_when_transacting_then_reason_has_no_item(ddb: Any) -> None:
    error = _cancelled(ddb, [_update("p0", 3, condition="attribute_not_exists(pk)"), _update("p1", 3)])

    assert error.response["CancellationReasons"] == [
        {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"},
        {"Code": "None"},
    ]
    assert ddb.get_item(TableName=TABLE, Key=_key("p1"))["Item"] == _thing("p1", n=1)


def test_given_same_item_twice_when_transacting_then_validation_error_and_earlier_writes_undone(
    ddb: Any,
) -> None:
    before = _state(ddb)

    error = _cancelled(
        ddb,
        [
            {"Put": {"TableName": TABLE, "Item": _thing("new", owner="ann")}},
            _update("p2", 5),
            {"Delete": {"TableName": TABLE, "Key": _key("new")}},
        ],
    )

    assert error.response["Error"]["Code"] == "ValidationException"
    assert "multiple operations on one item" in error.response["Error"]["Message"]
    assert _state(ddb) == before


def test_given_rolled_back_transaction_when_querying_gsi_then_results_are_unchanged(ddb: Any) -> None:
    before = _state(ddb)["by-owner"]

    _cancelled(
        ddb,
        [
            _update("p0", 1),  # moves p0 from ann to bob in the GSI
            {"Put": {"TableName": TABLE, "Item": _thing("p9", owner="ann")}},  # adds one for ann
            {
                "ConditionCheck": {
                    "TableName": TABLE,
                    "Key": _key("p2"),
                    "ConditionExpression": "n = :n",
                    "ExpressionAttributeValues": {":n": {"N": "99"}},
                }
            },
        ],
    )

    assert _state(ddb)["by-owner"] == before
    assert [item["pk"]["S"] for item in before] == ["p0", "p1", "p2"]


def test_when_context_exits_then_moto_method_is_back() -> None:
    original = DynamoDBBackend.transact_write_items

    with item_level_rollback():
        assert DynamoDBBackend.transact_write_items is not original

    assert DynamoDBBackend.transact_write_items is original
