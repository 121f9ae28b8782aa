"""API key records and tenant signing secrets, as the key store keeps them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KeyRecord:
    """An API key as stored: who it belongs to and how to check its secret."""

    key_id: str
    tenant: str
    secret_sha256: str
    scopes: tuple[str, ...]
    created_ms: int
    revoked_ms: int | None = None
    rate_limit_per_s: int | None = None  # API requests per second; None: the deployment's default


@dataclass(frozen=True)
class SigningSecrets:
    """A tenant's callback signing secrets: the current one, and the previous one while it is rotated out."""

    current: str
    previous: str | None = None
    previous_until_ms: int | None = None

    def active(self, now_ms: int) -> list[str]:
        """Returns the secrets to sign with now (two during a rotation's overlap)."""
        if self.previous and self.previous_until_ms is not None and now_ms < self.previous_until_ms:
            return [self.current, self.previous]
        return [self.current]

    def rotated(self, fresh: str, now_ms: int, overlap_s: int) -> SigningSecrets:
        """Returns the secrets after a rotation to fresh: the current one signs too for overlap_s more.

        Only the secret current now is kept: a rotation during another's overlap ends that overlap (the
        secret before it stops signing at once), so at most two secrets ever sign. With no overlap (0), or
        no current secret, only fresh signs.
        """
        if overlap_s <= 0:
            return SigningSecrets(fresh)
        return SigningSecrets(fresh, self.current, now_ms + overlap_s * 1000)
