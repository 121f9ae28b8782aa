"""Serves moto (every AWS API, in memory) on one loopback port, one request at a time; run as a process.

`python -m moto.server` answers each connection in its own thread; moto's work is pure Python, so the
threads only queue on the interpreter lock, and switching between them halves the requests served per
second (measured here: about 90/s threaded, 170/s serial). Requests are short, so serving them one after
another is the faster way: hookline_local.serial_http does that over keep-alive connections.

moto's TransactWriteItems deep-copies every table it touches before writing, so that it can roll back:
O(table) per transaction, about 100 ms with a few thousand items, and every Hookline job ends with one.
This server (and only this dev process) swaps in the same function backing up only the items touched,
and runs with the caches of hookline_local.moto_caches for work moto repeats on every request.

Usage: python -m hookline_local.moto_server --port 5055
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import (
    ConditionalCheckFailed,
    MockValidationException,
    MultipleTransactionsException,
    TooManyTransactionsException,
    TransactionCanceledException,
    TransactWriteSingleOpException,
)
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import StreamShard, Table
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

from hookline_local.moto_caches import cached_attribute_keys, cached_expressions, cached_lookups
from hookline_local.serial_http import SerialHttpServer

_OPS = {"ConditionCheck", "Put", "Delete", "Update"}


class _Rollback:
    """What a transaction overwrites: each item it touches as it was before, and each table's stream."""

    def __init__(self) -> None:
        self.items: dict[
            tuple[int, DynamoType, DynamoType | None],
            tuple[Table, DynamoType, DynamoType | None, bool, Item | None],
        ] = {}
        self.streams: dict[int, tuple[StreamShard, list[Any]]] = {}

    def save(self, backend: DynamoDBBackend, table_name: str, key: dict[str, Any]) -> None:
        """Keeps a copy of the item at key (or that there was none), unless an earlier operation did."""
        table = backend.get_table(table_name)
        hash_value, range_value = backend.get_keys_value(table, key)  # raises as backend.get_item would
        if (id(table), hash_value, range_value) in self.items:
            return
        stored: dict[Any, Any] = table.items  # hash -> Item, or hash -> range -> Item
        bucket = stored.get(hash_value)  # .get: indexing the defaultdict would add a bucket
        old: Item | None = bucket if range_value is None else (bucket or {}).get(range_value)
        saved = (table, hash_value, range_value, bucket is not None, copy.deepcopy(old))
        self.items[(id(table), hash_value, range_value)] = saved
        if table.stream_shard is not None and id(table) not in self.streams:
            self.streams[id(table)] = (table.stream_shard, list(table.stream_shard.items))

    def restore(self) -> None:
        """Puts back each saved item, or removes the key if there was none; indexes are views computed
        from table.items on every query, so they follow."""
        for table, hash_value, range_value, had_bucket, old in self.items.values():
            stored: dict[Any, Any] = table.items
            if range_value is None:
                if old is None:
                    stored.pop(hash_value, None)
                else:
                    stored[hash_value] = old
                continue
            bucket = stored[hash_value]
            if old is not None:
                bucket[range_value] = old
                continue
            bucket.pop(range_value, None)
            if not bucket and not had_bucket:
                del stored[hash_value]
        for shard, records in self.streams.values():
            shard.items = records


class _OwnCheckFailed(ConditionalCheckFailed):
    """The transaction's own ConditionExpression failed; carries the ALL_OLD item, if asked for."""

    def __init__(self, old_item: dict[str, Any] | None) -> None:
        super().__init__(item=old_item)
        self.old_item = old_item


def _transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
    """moto 5.2.5's DynamoDBBackend.transact_write_items, but for what it saves for the rollback: the
    items touched, saved as each operation reaches them (see _Rollback), not deep copies of whole tables."""
    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    rollback = _Rollback()
    target_items: set[tuple[str, str]] = set()
    errors: list[tuple[str, str, dict[str, Any] | None] | tuple[None, None, None]] = []
    for item in transact_items:
        # Check transact writes are not performing multiple operations on the same item
        if len(list(item.keys())) > 1:
            raise TransactWriteSingleOpException
        try:
            op_type, op = next(iter(item.items()))
            _write_one(self, rollback, target_items, op_type, op)
            errors.append((None, None, None))
        except (MultipleTransactionsException, MockValidationException):
            rollback.restore()
            raise
        except ConditionalCheckFailed as e:
            errors.append(("ConditionalCheckFailed", str(e.message), getattr(e, "old_item", None)))
        except Exception as e:
            errors.append((type(e).__name__, str(e), None))
    if any(code is not None for code, _, _ in errors):
        rollback.restore()
        raise TransactionCanceledException(errors)


def _write_one(
    self: DynamoDBBackend,
    rollback: _Rollback,
    target_items: set[tuple[str, str]],
    op_type: str,
    op: dict[str, Any],
) -> None:
    """The body of moto's loop over the operations, in its order, with rollback.save added."""
    if op_type not in _OPS:
        raise ValueError("Unsupported transaction operation")
    table_name = op["TableName"]
    condition_expression = op.get("ConditionExpression")
    if op_type == "Put":
        attrs = op["Item"]
        table = self.get_table(table_name)
        key = {table.hash_key_attr: attrs[table.hash_key_attr]}
        if table.range_key_attr is not None:
            key[table.range_key_attr] = attrs[table.range_key_attr]
    else:
        key = op["Key"]
    unique = (str(table_name), str(dict(sorted(key.items()))))
    if unique in target_items:
        raise MultipleTransactionsException()
    target_items.add(unique)

    rollback.save(self, table_name, key)
    current = self.get_item(table_name, key)
    names, values = op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
    if condition_expression is not None:
        condition_op = get_filter_expression(condition_expression, names, values)
        if not condition_op.expr(current):
            all_old = op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD"
            raise _OwnCheckFailed(current.to_json()["Attributes"] if all_old and current else None)

    conditions: dict[str, Any] = {
        "condition_expression": condition_expression,
        "expression_attribute_names": names,
        "expression_attribute_values": values,
    }
    if op_type == "Put":
        self.put_item(table_name, op["Item"], **conditions)
    elif op_type == "Delete":
        self.delete_item(table_name, key, **conditions)
    elif op_type == "Update":
        self.update_item(table_name, key, update_expression=op["UpdateExpression"], **conditions)


@contextmanager
def item_level_rollback() -> Iterator[None]:
    """Within it, every DynamoDBBackend in this process runs _transact_write_items; moto's after it."""
    original = DynamoDBBackend.transact_write_items
    DynamoDBBackend.transact_write_items = _transact_write_items  # type: ignore[method-assign]
    try:
        yield
    finally:
        DynamoDBBackend.transact_write_items = original  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    """Does the serving described above until terminated."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    server = SerialHttpServer(args.host, args.port, DomainDispatcherApplication(create_backend_app))
    with item_level_rollback(), cached_lookups(), cached_expressions(), cached_attribute_keys():
        server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
