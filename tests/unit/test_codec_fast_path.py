"""The codec's own (de)serialisation gives exactly what boto3's TypeSerializer and TypeDeserializer give."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer

from hookline.adapters.dynamo import codec

VALUES: list[Any] = [
    "",
    "text é",
    0,
    -7,
    1_796_302_889_794,
    10**38 - 1,
    -(10**38) + 1,
    True,
    False,
    None,
    {"Content-Type": "application/json", "n": 3, "nested": {"deep": [1, "x", None, True]}},
    {},
    [1, "a", {"k": False}],
    [],
    Decimal("1.5"),
    Decimal("12"),
    {"a", "b"},
    {1, 2},
    b"\x00bytes",
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_given_a_value_when_serialised_then_it_is_what_boto3_makes(value: Any) -> None:
    assert codec.serialize(value) == TypeSerializer().serialize(value)


@pytest.mark.parametrize("value", [1.5, float("nan"), 10**38, -(10**38), 10**40])
def test_given_a_value_boto3_refuses_when_serialised_then_it_is_refused_too(value: Any) -> None:
    with pytest.raises(Exception) as boto3_error:
        TypeSerializer().serialize(value)

    with pytest.raises(type(boto3_error.value)):
        codec.serialize(value)


ATTRIBUTES: list[dict[str, Any]] = [
    {"S": "x"},
    {"N": "42"},
    {"N": "-42"},
    {"N": "1.5"},
    {"N": "-0.25"},
    {"N": "1E+3"},
    {"N": "12345678901234567890123456789012345678"},
    {"BOOL": True},
    {"NULL": True},
    {"M": {"a": {"N": "1"}, "b": {"L": [{"S": "y"}, {"N": "2.5"}, {"M": {}}]}}},
    {"L": []},
    {"SS": ["a", "b"]},
    {"NS": ["1", "2.5"]},
    {"B": b"raw"},
]


def _plain_boto3(attribute: dict[str, Any]) -> Any:
    return codec._plain(TypeDeserializer().deserialize(attribute))


@pytest.mark.parametrize("attribute", ATTRIBUTES, ids=repr)
def test_given_an_attribute_when_deserialised_then_it_is_what_boto3_and_plain_make(
    attribute: dict[str, Any],
) -> None:
    got = codec.deserialize(attribute)
    expected = _plain_boto3(attribute)

    assert got == expected
    assert type(got) is type(expected)
    if isinstance(expected, Binary):
        assert got.value == expected.value
    else:
        assert repr(got) == repr(expected)  # nested numbers too: an int is not a Decimal
