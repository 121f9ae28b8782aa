"""API keys: minting, checking, the cache, revocation."""

from __future__ import annotations

import pytest

from hookline.adapters.dynamo.key_store import KeyRecord
from hookline.domain.errors import Unauthorized
from hookline.usecases.auth import Authenticator, hash_secret, mint_key
from tests.fakes.clock import FrozenClock


class FakeKeyStore:
    def __init__(self) -> None:
        self.records: dict[str, KeyRecord] = {}
        self.lookups = 0

    def get_key(self, key_id: str) -> KeyRecord | None:
        self.lookups += 1
        return self.records.get(key_id)


@pytest.fixture
def store() -> FakeKeyStore:
    return FakeKeyStore()


def authenticator(store: FakeKeyStore, clock: FrozenClock) -> Authenticator:
    return Authenticator(store, clock, cache_ttl_ms=30_000)


def test_given_minted_key_when_authenticated_then_principal_of_its_tenant(store: FakeKeyStore) -> None:
    record, api_key = mint_key("acme", 1)
    store.records[record.key_id] = record

    principal = authenticator(store, FrozenClock(1)).authenticate(api_key)

    assert (principal.tenant, principal.key_id) == ("acme", record.key_id)
    assert api_key.startswith(f"hl_{record.key_id}_")
    assert record.secret_sha256 == hash_secret(api_key.split("_", 2)[2])


@pytest.mark.parametrize(
    "presented",
    [None, "", "Bearer x", "hl_short_secret", "hl_0123456789abcdef_" + "0" * 48],
    ids=["missing", "empty", "garbage", "malformed", "unknown_key_id"],
)
def test_given_bad_key_when_authenticated_then_unauthorized(
    store: FakeKeyStore, presented: str | None
) -> None:
    with pytest.raises(Unauthorized, match="missing or invalid API key"):
        authenticator(store, FrozenClock(1)).authenticate(presented)


def test_given_wrong_secret_for_known_id_when_authenticated_then_unauthorized(store: FakeKeyStore) -> None:
    record, api_key = mint_key("acme", 1)
    store.records[record.key_id] = record
    forged = api_key[:-1] + ("0" if api_key[-1] != "0" else "1")

    with pytest.raises(Unauthorized):
        authenticator(store, FrozenClock(1)).authenticate(forged)


def test_given_revoked_key_when_cache_expires_then_rejected_within_the_bound(store: FakeKeyStore) -> None:
    record, api_key = mint_key("acme", 1)
    store.records[record.key_id] = record
    clock = FrozenClock(1_000)
    auth = authenticator(store, clock)
    auth.authenticate(api_key)

    store.records[record.key_id] = KeyRecord(**{**record.__dict__, "revoked_ms": 1_500})
    clock.advance(29_000)
    auth.authenticate(api_key)  # still cached: the documented bound
    clock.advance(1_000)

    with pytest.raises(Unauthorized):
        auth.authenticate(api_key)
    assert store.lookups == 2
