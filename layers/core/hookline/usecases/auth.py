"""API keys: minting `hl_<key id>_<secret>` keys and checking them in constant time, with a short cache."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from hookline.domain.errors import Unauthorized
from hookline.domain.keys import KeyRecord
from hookline.ports import Clock, KeyReader

KEY_PREFIX = "hl_"
_KEY_PATTERN = re.compile(r"^hl_([0-9a-f]{16})_([0-9a-f]{48})$")
# A warm Lambda trusts a looked-up key this long, so a revoked key stops working within this bound.
KEY_CACHE_TTL_MS = 30_000
# The scopes a key gets unless told otherwise. secrets:write (rotating the tenant's signing secret, which
# returns the new secret: whoever holds it can sign callbacks the tenant's receivers trust) is granted only
# when asked for by name.
ALL_SCOPES = ("jobs:write", "jobs:read", "schedules:write", "schedules:read", "queues:write", "queues:read")
SECRETS_SCOPE = "secrets:write"
KNOWN_SCOPES = (*ALL_SCOPES, SECRETS_SCOPE)


@dataclass(frozen=True)
class Principal:
    """Who a request acts for."""

    tenant: str
    key_id: str
    scopes: tuple[str, ...]
    rate_limit_per_s: int | None = None  # None: the deployment's default


def hash_secret(secret: str) -> str:
    """Returns the hex SHA-256 of a key's secret part (what the table stores)."""
    return hashlib.sha256(secret.encode()).hexdigest()


def mint_key(
    tenant: str,
    now_ms: int,
    scopes: tuple[str, ...] = ALL_SCOPES,
    rate_limit_per_s: int | None = None,
) -> tuple[KeyRecord, str]:
    """Returns a new key record and the full key text (shown once, never stored)."""
    key_id = secrets.token_hex(8)
    secret = secrets.token_hex(24)  # 192 random bits
    record = KeyRecord(key_id, tenant, hash_secret(secret), scopes, now_ms, rate_limit_per_s=rate_limit_per_s)
    return record, f"{KEY_PREFIX}{key_id}_{secret}"


class Authenticator:
    """Turns an API key into a Principal, or raises Unauthorized (the same error for every failure)."""

    def __init__(self, store: KeyReader, clock: Clock, cache_ttl_ms: int = KEY_CACHE_TTL_MS) -> None:
        self._store = store
        self._clock = clock
        self._cache_ttl_ms = cache_ttl_ms
        self._cache: dict[str, tuple[KeyRecord | None, int]] = {}

    def authenticate(self, api_key: str | None) -> Principal:
        """Checks the key and returns who it acts for."""
        match = _KEY_PATTERN.match(api_key or "")
        if match is None:
            raise Unauthorized("missing or invalid API key")
        key_id, secret = match.groups()
        record = self._lookup(key_id)
        # Compare even when the record is missing, so timing does not tell whether a key id exists.
        expected = record.secret_sha256 if record else hash_secret("")
        matches = hmac.compare_digest(expected, hash_secret(secret))
        if record is None or not matches or record.revoked_ms is not None:
            raise Unauthorized("missing or invalid API key")
        return Principal(record.tenant, record.key_id, record.scopes, record.rate_limit_per_s)

    def _lookup(self, key_id: str) -> KeyRecord | None:
        now_ms = self._clock.now_ms()
        cached = self._cache.get(key_id)
        if cached is not None and now_ms - cached[1] < self._cache_ttl_ms:
            return cached[0]
        record = self._store.get_key(key_id)
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[key_id] = (record, now_ms)
        return record
