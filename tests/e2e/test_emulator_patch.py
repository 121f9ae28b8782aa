"""The embedded emulator as `hookline dev` starts it (hookline_local/ministack_main.py): its workaround for
ministack parsing a condition expression once per item must change no answer and no error.

The patched and the stock emulator run side by side on free ports and get the same requests: Queries with
key conditions, filters and pages, conditional writes, a cancelled transaction (nothing written, the
reasons and the old item reported), and invalid expressions (the same ValidationException). A last test
counts the parses in the emulator's own Python: once per expression patched, once per item stock.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from hookline_local import ministack_main
from hookline_local.deploy import aws_client
from hookline_local.emulator import emulator_python, start_emulator
from hookline_local.services import ChildProcess
from tests.support.redis_server import free_port

pytestmark = [pytest.mark.e2e]

TABLE = "patch-check"
ITEMS = 30


def _create_table(dynamodb: Any) -> None:
    dynamodb.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "g", "AttributeType": "S"},
            {"AttributeName": "n", "AttributeType": "N"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-g",
                "KeySchema": [
                    {"AttributeName": "g", "KeyType": "HASH"},
                    {"AttributeName": "n", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    for n in range(ITEMS):
        item = {
            "pk": {"S": "t"},
            "sk": {"S": f"job#{n:03d}"},
            "n": {"N": str(n)},
            "odd": {"BOOL": n % 2 == 1},
        }
        if n % 3:  # a sparse index: every third item has no g
            item["g"] = {"S": "live"}
        dynamodb.put_item(TableName=TABLE, Item=item)


@pytest.fixture(scope="module")
def emulators(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A DynamoDB client of the patched and of the stock emulator, each with the same table."""
    children: list[ChildProcess] = []
    clients: dict[str, Any] = {}
    try:
        for name in ("patched", "stock"):
            port = free_port()
            log = tmp_path_factory.mktemp(name) / "emulator.log"
            children.append(start_emulator(port, log, stock=name == "stock"))
            clients[name] = aws_client("dynamodb", f"http://127.0.0.1:{port}", "us-east-1")
            _create_table(clients[name])
        yield clients
    finally:
        for client in clients.values():
            client.close()
        for child in children:
            child.stop()


def _both(emulators: dict[str, Any], operation: str, **request: Any) -> tuple[Any, Any]:
    """Sends the same request to both; returns (patched, stock) replies or error responses."""
    replies = []
    for name in ("patched", "stock"):
        try:
            reply = getattr(emulators[name], operation)(**request)
            reply.pop("ResponseMetadata", None)
            replies.append(reply)
        except ClientError as error:
            replies.append({"Error": error.response["Error"], **_reasons(error)})
    return replies[0], replies[1]


def _reasons(error: ClientError) -> dict[str, Any]:
    reasons = error.response.get("CancellationReasons")
    return {} if reasons is None else {"CancellationReasons": reasons}


QUERIES: list[dict[str, Any]] = [
    {
        "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
        "ExpressionAttributeNames": {"#pk": "pk", "#sk": "sk"},
        "ExpressionAttributeValues": {":pk": {"S": "t"}, ":prefix": {"S": "job#01"}},
    },
    {
        "KeyConditionExpression": "pk = :pk",
        "FilterExpression": "odd = :yes AND n >= :low",
        "ExpressionAttributeValues": {":pk": {"S": "t"}, ":yes": {"BOOL": True}, ":low": {"N": "11"}},
        "ScanIndexForward": False,
        "Limit": 7,
    },
    {
        "IndexName": "by-g",
        "KeyConditionExpression": "g = :g AND n <= :most",
        "ExpressionAttributeValues": {":g": {"S": "live"}, ":most": {"N": "20"}},
        "Limit": 5,
    },
    {
        "IndexName": "by-g",
        "KeyConditionExpression": "g = :g AND n BETWEEN :low AND :high",
        "ExpressionAttributeValues": {":g": {"S": "live"}, ":low": {"N": "4"}, ":high": {"N": "16"}},
    },
]


@pytest.mark.parametrize("query", QUERIES, ids=["begins_with", "filter-desc-page", "index-page", "between"])
def test_given_queries_when_paged_then_patched_emulator_answers_as_stock(
    emulators: dict[str, Any], query: dict[str, Any]
) -> None:
    request = {"TableName": TABLE, **query}
    pages = 0
    while True:
        patched, stock = _both(emulators, "query", **request)
        assert patched == stock
        assert "Error" not in patched
        pages += 1
        if "LastEvaluatedKey" not in patched:
            break
        request["ExclusiveStartKey"] = patched["LastEvaluatedKey"]
    assert pages >= 1


INVALID: list[dict[str, Any]] = [
    {"KeyConditionExpression": "pk = :pk AND", "ExpressionAttributeValues": {":pk": {"S": "t"}}},
    {"KeyConditionExpression": "((pk = :pk))", "ExpressionAttributeValues": {":pk": {"S": "t"}}},
    {"KeyConditionExpression": "pk = :pk", "FilterExpression": "status = :n",
     "ExpressionAttributeValues": {":pk": {"S": "t"}, ":n": {"N": "1"}}},
    {"KeyConditionExpression": "pk = :pk AND sk BETWEEN :high AND :low",
     "ExpressionAttributeValues": {":pk": {"S": "t"}, ":low": {"S": "a"}, ":high": {"S": "z"}}},
    {"KeyConditionExpression": "pk = :pk", "FilterExpression": "begins_with(n, :prefix)",
     "ExpressionAttributeValues": {":pk": {"S": "t"}, ":prefix": {"N": "1"}}},
]  # fmt: skip


@pytest.mark.parametrize("query", INVALID, ids=["dangling", "parens", "reserved", "bounds", "operand"])
def test_given_invalid_expression_then_patched_emulator_refuses_it_as_stock(
    emulators: dict[str, Any], query: dict[str, Any]
) -> None:
    patched, stock = _both(emulators, "query", TableName=TABLE, **query)
    assert patched == stock
    assert patched["Error"]["Code"] == "ValidationException"


def _job_key(n: int) -> dict[str, Any]:
    return {"pk": {"S": "t"}, "sk": {"S": f"job#{n:03d}"}}


def test_given_failed_condition_in_transaction_then_nothing_is_written_and_reasons_report_it(
    emulators: dict[str, Any],
) -> None:
    new_item = {"pk": {"S": "t"}, "sk": {"S": "new#1"}}
    transaction = [
        {"Put": {"TableName": TABLE, "Item": new_item, "ConditionExpression": "attribute_not_exists(pk)"}},
        {
            "Update": {
                "TableName": TABLE,
                "Key": _job_key(3),
                "UpdateExpression": "SET n = :n",
                "ConditionExpression": "n = :expected",
                "ExpressionAttributeValues": {":n": {"N": "99"}, ":expected": {"N": "4"}},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        },
    ]
    patched, stock = _both(emulators, "transact_write_items", TransactItems=transaction)
    assert patched == stock
    assert patched["Error"]["Code"] == "TransactionCanceledException"
    reasons = patched["CancellationReasons"]
    assert [reason["Code"] for reason in reasons] == ["None", "ConditionalCheckFailed"]
    assert reasons[1]["Item"]["n"] == {"N": "3"}
    for client in emulators.values():
        # All or nothing: the put whose condition held was not written either, the update not applied.
        assert "Item" not in client.get_item(TableName=TABLE, Key={k: new_item[k] for k in ("pk", "sk")})
        assert client.get_item(TableName=TABLE, Key=_job_key(3))["Item"]["n"] == {"N": "3"}


def test_given_conditions_that_hold_then_transaction_and_conditional_put_write_as_stock(
    emulators: dict[str, Any],
) -> None:
    transaction = [
        {"Put": {"TableName": TABLE, "Item": {"pk": {"S": "t"}, "sk": {"S": "new#2"}},
                 "ConditionExpression": "attribute_not_exists(pk)"}},
        {"Update": {"TableName": TABLE, "Key": _job_key(5), "UpdateExpression": "SET n = :n",
                    "ConditionExpression": "n = :expected",
                    "ExpressionAttributeValues": {":n": {"N": "50"}, ":expected": {"N": "5"}}}},
    ]  # fmt: skip
    patched, stock = _both(emulators, "transact_write_items", TransactItems=transaction)
    assert patched == stock == {}
    again, again_stock = _both(
        emulators,
        "put_item",
        TableName=TABLE,
        Item={"pk": {"S": "t"}, "sk": {"S": "new#2"}},
        ConditionExpression="attribute_not_exists(pk)",
    )
    assert again == again_stock
    assert again["Error"]["Code"] == "ConditionalCheckFailedException"
    for client in emulators.values():
        assert client.get_item(TableName=TABLE, Key=_job_key(5))["Item"]["n"] == {"N": "50"}


_COUNT_PARSES = """
import asyncio, json, sys
from ministack.services import dynamodb
sys.path.append(sys.argv[1])
if sys.argv[2] == "patched":
    import ministack_main
    ministack_main.patch_ministack()
parses = 0
tokenize = dynamodb._tokenize
def counting(expression):
    global parses
    parses += 1
    return tokenize(expression)
dynamodb._tokenize = counting
def call(action, data):
    target = {"x-amz-target": "DynamoDB_20120810." + action}
    status, _, body = asyncio.run(dynamodb.handle_request("POST", "/", target, json.dumps(data).encode(), {}))
    assert status == 200, body
    return json.loads(body)
call("CreateTable", {"TableName": "counted", "BillingMode": "PAY_PER_REQUEST",
    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                             {"AttributeName": "sk", "AttributeType": "S"}],
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]})
for n in range(100):
    call("PutItem", {"TableName": "counted", "Item": {"pk": {"S": "t"}, "sk": {"S": "job#%03d" % n}}})
query = {"TableName": "counted", "KeyConditionExpression": "pk = :pk AND begins_with(sk, :p)",
         "ExpressionAttributeValues": {":pk": {"S": "t"}, ":p": {"S": "job#"}}, "Limit": 10}
parses = 0
for _ in range(3):
    assert len(call("Query", query)["Items"]) == 10
print(parses)
"""


@pytest.mark.parametrize("emulator", ["patched", "stock"])
def test_given_query_over_a_partition_then_patched_emulator_parses_its_expression_once(emulator: str) -> None:
    done = subprocess.run(
        [str(emulator_python()), "-c", _COUNT_PARSES, str(Path(ministack_main.__file__).parent), emulator],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    parses = int(done.stdout.split()[-1])
    if emulator == "patched":
        # A few per request (ministack's own request checks), none per item: three queries of a
        # 100-item partition parse fewer times than the partition has items.
        assert parses < 100
    else:
        assert parses >= 3 * 100  # the defect the patch works around: a parse per item, per query
