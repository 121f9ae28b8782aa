"""The request bin records callbacks, says whether their Standard Webhooks signature verifies, lists them."""

from __future__ import annotations

import json

from hookline.domain.signing import new_signing_secret, signature_header
from hookline_local.gateway import HttpRequest
from hookline_local.sink import MAX_KEPT, RequestBin

SECRET = new_signing_secret()


def _signed(body: bytes, secret: str = SECRET) -> HttpRequest:
    headers = [
        ("webhook-id", "job1"),
        ("webhook-timestamp", "1700000000"),
        ("webhook-signature", signature_header([secret], "job1", 1_700_000_000, body)),
    ]
    return HttpRequest("POST", "/dev/sink", headers, body)


def test_given_signed_callback_when_recorded_then_listing_shows_it_with_a_valid_signature() -> None:
    sink = RequestBin(lambda: [SECRET])

    assert sink.serve(_signed(b'{"a":1}')).status == 200
    listed = json.loads(sink.serve(HttpRequest("GET", "/dev/sink")).body)["requests"]

    assert len(listed) == 1
    assert listed[0]["body"] == '{"a":1}'
    assert listed[0]["headers"]["webhook-id"] == "job1"
    assert listed[0]["signature_valid"] is True


def test_given_other_secret_or_no_signature_when_recorded_then_validity_says_so() -> None:
    sink = RequestBin(lambda: [SECRET])

    forged = sink.record(_signed(b"x", secret=new_signing_secret()))
    unsigned = sink.record(HttpRequest("POST", "/dev/sink", [], b"x"))

    assert forged["signature_valid"] is False
    assert unsigned["signature_valid"] is None


def test_given_rotation_when_either_secret_signed_then_it_verifies() -> None:
    old = new_signing_secret()
    sink = RequestBin(lambda: [SECRET, old])

    assert sink.record(_signed(b"x", secret=old))["signature_valid"] is True


def test_given_delete_when_listing_then_the_bin_is_empty() -> None:
    sink = RequestBin(lambda: [SECRET])
    sink.record(_signed(b"x"))

    assert sink.serve(HttpRequest("DELETE", "/dev/sink")).status == 204
    assert json.loads(sink.serve(HttpRequest("GET", "/dev/sink")).body) == {"requests": []}


def test_given_more_than_the_bound_when_recording_then_only_the_newest_are_kept() -> None:
    sink = RequestBin(lambda: [])
    for number in range(MAX_KEPT + 5):
        sink.record(HttpRequest("POST", f"/dev/sink/{number}"))

    listed = json.loads(sink.serve(HttpRequest("GET", "/dev/sink")).body)["requests"]

    assert len(listed) == MAX_KEPT
    assert listed[0]["path"] == "/dev/sink/5"
