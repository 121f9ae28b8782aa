"""Standard Webhooks signing: the headers a receiver checks with any Standard Webhooks library."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets as _secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import lru_cache

SECRET_PREFIX = "whsec_"
SIGNATURE_VERSION = "v1"
SECRET_KEY_BYTES = 32


def new_signing_secret() -> str:
    """Creates a fresh signing secret in the `whsec_<base64 key>` form receivers expect.

    Returns:
        "whsec_" followed by the standard base64 of 32 random bytes.
    """
    key = _secrets.token_bytes(SECRET_KEY_BYTES)
    return SECRET_PREFIX + base64.b64encode(key).decode("ascii")


@lru_cache(maxsize=1024)  # a tenant's secrets sign every one of its callbacks
def _secret_key(secret: str) -> bytes:
    """Decodes the HMAC key from a `whsec_` secret.

    Args:
        secret: A secret made by `new_signing_secret` (the prefix is required).

    Returns:
        The raw key bytes.

    Raises:
        ValueError: The secret lacks the prefix, is not base64 or is empty.
    """
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError(f"signing secret must start with {SECRET_PREFIX!r}")
    key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    if not key:
        raise ValueError("signing secret has an empty key")
    return key


def signature_header(secrets: Sequence[str], msg_id: str, timestamp_s: int, body: bytes) -> str:
    """Builds the `webhook-signature` value: one `v1,<base64 HMAC-SHA256>` per secret, space-separated.

    During a rotation the tenant has two secrets; signing with both lets a receiver that still holds
    the old secret (or already holds the new one) verify every callback.

    Args:
        secrets: The tenant's current secrets, newest first; at least one.
        msg_id: The `webhook-id`, stable across all attempts of one job.
        timestamp_s: The `webhook-timestamp`, in Unix seconds.
        body: The exact bytes sent as the request body.

    Returns:
        The header value.

    Raises:
        ValueError: No secret was given, or a secret is malformed.
    """
    if not secrets:
        raise ValueError("at least one signing secret is required")
    signed = f"{msg_id}.{timestamp_s}.".encode() + body
    parts = []
    for secret in secrets:
        # hmac.new, not the one-shot hmac.digest: that one lets go of the interpreter lock around every
        # call (a thread switch per callback among the delivery threads); this one, on a small body, never.
        digest = hmac.new(_secret_key(secret), signed, hashlib.sha256).digest()
        parts.append(f"{SIGNATURE_VERSION},{base64.b64encode(digest).decode('ascii')}")
    return " ".join(parts)


def rfc3339_utc(time_ms: int) -> str:
    """Formats a Unix time in milliseconds as RFC 3339 UTC with millisecond precision.

    Args:
        time_ms: Milliseconds since the Unix epoch.

    Returns:
        For example "2024-05-01T12:00:00.000Z".
    """
    moment = datetime.fromtimestamp(time_ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{time_ms % 1000:03d}Z"


def callback_headers(
    secrets: Sequence[str],
    msg_id: str,
    timestamp_s: int,
    body: bytes,
    attempt: int,
    *,
    schedule_id: str | None = None,
    fire_time_ms: int | None = None,
) -> dict[str, str]:
    """Builds the headers of one callback attempt: the Standard Webhooks trio plus Hookline's own.

    Args:
        secrets: The tenant's current signing secrets, newest first.
        msg_id: The job id, sent as `webhook-id` (the receiver's idempotency key).
        timestamp_s: When this attempt is signed, in Unix seconds.
        body: The exact bytes sent as the request body.
        attempt: The 1-based attempt number.
        schedule_id: The schedule that fired the job, if any.
        fire_time_ms: The schedule's nominal fire time in Unix milliseconds; sent only with a schedule id.

    Returns:
        Header names to values, to merge over the job's own headers.
    """
    headers = {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp_s),
        "webhook-signature": signature_header(secrets, msg_id, timestamp_s, body),
        "Hookline-Attempt": str(attempt),
    }
    if schedule_id is not None:
        headers["Hookline-Schedule-Id"] = schedule_id
        if fire_time_ms is not None:
            headers["Hookline-Fire-Time"] = rfc3339_utc(fire_time_ms)
    return headers
