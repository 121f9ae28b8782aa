"""The dev moto server's caches change how fast moto answers, never what it answers.

Each scenario runs twice in fresh moto backends, once plain and once inside every cache, and the two
transcripts (responses, or error codes and messages) must be equal; the plain transcript is also checked
against what DynamoDB answers, so that an empty or failing scenario cannot pass.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import backends as moto_backends
from moto import mock_aws
from moto.core import responses as moto_responses
from moto.core import serialize as moto_serialize
from moto.dynamodb.comparisons import ConditionExpressionParser
from moto.dynamodb.parsing import validators as moto_validators
from moto.dynamodb.responses import DynamoHandler

from hookline_local import moto_caches
from hookline_local.moto_caches import cached_attribute_keys, cached_expressions, cached_lookups

TABLE = "things"
Transcript = list[Any]


pytestmark = pytest.mark.usefixtures("fake_aws_credentials")


@contextmanager
def _all_caches() -> Iterator[None]:
    with ExitStack() as stack:
        for cache in (cached_lookups, cached_expressions, cached_attribute_keys):
            stack.enter_context(cache())
        yield


def _run(scenario: Callable[[Any, Transcript], None], cached: bool) -> Transcript:
    transcript: Transcript = []
    with mock_aws(), _all_caches() if cached else ExitStack():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName=TABLE,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk")],
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
        )
        scenario(client, transcript)
    return transcript


def _both(scenario: Callable[[Any, Transcript], None]) -> Transcript:
    plain, cached = _run(scenario, cached=False), _run(scenario, cached=True)
    assert cached == plain
    return plain


def _record(transcript: Transcript, call: Callable[[], Any]) -> None:
    """Appends the call's response without its metadata, or its error code and message."""
    try:
        response = call()
    except ClientError as error:
        transcript.append(("error", error.response["Error"]["Code"], error.response["Error"]["Message"]))
        return
    response = copy.deepcopy(response)
    response.pop("ResponseMetadata", None)
    transcript.append(response)


def _key(pk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": "x"}}


EVERY_TYPE = {
    "s": {"S": "text"},
    "n": {"N": "12.5"},
    "b": {"B": b"\x00\xffbytes"},
    "yes": {"BOOL": True},
    "nothing": {"NULL": True},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2"]},
    "bs": {"BS": [b"\x01", b"\x02"]},
    "l": {"L": [{"S": "x"}, {"N": "1"}, {"M": {"deep": {"BOOL": False}}}]},
    "m": {"M": {"inner": {"S": "y"}, "list": {"L": []}}},
}


def test_given_every_attribute_type_when_read_back_then_cached_serializer_answers_the_same() -> None:
    def scenario(client: Any, transcript: Transcript) -> None:
        client.put_item(TableName=TABLE, Item={**_key("a"), **EVERY_TYPE})
        _record(transcript, lambda: client.get_item(TableName=TABLE, Key=_key("a")))
        _record(transcript, lambda: client.scan(TableName=TABLE))
        _record(
            transcript,
            lambda: client.query(
                TableName=TABLE,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": "a"}},
                ReturnConsumedCapacity="TOTAL",
            ),
        )

    plain = _both(scenario)

    assert plain[0]["Item"]["b"] == {"B": b"\x00\xffbytes"}
    assert plain[1]["Count"] == 1
    assert plain[2]["ConsumedCapacity"]["TableName"] == TABLE


def test_given_updates_when_repeated_with_new_values_then_each_answer_matches_moto() -> None:
    update = "SET #n = #n + :one, #at = :at REMOVE #gone ADD #tags :tag"
    names = {"#n": "n", "#at": "at", "#gone": "gone", "#tags": "tags"}

    def scenario(client: Any, transcript: Transcript) -> None:
        client.put_item(TableName=TABLE, Item={**_key("a"), "n": {"N": "0"}, "gone": {"S": "x"}})
        for step in range(3):
            _record(
                transcript,
                lambda step=step: client.update_item(
                    TableName=TABLE,
                    Key=_key("a"),
                    UpdateExpression=update,
                    ConditionExpression="attribute_exists(#n) AND #n = :before",
                    ExpressionAttributeNames=names,
                    ExpressionAttributeValues={
                        ":one": {"N": "1"},
                        ":at": {"N": str(step)},
                        ":tag": {"SS": [f"t{step}"]},
                        ":before": {"N": str(step)},
                    },
                    ReturnValues="ALL_NEW" if step % 2 else "ALL_OLD",
                ),
            )
        _record(transcript, lambda: client.get_item(TableName=TABLE, Key=_key("a")))

    plain = _both(scenario)

    assert plain[-1]["Item"]["n"] == {"N": "3"}
    assert plain[-1]["Item"]["tags"] == {"SS": ["t0", "t1", "t2"]}
    assert "gone" not in plain[-1]["Item"]


def test_given_a_failing_condition_when_repeated_then_it_fails_every_time_with_the_old_item() -> None:
    def scenario(client: Any, transcript: Transcript) -> None:
        client.put_item(TableName=TABLE, Item={**_key("a"), "status": {"S": "done"}})
        for _ in range(2):
            _record(
                transcript,
                lambda: client.update_item(
                    TableName=TABLE,
                    Key=_key("a"),
                    UpdateExpression="SET #s = :running",
                    ConditionExpression="#s IN (:scheduled, :running)",
                    ExpressionAttributeNames={"#s": "status"},
                    ExpressionAttributeValues={":running": {"S": "running"}, ":scheduled": {"S": "new"}},
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                ),
            )

    plain = _both(scenario)

    assert [entry[1] for entry in plain] == ["ConditionalCheckFailedException"] * 2


@pytest.mark.parametrize(
    ("expression", "names"),
    [
        ("SET #a = :v SET #b = :v", {"#a": "a", "#b": "b"}),  # two SET clauses
        ("SET #a = :v, #b = :v", {"#a": "a", "#b": "a"}),  # one attribute set twice
        ("SET #a = :v", {"#a": "sk"}),  # a key attribute
        ("SET = :v", None),  # not an expression
    ],
)
def test_given_an_invalid_update_after_a_valid_one_when_sent_twice_then_refused_both_times(
    expression: str, names: dict[str, str] | None
) -> None:
    def scenario(client: Any, transcript: Transcript) -> None:
        client.put_item(TableName=TABLE, Item=_key("a"))
        valid_names = {"#a": "a", "#b": "b"}
        for update, attribute_names in (
            ("SET #a = :v", valid_names),
            (expression, names),
            (expression, names),
        ):
            request: dict[str, Any] = {
                "TableName": TABLE,
                "Key": _key("a"),
                "UpdateExpression": update,
                "ExpressionAttributeValues": {":v": {"S": "v"}},
            }
            if attribute_names is not None:
                used = {k: v for k, v in attribute_names.items() if k in update}
                request["ExpressionAttributeNames"] = used
            _record(transcript, lambda request=request: client.update_item(**request))

    plain = _both(scenario)

    assert isinstance(plain[0], dict)  # the valid update went through
    assert plain[1][0] == plain[2][0] == "error"
    assert plain[1] == plain[2]


def test_given_a_transaction_with_an_update_when_repeated_then_answers_match_moto() -> None:
    def scenario(client: Any, transcript: Transcript) -> None:
        client.put_item(TableName=TABLE, Item={**_key("job"), "attempt": {"N": "1"}})
        for attempt in (1, 1, 2):
            _record(
                transcript,
                lambda attempt=attempt: client.transact_write_items(
                    TransactItems=[
                        {"Put": {"TableName": TABLE, "Item": {**_key(f"run-{attempt}"), "n": {"N": "1"}}}},
                        {
                            "Update": {
                                "TableName": TABLE,
                                "Key": _key("job"),
                                "UpdateExpression": "SET #attempt = #attempt + :one",
                                "ConditionExpression": "#attempt = :attempt",
                                "ExpressionAttributeNames": {"#attempt": "attempt"},
                                "ExpressionAttributeValues": {
                                    ":one": {"N": "1"},
                                    ":attempt": {"N": str(attempt)},
                                },
                            }
                        },
                    ]
                ),
            )
        _record(transcript, lambda: client.get_item(TableName=TABLE, Key=_key("job")))

    plain = _both(scenario)

    assert plain[1][1] == "TransactionCanceledException"
    assert plain[-1]["Item"]["attempt"] == {"N": "3"}


def _moto_functions() -> tuple[object, ...]:
    """The moto functions the caches swap, and whether the validator defines its own __init__/validate."""
    validator = moto_validators.UpdateExpressionValidator
    return (
        moto_caches.UpdateExpressionParser.__dict__["make"],
        moto_validators.deepcopy,  # type: ignore[attr-defined]
        ConditionExpressionParser._lex_condition_expression,
        moto_serialize.XFormedAttributePicker.get_possible_keys,
        "__init__" in vars(validator),
        "validate" in vars(validator),
    )


def test_when_each_cache_exits_then_moto_functions_are_back() -> None:
    before = _moto_functions()

    with _all_caches():
        inside = _moto_functions()

    assert all(now is not then for now, then in zip(inside[:4], before[:4], strict=True))
    assert inside[4:] == (True, True)
    assert _moto_functions() == before


def test_given_cached_lookups_when_inside_then_same_answers_and_originals_restored_after() -> None:
    modules, listing = moto_backends.list_of_moto_modules, moto_responses.method_names_from_class  # type: ignore[attr-defined]
    expected_modules, expected_methods = list(modules()), listing(DynamoHandler)

    with cached_lookups():
        assert list(moto_backends.list_of_moto_modules()) == expected_modules
        assert moto_responses.method_names_from_class(DynamoHandler) == expected_methods  # type: ignore[attr-defined]
        assert moto_responses.method_names_from_class(
            DynamoHandler
        ) is moto_responses.method_names_from_class(  # type: ignore[attr-defined]
            DynamoHandler
        )

    assert (moto_backends.list_of_moto_modules, moto_responses.method_names_from_class) == (modules, listing)  # type: ignore[attr-defined]


def test_given_more_expressions_than_the_cache_holds_when_checked_again_then_answers_still_match(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(moto_caches, "MAX_ENTRIES", 2)

    def scenario(client: Any, transcript: Transcript) -> None:
        client.put_item(TableName=TABLE, Item=_key("a"))
        for round_ in range(2):
            for n in range(5):  # five distinct expressions through a cache of two
                _record(
                    transcript,
                    lambda n=n, round_=round_: client.update_item(
                        TableName=TABLE,
                        Key=_key("a"),
                        UpdateExpression=f"SET #a{n} = :v",
                        ExpressionAttributeNames={f"#a{n}": "sk" if round_ else f"a{n}"},
                        ExpressionAttributeValues={":v": {"S": "v"}},
                    ),
                )

    plain = _both(scenario)

    assert all(isinstance(entry, dict) for entry in plain[:5])
    assert [entry[1] for entry in plain[5:]] == ["ValidationException"] * 5  # the key attribute, every time
