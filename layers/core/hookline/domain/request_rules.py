"""What a client may send: times inside the usable window, and headers HTTP can carry, within their limits.

Each refusal is a pydantic error with its own type (`time_out_of_range`, `header_value`, ...), which the
API reports as the detail's `type`, so a client can tell the reasons apart without parsing messages.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

from hookline.domain import constants

# Headers a client may not set: they belong to the transport, to a proxy on the way, or to the signature.
RESERVED_HEADER_PREFIXES = ("webhook-", "hookline-", "proxy-")
RESERVED_HEADERS = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer"}
)
# RFC 9110 5.1 and 5.6.2: a field name is a token.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# RFC 9110 5.5: a field value holds no control character but HTAB, and no whitespace at either end.
# Characters beyond ASCII travel as UTF-8 bytes, which are obs-text (0x80-0xFF): carried as they are.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_EDGE_WHITESPACE = " \t"


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


EARLIEST_TIME = _iso(constants.EARLIEST_TIME_MS)
LATEST_TIME = _iso(constants.LATEST_TIME_MS)


def _within_window(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise PydanticCustomError(
            "timezone_required", "needs a UTC offset (RFC 3339), for example 2026-01-01T00:00:00Z"
        )
    # timestamp() is plain arithmetic: it works for any parsed time, even one whose UTC year is 0 or 10000.
    ms = value.timestamp() * 1000
    if not constants.EARLIEST_TIME_MS <= ms < constants.LATEST_TIME_MS:
        raise PydanticCustomError(
            "time_out_of_range",
            "must be from {earliest} up to, not including, {latest}",
            {"earliest": EARLIEST_TIME, "latest": LATEST_TIME},
        )
    return value


ClientTime = Annotated[datetime, AfterValidator(_within_window)]
"""A time a client gives: RFC 3339 with an offset, inside [EARLIEST_TIME, LATEST_TIME) once in UTC."""


def check_headers(headers: dict[str, str]) -> dict[str, str]:
    """Returns headers unchanged if every one can be sent as given; raises PydanticCustomError otherwise.

    A header that HTTP cannot carry would be stored, then fail the first attempt and dead-letter the job;
    a large one would be stored and re-sent on every attempt, and with a large body overflow the item.
    """
    if len(headers) > constants.MAX_HEADERS:
        raise PydanticCustomError(
            "too_many_headers", "at most {limit} headers", {"limit": constants.MAX_HEADERS}
        )
    total = 0
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name):
            raise PydanticCustomError(
                "header_name", "header name {name} is not an HTTP token", {"name": repr(name)}
            )
        lowered = name.lower()
        if lowered in RESERVED_HEADERS or lowered.startswith(RESERVED_HEADER_PREFIXES):
            raise PydanticCustomError(
                "header_reserved",
                "header {name} is set by Hookline or a proxy and cannot be given",
                {"name": repr(name)},
            )
        if _CONTROL.search(value) or value != value.strip(_EDGE_WHITESPACE):
            raise PydanticCustomError(
                "header_value",
                "header {name} holds a control character or starts or ends with whitespace",
                {"name": repr(name)},
            )
        size = len(value.encode())
        if size > constants.MAX_HEADER_VALUE_BYTES:
            raise PydanticCustomError(
                "header_too_large",
                "header {name} is {size} bytes; a value may be at most {limit}",
                {"name": repr(name), "size": size, "limit": constants.MAX_HEADER_VALUE_BYTES},
            )
        total += len(name) + size
    if total > constants.MAX_HEADERS_BYTES:
        raise PydanticCustomError(
            "headers_too_large",
            "the headers are {size} bytes; names and values together may be at most {limit}",
            {"size": total, "limit": constants.MAX_HEADERS_BYTES},
        )
    return headers
