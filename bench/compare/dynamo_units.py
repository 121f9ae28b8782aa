"""DynamoDB requests and capacity units: item sizes, units per request, and requests counted from moto's log.

Sizes follow DynamoDB's rules (developer guide, "Item sizes and formats"): an item is the sum of its
attribute names' UTF-8 lengths and its values' sizes; a string is its UTF-8 length, a number about one
byte per two significant digits plus one, a boolean or null one byte, a map or list three bytes plus its
elements (one byte each on top). Units (on-demand): a write is one WRU per started KB of the item (an
update: of the larger of the item before and after), a transactional write two; a strongly consistent
read one RRU per started 4 KB, an eventually consistent one half that, a transactional read two.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

WRITE_UNIT_BYTES = 1024
READ_UNIT_BYTES = 4096


def value_size(value: dict[str, Any]) -> int:
    """Returns the size in bytes of one attribute value in DynamoDB's low-level form ({"S": "..."})."""
    kind, inner = next(iter(value.items()))
    if kind == "S":
        return len(str(inner).encode())
    if kind == "N":
        digits = str(inner).lstrip("-").replace(".", "").strip("0") or "0"
        return math.ceil(len(digits) / 2) + 1
    if kind == "B":
        return len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(name.encode()) + value_size(v) + 1 for name, v in inner.items())
    if kind == "L":
        return 3 + sum(value_size(v) + 1 for v in inner)
    if kind in ("SS", "NS", "BS"):
        return sum(value_size({kind[0]: v}) for v in inner)
    raise ValueError(f"unknown attribute type {kind}")


def item_size(item: dict[str, Any]) -> int:
    """Returns the size in bytes of an item in DynamoDB's low-level form."""
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def write_units(size_bytes: int, transactional: bool = False) -> int:
    """Returns the WRU of writing an item of size_bytes (at least one)."""
    units = max(1, math.ceil(size_bytes / WRITE_UNIT_BYTES))
    return 2 * units if transactional else units


def read_units(size_bytes: int, consistent: bool = True) -> float:
    """Returns the RRU of reading size_bytes in one request (at least one unit's worth)."""
    units = max(1, math.ceil(size_bytes / READ_UNIT_BYTES))
    return float(units) if consistent else units / 2


WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem")
_OPERATION = re.compile(r'"POST / HTTP/1\.1" \d+ - DynamoDB_\d+\.(\w+)$')


def operations_in_log(path: Path) -> Counter[str]:
    """Returns the DynamoDB requests the dev moto server logged, by operation (e.g. UpdateItem: 3)."""
    counts: Counter[str] = Counter()
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return counts
    for line in text.splitlines():
        found = _OPERATION.search(line)
        if found:
            counts[found.group(1)] += 1
    return counts


def estimated_units(
    operations: Counter[str], job_bytes: float, execution_bytes: float
) -> tuple[float, float]:
    """Estimates (WRU, RRU) of requests counted by operation, from the measured average item sizes.

    The log names operations, not items, so each is priced as Hookline's adapter uses it: a PutItem or
    UpdateItem writes one job item (a claim, a first attempt's finish, which writes its record into the
    job item: the average size measured includes it); a TransactWriteItems is a later attempt's finish (an
    execution put and the job's update, both transactional); a GetItem reads one job item strongly
    consistently; a Query reads one page (priced as one job item, eventually consistent). Other writes
    count one unit, reads half of one.
    """
    job_wru, execution_wru = write_units(int(job_bytes)), write_units(int(execution_bytes))
    wru = 0.0
    rru = 0.0
    for operation, count in operations.items():
        if operation in ("PutItem", "UpdateItem"):
            wru += count * job_wru
        elif operation == "TransactWriteItems":
            wru += count * 2 * (job_wru + execution_wru)
        elif operation in WRITES:
            wru += count
        elif operation == "GetItem":
            rru += count * read_units(int(job_bytes))
        elif operation == "Query":
            rru += count * read_units(int(job_bytes), consistent=False)
        else:
            rru += count * 0.5
    return wru, rru


def estimated_index_units(operations: Counter[str]) -> float:
    """Estimates the live index's WRU of requests counted by operation (emulators do not bill indexes).

    As the adapter uses them in a one-attempt job's life: a PutItem creates a live job (its small index
    item put, one unit), an UpdateItem claims it (projected attributes change, the key stays: one) and
    another finishes it (its index item removed, one); a TransactWriteItems finishes a later attempt (one).
    A retry's finish moves the key (two) and is priced one here: the log cannot tell it apart.
    """
    return (
        operations.get("PutItem", 0) * 1.0
        + operations.get("UpdateItem", 0) * 1.0
        + operations.get("TransactWriteItems", 0) * 1.0
    )


def average_item_bytes(client: Any, table: str, limit: int = 200) -> float:
    """Returns the average size of up to limit items of a table (0 when empty), read with one Scan."""
    items = client.scan(TableName=table, Limit=limit).get("Items", [])
    return sum(item_size(item) for item in items) / len(items) if items else 0.0
