"""Standard Webhooks signing, verified with the reference `standardwebhooks` library."""

from __future__ import annotations

import base64
import time

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from hookline.domain.signing import callback_headers, new_signing_secret, signature_header

BODY = b'{"order": 42, "note": "caf\xc3\xa9"}'


def _now_s() -> int:
    # The reference verifier rejects timestamps more than five minutes from its own clock.
    return int(time.time())


def test_given_new_secret_when_decoded_then_whsec_prefix_and_32_byte_key() -> None:
    secret = new_signing_secret()

    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) == 32
    assert new_signing_secret() != secret


def test_given_one_secret_when_signed_then_reference_library_verifies() -> None:
    secret = new_signing_secret()
    headers = callback_headers([secret], "job_1", _now_s(), BODY, 1)

    Webhook(secret).verify(BODY, headers)


def test_given_rotation_when_signed_then_each_secret_verifies_alone() -> None:
    new, old = new_signing_secret(), new_signing_secret()
    headers = callback_headers([new, old], "job_1", _now_s(), BODY, 2)

    assert len(headers["webhook-signature"].split(" ")) == 2
    Webhook(new).verify(BODY, headers)
    Webhook(old).verify(BODY, headers)


def test_given_tampered_body_when_verified_then_rejected() -> None:
    secret = new_signing_secret()
    headers = callback_headers([secret], "job_1", _now_s(), BODY, 1)

    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(BODY.replace(b"42", b"43"), headers)


def test_given_other_secret_when_verified_then_rejected() -> None:
    headers = callback_headers([new_signing_secret()], "job_1", _now_s(), BODY, 1)

    with pytest.raises(WebhookVerificationError):
        Webhook(new_signing_secret()).verify(BODY, headers)


def test_given_known_key_when_signed_then_matches_reference_vector() -> None:
    # The example from the Standard Webhooks specification.
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = b'{"test": 2432232314}'

    signature = signature_header([secret], "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body)

    assert signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


@pytest.mark.parametrize("secrets", [[], ["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"], ["whsec_"], ["whsec_!!"]])
def test_given_bad_secrets_when_signed_then_value_error(secrets: list[str]) -> None:
    with pytest.raises(ValueError):
        signature_header(secrets, "job_1", 1, BODY)


def test_given_no_schedule_when_headers_built_then_only_signature_and_attempt() -> None:
    headers = callback_headers([new_signing_secret()], "job_1", 1_700_000_000, BODY, 3)

    assert set(headers) == {"webhook-id", "webhook-timestamp", "webhook-signature", "Hookline-Attempt"}
    assert headers["webhook-id"] == "job_1"
    assert headers["webhook-timestamp"] == "1700000000"
    assert headers["Hookline-Attempt"] == "3"


def test_given_schedule_when_headers_built_then_schedule_id_and_rfc3339_fire_time() -> None:
    headers = callback_headers(
        [new_signing_secret()],
        "job_1",
        1_700_000_000,
        BODY,
        1,
        schedule_id="sch_9",
        fire_time_ms=1_700_000_000_123,
    )

    assert headers["Hookline-Schedule-Id"] == "sch_9"
    assert headers["Hookline-Fire-Time"] == "2023-11-14T22:13:20.123Z"
