"""A tenant's signing-secret rotation: both secrets sign during the overlap, only the new one after, and of
two racing rotations one fails without losing the other's secret."""

from __future__ import annotations

import pytest

from hookline.domain.errors import SigningSecretChanged
from hookline.domain.keys import SigningSecrets
from hookline.domain.signing import callback_headers
from hookline.usecases.signing_secrets import (
    SECRETS_CACHE_TTL_MS,
    SigningSecretProvider,
    rotate_signing_secret,
)
from hookline_client.receiving import WebhookVerificationError, verify
from tests.fakes.clock import FrozenClock
from tests.fakes.keys import FakeKeyStore

T0_MS = 1_767_225_600_000
OLD = "whsec_" + "b2xkLXNlY3JldC1vbGQtc2VjcmV0LW9sZC1zZWNyZXQ="
BODY = b'{"n":1}'


def signed_headers(secrets: list[str], now_ms: int) -> dict[str, str]:
    """Returns the headers a delivery signed with secrets carries (what the executor sends)."""
    return callback_headers(secrets, "msg_1", now_ms // 1000, BODY, 1)


def verifies(headers: dict[str, str], secret: str, now_ms: int) -> bool:
    try:
        verify(BODY, headers, secret, now_s=now_ms / 1000)
    except WebhookVerificationError:
        return False
    return True


def test_given_a_rotation_with_overlap_then_deliveries_verify_with_either_secret_until_it_ends() -> None:
    store, clock = FakeKeyStore(), FrozenClock(T0_MS)
    store.secrets["acme"] = SigningSecrets(OLD)

    rotation = rotate_signing_secret(store, "acme", clock.now_ms(), overlap_s=3600)
    provider = SigningSecretProvider(store, clock)
    during = signed_headers(provider.secrets_for("acme"), clock.now_ms())
    clock.advance(3600 * 1000)
    after = signed_headers(provider.secrets_for("acme"), clock.now_ms())

    assert rotation.previous_until_ms == T0_MS + 3600 * 1000
    assert (verifies(during, rotation.secret, T0_MS), verifies(during, OLD, T0_MS)) == (True, True)
    end_ms = clock.now_ms()
    assert (verifies(after, rotation.secret, end_ms), verifies(after, OLD, end_ms)) == (True, False)


def test_given_a_warm_executor_then_it_signs_with_both_within_the_cache_bound() -> None:
    store, clock = FakeKeyStore(), FrozenClock(T0_MS)
    store.secrets["acme"] = SigningSecrets(OLD)
    provider = SigningSecretProvider(store, clock)
    assert provider.secrets_for("acme") == [OLD]  # warm: the secrets before the rotation are cached

    rotation = rotate_signing_secret(store, "acme", clock.now_ms(), overlap_s=3600)
    clock.advance(SECRETS_CACHE_TTL_MS)

    assert provider.secrets_for("acme") == [rotation.secret, OLD]


def test_given_no_overlap_when_rotated_then_only_the_new_secret_signs() -> None:
    store = FakeKeyStore()
    store.secrets["acme"] = SigningSecrets(OLD)

    rotation = rotate_signing_secret(store, "acme", T0_MS, overlap_s=0)

    assert rotation.previous_until_ms is None
    assert store.secrets["acme"] == SigningSecrets(rotation.secret)


def test_given_no_secret_yet_when_rotated_then_the_new_one_alone_is_stored() -> None:
    store = FakeKeyStore()

    rotation = rotate_signing_secret(store, "acme", T0_MS, 3600)

    assert (rotation.previous_until_ms, store.secrets["acme"]) == (None, SigningSecrets(rotation.secret))


def test_given_a_rotation_during_another_overlap_then_the_oldest_secret_stops_signing() -> None:
    store = FakeKeyStore()
    store.secrets["acme"] = SigningSecrets(OLD)
    first = rotate_signing_secret(store, "acme", T0_MS, 3600)

    second = rotate_signing_secret(store, "acme", T0_MS + 1_000, 60)

    assert store.secrets["acme"].active(T0_MS + 2_000) == [second.secret, first.secret]


class RacedStore(FakeKeyStore):
    """A key store where another rotation writes between this rotation's read and its write."""

    def __init__(self, winner: SigningSecrets) -> None:
        super().__init__()
        self.winner = winner

    def get_signing_secrets(self, tenant: str) -> SigningSecrets | None:
        found = super().get_signing_secrets(tenant)
        self.secrets[tenant] = self.winner  # the other rotation's write lands now
        return found


def test_given_two_rotations_racing_when_the_later_writes_then_409_and_the_winner_stays() -> None:
    winner = SigningSecrets("whsec_" + "d2lubmVyLXdpbm5lci13aW5uZXItd2lubmVyLXdpbg==", OLD, T0_MS + 60_000)
    store = RacedStore(winner)
    store.secrets["acme"] = SigningSecrets(OLD)

    with pytest.raises(SigningSecretChanged) as refused:
        rotate_signing_secret(store, "acme", T0_MS, 3600)

    assert (refused.value.http_status, refused.value.code) == (409, "signing_secret_changed")
    assert store.secrets["acme"] == winner
