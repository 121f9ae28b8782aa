"""Which DynamoDB failures are transient: the one list the adapters and the API's answer both read."""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError

from hookline.adapters.dynamo import codec

# The error codes of a single call (after the client's own retries) that say nothing about the item: the
# service was unavailable, overloaded or busy with a conflicting transaction, and the write was not applied by
# that request (an earlier try whose reply was lost may have been). Sent again later, it may succeed.
TRANSIENT_ERROR_CODES = frozenset(
    {
        "TransactionConflictException",
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
    }
)


def is_transient(error: BotoCoreError | ClientError) -> bool:
    """Tells whether a DynamoDB failure means "unavailable right now" rather than "this request is wrong".

    A BotoCoreError never reached the service (no connection, a timeout, a reply it could not read), so it is
    transient too; any other ClientError (a validation error, a missing table) does not heal by waiting.
    """
    return isinstance(error, BotoCoreError) or codec.error_code(error) in TRANSIENT_ERROR_CODES
