"""KeyReader contract (key records, signing secrets with only_if_missing), fake and moto alike."""

from __future__ import annotations

from hookline.domain.keys import KeyRecord, SigningSecrets
from tests.contract.conftest import DynamoBackend

NOW = 1_767_225_600_000


def test_given_key_stored_when_read_then_same_record_and_unknown_is_none(
    dynamo_backend: DynamoBackend,
) -> None:
    record = KeyRecord(
        f"k{dynamo_backend.tenant}", dynamo_backend.tenant, "ab" * 32, ("jobs:read",), NOW, None, 7
    )
    dynamo_backend.keys.put_key(record)

    assert dynamo_backend.keys.get_key(record.key_id) == record
    assert dynamo_backend.keys.get_key(f"missing{dynamo_backend.tenant}") is None
    assert dynamo_backend.keys.get_key(f"tenant#{dynamo_backend.tenant}") is None


def test_given_no_secrets_when_put_only_if_missing_then_first_wins(dynamo_backend: DynamoBackend) -> None:
    tenant, keys = dynamo_backend.tenant, dynamo_backend.keys
    first, second = SigningSecrets("whsec_first"), SigningSecrets("whsec_second", "whsec_first", NOW + 5)

    assert keys.get_signing_secrets(tenant) is None
    assert keys.put_signing_secrets(tenant, first, NOW, only_if_missing=True) is True
    assert keys.put_signing_secrets(tenant, second, NOW, only_if_missing=True) is False
    assert keys.get_signing_secrets(tenant) == first
    assert keys.put_signing_secrets(tenant, second, NOW) is True
    assert keys.get_signing_secrets(tenant) == second
    assert keys.get_key(f"tenant#{tenant}") is None  # the tenant item is not a key


def test_given_a_shard_count_recorded_when_a_lower_one_is_recorded_then_the_larger_stays(
    dynamo_backend: DynamoBackend,
) -> None:
    keys = dynamo_backend.keys
    # The suite's tables are shared, so the test starts from whatever count is recorded.
    start = keys.record_shards(1, NOW)

    assert keys.record_shards(start + 3, NOW + 1) == start + 3
    assert keys.record_shards(start + 1, NOW + 2) == start + 3
    assert keys.record_shards(start + 4, NOW + 3) == start + 4
    assert keys.get_key("deployment#shards") is None  # the record is not a key


def test_given_a_bucket_count_recorded_then_every_later_record_returns_it(
    dynamo_backend: DynamoBackend,
) -> None:
    keys = dynamo_backend.keys
    first = keys.record_buckets(5, NOW)  # the moto table is shared by the session: 5 unless run before

    assert keys.record_buckets(7, NOW + 1) == first
    assert keys.record_buckets(first, NOW + 2) == first
    assert dynamo_backend.name == "real" or first == 5


def test_given_secrets_when_replaced_then_only_while_the_current_one_is_the_one_seen(
    dynamo_backend: DynamoBackend,
) -> None:
    tenant, keys = dynamo_backend.tenant, dynamo_backend.keys
    first = SigningSecrets("whsec_first")
    rotated = SigningSecrets("whsec_second", "whsec_first", NOW + 5)

    assert keys.replace_signing_secrets(tenant, first, NOW, "whsec_other") is False  # none yet
    assert keys.get_signing_secrets(tenant) is None
    assert keys.replace_signing_secrets(tenant, first, NOW, None) is True
    assert keys.replace_signing_secrets(tenant, rotated, NOW, None) is False  # some exist now
    assert keys.replace_signing_secrets(tenant, rotated, NOW, "whsec_other") is False
    assert keys.get_signing_secrets(tenant) == first
    assert keys.replace_signing_secrets(tenant, rotated, NOW, "whsec_first") is True
    assert keys.get_signing_secrets(tenant) == rotated
