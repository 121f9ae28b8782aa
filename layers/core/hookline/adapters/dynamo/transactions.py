"""TransactWriteItems with its cancellations told apart: a failed condition, or a reason to try again."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from hookline.adapters.dynamo import codec
from hookline.domain.errors import DependencyDown

CONDITION_FAILED = "ConditionalCheckFailed"
# Cancellation reasons that say nothing about the items: the same transaction may succeed when sent again.
# (botocore's own retries never see them: a cancelled transaction is a 400 carrying these reasons.)
TRANSIENT_REASONS = frozenset(
    {
        "TransactionConflict",
        "ThrottlingError",
        "ProvisionedThroughputExceeded",
        "RequestLimitExceeded",
        "InternalServerError",
    }
)
ATTEMPTS = 5
FIRST_BACKOFF_S = 0.05
MAX_BACKOFF_S = 1.0


def cancellation_reasons(error: ClientError) -> list[str]:
    """Returns the reason code of each item of a cancelled transaction, in TransactItems order."""
    reasons = error.response.get("CancellationReasons") or []
    return [str(reason.get("Code") or "None") for reason in reasons]


class Transactions:
    """Writes transactions, retrying transient cancellations with bounded, jittered backoff."""

    def __init__(
        self,
        client: Any,
        attempts: int = ATTEMPTS,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self._client = client
        self._attempts = attempts
        self._sleep = sleep
        self._rng = rng or random.Random()

    def write(self, items: list[dict[str, Any]]) -> list[str] | None:
        """Writes items in one transaction; returns None when written, or the reasons when a condition failed.

        A cancellation counts as a failed condition only when some item's reason is ConditionalCheckFailed;
        the caller reads which item from the reasons. Any other cancellation (a conflicting transaction,
        throttling, an internal error) changed nothing and is retried.

        Raises:
            DependencyDown: The transaction kept being cancelled for transient reasons.
            ClientError: Any other failure (after botocore's own retries).
        """
        reasons: list[str] = []
        for attempt in range(self._attempts):
            if attempt:
                ceiling_s = min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2 ** (attempt - 1))
                self._sleep(self._rng.uniform(ceiling_s / 2, ceiling_s))
            try:
                self._client.transact_write_items(TransactItems=items)
            except ClientError as error:
                if codec.error_code(error) != "TransactionCanceledException":
                    raise
                reasons = cancellation_reasons(error)
                if CONDITION_FAILED in reasons:
                    return reasons
                unknown = set(reasons) - TRANSIENT_REASONS - {"None"}
                if unknown or not reasons:
                    # A validation problem (or a shape we cannot read) does not heal by waiting.
                    raise
                continue
            return None
        raise DependencyDown(
            f"dynamodb kept cancelling the transaction ({', '.join(sorted(set(reasons) - {'None'}))}); "
            "retry later"
        )
