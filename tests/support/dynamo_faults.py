"""DynamoDB faults moto cannot produce: cancelled transactions (throttled, conflicting), writes timing out,
replies lost after the write was applied."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError, ReadTimeoutError


class CancellingTransactions:
    """Wraps a DynamoDB client so that its next `count` transactions are cancelled with `reason`.

    The error has the shape DynamoDB sends: TransactionCanceledException with one CancellationReasons entry
    per item in TransactItems order, `reason` at index `at` (-1: the last item) and "None" elsewhere.
    Everything else goes to the real client.
    """

    def __init__(self, client: Any, reason: str, count: int, at: int = -1) -> None:
        self._client = client
        self._reason = reason
        self._at = at
        self._lock = threading.Lock()
        self.remaining = count
        self.cancelled = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def plan(self, reason: str, count: int = 1, at: int = -1) -> None:
        """Cancels the next count transactions with reason at item index at (-1: the last item)."""
        with self._lock:
            self._reason, self._at, self.remaining = reason, at, count

    def transact_write_items(self, **kwargs: Any) -> Any:
        """Cancels the call while faults remain, else passes it on."""
        items = kwargs["TransactItems"]
        with self._lock:
            cancel = self.remaining > 0
            if cancel:
                self.remaining -= 1
                self.cancelled += 1
        if not cancel:
            return self._client.transact_write_items(**kwargs)
        reasons: list[Any] = [{"Code": "None"} for _ in items]  # botocore types them as its TypedDict
        reasons[self._at] = {"Code": self._reason, "Message": f"{self._reason} (injected)"}
        codes = ", ".join(reason["Code"] for reason in reasons)
        raise ClientError(
            {
                "Error": {
                    "Code": "TransactionCanceledException",
                    "Message": f"Transaction cancelled, please refer cancellation reasons for specific "
                    f"reasons [{codes}]",
                },
                "CancellationReasons": reasons,
            },
            "TransactWriteItems",
        )


class FailingUpdates:
    """Wraps a DynamoDB client so that UpdateItem calls whose UpdateExpression is `expression` time out.

    As in a brownout that hits some writes: the caller sees botocore's ReadTimeoutError.
    """

    def __init__(self, client: Any, expression: str) -> None:
        self._client = client
        self._expression = expression
        self.failed = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def update_item(self, **kwargs: Any) -> Any:
        """Fails the matching update, else passes it on."""
        if kwargs.get("UpdateExpression") == self._expression:
            self.failed += 1
            raise ReadTimeoutError(endpoint_url="http://dynamodb.invalid")
        return self._client.update_item(**kwargs)


class LosingReplies:
    """Wraps a DynamoDB client so that the reply of its next `count` requests of an operation is lost.

    Each such request is applied, and its answer (success or error) never comes back: the request is sent
    again, as botocore's retries and the lean client's send it after a connection error or a timeout, and
    the caller gets the repeat's answer; `between` runs between the two (another writer's request that
    reaches the table first). Only writes (WRITES) can be planned; everything else goes to the
    client. tests/fakes/faults.LostReplies is the fakes' same plan.
    """

    WRITES = frozenset({"put_item", "update_item", "transact_write_items"})

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._planned: Counter[str] = Counter()
        self._between: dict[str, Callable[[], object]] = {}
        self.lost = 0

    def lose(self, operation: str, count: int = 1, between: Callable[[], object] | None = None) -> None:
        """Loses the reply of the next count requests of operation (a method name of the client), running
        between() before each repeat."""
        if operation not in self.WRITES:
            raise ValueError(f"only writes lose replies here, not {operation}")
        with self._lock:
            self._planned[operation] = count
            self._between[operation] = between or (lambda: None)

    def __getattr__(self, name: str) -> Any:
        if name in self.WRITES:
            return functools.partial(self._send, name)
        return getattr(self._client, name)

    def _send(self, operation: str, **kwargs: Any) -> Any:
        call = getattr(self._client, operation)
        with self._lock:
            between = self._between[operation] if self._planned[operation] > 0 else None
            if between is not None:
                self._planned[operation] -= 1
                self.lost += 1
        if between is not None:
            with contextlib.suppress(Exception):
                call(**kwargs)  # applied (or refused); the answer is lost on the way back
            between()
        return call(**kwargs)
