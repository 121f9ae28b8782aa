"""DynamoDB faults moto cannot produce: cancelled transactions (throttled, conflicting), writes timing out."""

from __future__ import annotations

import threading
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
