"""Tenant signing secrets: created on first use, cached per warm executor, rotated by their tenant."""

from __future__ import annotations

from dataclasses import dataclass

from hookline.domain.errors import SigningSecretChanged
from hookline.domain.keys import SigningSecrets
from hookline.domain.signing import new_signing_secret
from hookline.ports import Clock, KeyReader

# A rotation becomes visible to warm executors within this bound; rotations keep the old secret longer.
SECRETS_CACHE_TTL_MS = 60_000


class SigningSecretProvider:
    """Returns the secrets to sign a tenant's callbacks with."""

    def __init__(self, store: KeyReader, clock: Clock, cache_ttl_ms: int = SECRETS_CACHE_TTL_MS) -> None:
        self._store = store
        self._clock = clock
        self._cache_ttl_ms = cache_ttl_ms
        self._cache: dict[str, tuple[SigningSecrets, int]] = {}

    def secrets_for(self, tenant: str) -> list[str]:
        """Returns the active secrets (two during a rotation), creating the tenant's first one if needed."""
        now_ms = self._clock.now_ms()
        cached = self._cache.get(tenant)
        if cached is None or now_ms - cached[1] >= self._cache_ttl_ms:
            cached = (self._load(tenant, now_ms), now_ms)
            self._cache[tenant] = cached
        return cached[0].active(now_ms)

    def _load(self, tenant: str, now_ms: int) -> SigningSecrets:
        found = self._store.get_signing_secrets(tenant)
        if found is not None:
            return found
        # Two executors may race to create it: the conditional put lets one win, and both read the winner.
        self._store.put_signing_secrets(
            tenant, SigningSecrets(new_signing_secret()), now_ms, only_if_missing=True
        )
        created = self._store.get_signing_secrets(tenant)
        assert created is not None
        return created


@dataclass(frozen=True)
class Rotation:
    """A rotation's result: the new secret (shown once) and until when the one it replaced signs too."""

    secret: str
    previous_until_ms: int | None  # None: nothing else signs (no overlap, or the tenant had no secret)


def rotate_signing_secret(store: KeyReader, tenant: str, now_ms: int, overlap_s: int) -> Rotation:
    """Makes a fresh secret the tenant's current one; the one it replaces signs too for overlap_s.

    The write is conditional on the current secret read here, so that two rotations racing never lose one's
    new secret: the later write fails with SigningSecretChanged and changes nothing. Warm executors see the
    rotation within SECRETS_CACHE_TTL_MS, signing with the replaced secret alone until then.

    Raises:
        SigningSecretChanged: Another rotation (or the executor's first-use creation) wrote meanwhile.
    """
    found = store.get_signing_secrets(tenant)
    fresh = new_signing_secret()
    rotated = found.rotated(fresh, now_ms, overlap_s) if found else SigningSecrets(fresh)
    if not store.replace_signing_secrets(tenant, rotated, now_ms, found.current if found else None):
        raise SigningSecretChanged("the signing secret was rotated meanwhile; read it again and retry")
    return Rotation(fresh, rotated.previous_until_ms)
