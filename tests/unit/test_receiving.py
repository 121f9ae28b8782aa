"""hookline_client.verify: Standard Webhooks verification of signatures, rotations and time tolerance."""

from __future__ import annotations

import base64
import time
from datetime import UTC, datetime

import pytest
from standardwebhooks import Webhook

import hookline_client as hookline
from hookline.domain.signing import callback_headers, new_signing_secret

BODY = b'{"order": 42, "note": "caf\xc3\xa9"}'


def test_given_hookline_signed_callback_when_verified_then_the_body_is_returned_parsed() -> None:
    secret = new_signing_secret()
    headers = callback_headers([secret], "job-1", int(time.time()), BODY, attempt=1)

    assert hookline.verify(BODY, headers, secret) == {"order": 42, "note": "café"}
    assert hookline.verify(BODY.decode(), {k.upper(): v for k, v in headers.items()}, secret)["order"] == 42


@pytest.mark.parametrize(
    ("body", "msg_id", "other_secret", "age_s", "drop", "reason"),
    [
        (BODY + b" ", "job-1", False, 0, None, "no signature"),
        (BODY, "job-2", False, 0, None, "no signature"),
        (BODY, "job-1", True, 0, None, "no signature"),
        (BODY, "job-1", False, 301, None, "tolerance"),
        (BODY, "job-1", False, -301, None, "tolerance"),
        (BODY, "job-1", False, 0, "webhook-signature", "missing"),
    ],
)
def test_given_tampered_or_stale_callback_when_verified_then_it_is_refused(
    body: bytes, msg_id: str, other_secret: bool, age_s: int, drop: str | None, reason: str
) -> None:
    secret = new_signing_secret()
    now = int(time.time())
    headers = callback_headers([secret], "job-1", now - age_s, BODY, attempt=1)
    headers["webhook-id"] = msg_id
    if drop:
        del headers[drop]
    receiver_secret = new_signing_secret() if other_secret else secret

    with pytest.raises(hookline.WebhookVerificationError, match=reason):
        hookline.verify(body, headers, receiver_secret, now_s=now)


def test_given_rotation_when_either_side_holds_either_secret_then_verification_passes() -> None:
    old, new = new_signing_secret(), new_signing_secret()
    now = int(time.time())
    both_signed = callback_headers([new, old], "job-1", now, BODY, attempt=1)
    new_only = callback_headers([new], "job-1", now, BODY, attempt=1)

    assert hookline.verify(BODY, both_signed, old)["order"] == 42  # receiver not yet updated
    assert hookline.verify(BODY, both_signed, new)["order"] == 42  # receiver already updated
    assert hookline.verify(BODY, new_only, [new, old])["order"] == 42  # receiver holding both
    with pytest.raises(hookline.WebhookVerificationError):
        hookline.verify(BODY, new_only, old)  # the overlap is over: the old secret no longer verifies


def test_given_standard_webhooks_library_when_signing_or_verifying_then_it_agrees_with_verify() -> None:
    secret = new_signing_secret()
    now = int(time.time())
    library = Webhook(secret)
    signed_by_library = {
        "webhook-id": "msg-1",
        "webhook-timestamp": str(now),
        "webhook-signature": library.sign("msg-1", datetime.fromtimestamp(now, tz=UTC), BODY.decode()),
    }
    ours = callback_headers([secret], "msg-2", now, BODY, attempt=1)

    assert hookline.verify(BODY, signed_by_library, secret)["order"] == 42
    assert library.verify(BODY, ours)["order"] == 42


def test_given_a_text_body_or_secret_without_prefix_when_verified_then_text_comes_back() -> None:
    secret = new_signing_secret()
    headers = callback_headers([secret], "job-1", int(time.time()), b"plain text", attempt=1)

    assert hookline.verify(b"plain text", headers, secret.removeprefix("whsec_")) == "plain text"
    with pytest.raises(ValueError, match="whsec_"):
        hookline.verify(b"plain text", headers, "whsec_" + base64.b64encode(b"k").decode() + "!")


def test_given_the_client_verify_when_compared_with_the_server_signer_then_prefix_and_version_agree() -> None:
    # hookline_client.verify needs nothing of the server, so it states the scheme's constants itself.
    from hookline.domain import signing
    from hookline_client import receiving

    assert (receiving.SECRET_PREFIX, receiving.SIGNATURE_VERSION) == (
        signing.SECRET_PREFIX,
        signing.SIGNATURE_VERSION,
    )
