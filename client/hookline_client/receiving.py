"""Verifying Hookline's callbacks on the receiving side: Standard Webhooks signatures over the raw body.

Hookline signs `<webhook-id>.<webhook-timestamp>.<raw body>` with HMAC-SHA256 under each of the tenant's
`whsec_` secrets (two during a rotation) and sends `v1,<base64>` per secret in `webhook-signature`
(the server's hookline/domain/signing.py). A receiver passes the body exactly as received, before any JSON
parsing. This module needs nothing but the standard library.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

# The secret's prefix and the signature scheme's version, as the server signs (the tests hold the two equal).
SECRET_PREFIX = "whsec_"
SIGNATURE_VERSION = "v1"
DEFAULT_TOLERANCE_S = 300


class WebhookVerificationError(Exception):
    """The callback is not authentic (or too old, or too far in the future): reject it with 401/400."""


def verify(
    payload: bytes | str,
    headers: Mapping[str, str],
    secret: str | Sequence[str],
    *,
    tolerance_s: int = DEFAULT_TOLERANCE_S,
    now_s: float | None = None,
) -> Any:
    """Checks a callback's signature and timestamp; returns its body parsed as JSON (or as text).

    Args:
        payload: The raw request body, exactly as received.
        headers: The request headers (any case).
        secret: The tenant's `whsec_` secret, or several: during a rotation, pass both the new and the
            old one so callbacks signed by either pass.
        tolerance_s: How far `webhook-timestamp` may be from now, either way (replay protection).
        now_s: The current Unix time (tests).

    Raises:
        WebhookVerificationError: A header is missing, the timestamp is outside the tolerance, or no
            signature matches any secret.
    """
    body = payload.encode() if isinstance(payload, str) else bytes(payload)
    lowered = {name.lower(): value for name, value in headers.items()}
    msg_id, timestamp, signatures = (
        lowered.get("webhook-id"),
        lowered.get("webhook-timestamp"),
        lowered.get("webhook-signature"),
    )
    if not msg_id or not timestamp or not signatures:
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature")
    try:
        sent_s = int(timestamp)
    except ValueError as error:
        raise WebhookVerificationError("webhook-timestamp is not a Unix time") from error
    current_s = time.time() if now_s is None else now_s
    if abs(current_s - sent_s) > tolerance_s:
        raise WebhookVerificationError("webhook-timestamp is outside the tolerance")
    signed = f"{msg_id}.{sent_s}.".encode() + body
    expected = [_sign(key, signed) for key in _keys(secret)]
    for candidate in signatures.split():
        version, _, value = candidate.partition(",")
        if version != SIGNATURE_VERSION:
            continue
        # Compare against every expected signature without stopping early: constant time per pair.
        if any(hmac.compare_digest(value.encode(), digest) for digest in expected):
            return _decoded(body)
    raise WebhookVerificationError("no signature matches the secret")


def _keys(secret: str | Sequence[str]) -> list[bytes]:
    secrets = [secret] if isinstance(secret, str) else list(secret)
    if not secrets:
        raise ValueError("give at least one signing secret")
    keys = []
    for text in secrets:
        raw = text.removeprefix(SECRET_PREFIX)
        try:
            keys.append(base64.b64decode(raw, validate=True))
        except binascii.Error as error:
            raise ValueError("a signing secret is not whsec_<base64>") from error
    return keys


def _sign(key: bytes, signed: bytes) -> bytes:
    return base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest())


def _decoded(body: bytes) -> Any:
    text = body.decode("utf-8", errors="replace")
    try:
        return json.loads(text) if text else None
    except ValueError:
        return text
