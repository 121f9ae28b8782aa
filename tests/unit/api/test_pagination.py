"""Opaque cursors: a round trip, and a refusal (not a crash) for anything this API did not make."""

from __future__ import annotations

import base64

import pytest

from hookline.api.pagination import decode_cursor, encode_cursor
from hookline.domain.errors import InvalidRequest
from hookline.domain.ids import new_id


def test_given_job_id_when_encoded_then_decodes_back_and_is_url_safe() -> None:
    job_id = new_id(1_800_000_000_000)

    cursor = encode_cursor(job_id)

    assert cursor is not None and job_id not in cursor
    assert set(cursor) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert decode_cursor(cursor) == job_id


def test_given_last_page_when_encoded_then_none_both_ways() -> None:
    assert encode_cursor(None) is None
    assert decode_cursor(None) is None


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "!!!",
        "é",
        _b64("not json"),
        _b64("[1, 2]"),
        _b64('{"v": 2, "after": "01ARZ3NDEKTSV4RRFFQ69G5FAV"}'),
        _b64('{"v": 1, "after": "job#../../etc"}'),
        _b64('{"v": 1, "after": 5}'),
        _b64('{"v": 1}'),
    ],
)
def test_given_foreign_cursor_when_decoded_then_invalid_request_naming_cursor(cursor: str) -> None:
    with pytest.raises(InvalidRequest) as raised:
        decode_cursor(cursor)

    assert raised.value.field == "cursor"
