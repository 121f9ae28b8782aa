"""API keys and signing secrets: the key reader (hookline.ports.KeyReader) and a fixed SecretProvider."""

from __future__ import annotations

import threading

from hookline.domain.keys import KeyRecord, SigningSecrets
from tests.fakes.faults import Faults, dynamo_down, port_call


class FakeKeyStore:
    """Key records and tenant signing secrets, as adapters/dynamo/key_store.py keeps them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.keys: dict[str, KeyRecord] = {}
        self.secrets: dict[str, SigningSecrets] = {}
        self.shards = 0  # the deployment's recorded shard count (0: none recorded yet)
        self.buckets = 0  # the recorded job bucket count (0: none recorded yet)
        self._faults = Faults(dynamo_down)

    @property
    def faults(self) -> Faults:
        """Returns the fault plan of this fake's calls (default error: DynamoUnavailable)."""
        return self._faults

    @port_call
    def put_key(self, record: KeyRecord) -> None:
        """Stores a key record (the test's way in; KeyReader has no writer of keys)."""
        with self._lock:
            self.keys[record.key_id] = record

    @port_call
    def get_key(self, key_id: str) -> KeyRecord | None:
        """Returns the key's record, None when unknown."""
        with self._lock:
            return self.keys.get(key_id)

    @port_call
    def get_signing_secrets(self, tenant: str) -> SigningSecrets | None:
        """Returns the tenant's signing secrets, None before the first."""
        with self._lock:
            return self.secrets.get(tenant)

    @port_call
    def put_signing_secrets(
        self, tenant: str, secrets: SigningSecrets, now_ms: int, *, only_if_missing: bool = False
    ) -> bool:
        """Stores the tenant's secrets; with only_if_missing, False (nothing written) when some exist."""
        with self._lock:
            if only_if_missing and tenant in self.secrets:
                return False
            self.secrets[tenant] = secrets
            return True

    @port_call
    def replace_signing_secrets(
        self, tenant: str, secrets: SigningSecrets, now_ms: int, seen_current: str | None
    ) -> bool:
        """Stores the tenant's secrets while its current one is seen_current (None: none); else False."""
        with self._lock:
            found = self.secrets.get(tenant)
            if (found.current if found else None) != seen_current:
                return False
            self.secrets[tenant] = secrets
            return True

    @port_call
    def record_shards(self, shards: int, now_ms: int) -> int:
        """Records shards unless as many or more are recorded; returns the count recorded now."""
        with self._lock:
            self.shards = max(self.shards, shards)
            return self.shards

    @port_call
    def record_buckets(self, buckets: int, now_ms: int) -> int:
        """Records buckets unless a count is recorded; returns the count recorded now."""
        with self._lock:
            self.buckets = self.buckets or buckets
            return self.buckets


class StaticSecrets:
    """Signs every tenant's callbacks with the same fixed secrets (hookline.ports.SecretProvider)."""

    def __init__(self, *secrets: str) -> None:
        self._secrets = list(secrets) or ["whsec_" + "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="]
        self._faults = Faults(dynamo_down)

    @property
    def faults(self) -> Faults:
        """Returns the fault plan of this fake's calls (default error: DynamoUnavailable)."""
        return self._faults

    @port_call
    def secrets_for(self, tenant: str) -> list[str]:
        """Returns the fixed secrets."""
        return list(self._secrets)
