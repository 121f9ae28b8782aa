"""Opaque list cursors: the position after which the next page starts, base64url-encoded JSON."""

from __future__ import annotations

import base64
import binascii
import json

from hookline.domain.errors import InvalidRequest
from hookline.domain.ids import is_valid_id

_VERSION = 1


def encode_cursor(after_job_id: str | None) -> str | None:
    """Returns the `next` token for a page that ends after after_job_id (None on the last page)."""
    if after_job_id is None:
        return None
    text = json.dumps({"v": _VERSION, "after": after_job_id}, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> str | None:
    """Returns the job id a `next` token continues after; raises InvalidRequest for a token not made here."""
    if cursor is None:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        decoded = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        after = decoded["after"] if isinstance(decoded, dict) and decoded.get("v") == _VERSION else None
    except (ValueError, binascii.Error, UnicodeError, KeyError) as error:
        raise InvalidRequest("cursor is not a token this API returned", field="cursor") from error
    if not isinstance(after, str) or not is_valid_id(after):
        raise InvalidRequest("cursor is not a token this API returned", field="cursor")
    return after
