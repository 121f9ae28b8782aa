"""POST /v1/signing-secret/rotate: a tenant rotates its own secret; deliveries sign with both during the
overlap, with the new one alone without it; the scope is asked for by name; bad input stores nothing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from hookline.domain.keys import SigningSecrets
from hookline.usecases.auth import ALL_SCOPES, SECRETS_SCOPE
from hookline_client import AsyncClient, Client, Forbidden
from hookline_client.cli import main
from hookline_client.receiving import WebhookVerificationError, verify
from hookline_client.schemas import SigningSecretRotationView
from tests.integration.api.conftest import OTHER_TENANT, TENANT, Api, make_key
from tests.support.apigw import ApiClient
from tests.support.receiver import Receiver

pytestmark = pytest.mark.integration

ROTATE = "/v1/signing-secret/rotate"
DAY_MS = 24 * 3600 * 1000
OLD = "whsec_" + "b2xkLXNlY3JldC1vbGQtc2VjcmV0LW9sZC1zZWNyZXQ="


def admin(api: Api) -> ApiClient:
    """Returns a client for acme whose key was given secrets:write by name, acme's secret seeded as OLD."""
    api.container.keys.put_signing_secrets(TENANT, SigningSecrets(OLD), api.container.clock.now_ms())
    return ApiClient(make_key(api.container, scopes=(*ALL_SCOPES, SECRETS_SCOPE)))


def delivered(api: Api, receiver: Receiver) -> tuple[bytes, dict[str, str]]:
    """Submits a job to the receiver, delivers it, and returns the body and headers it received."""
    api.acme.post("/v1/jobs", {"url": receiver.url(), "body": {"n": 1}})
    api.deliver_ready()
    [request] = receiver.requests
    return request.body, request.headers


def verifies(body: bytes, headers: dict[str, str], secret: str) -> bool:
    try:
        verify(body, headers, secret)
    except WebhookVerificationError:
        return False
    return True


def test_given_a_rotation_with_overlap_then_a_delivery_verifies_with_the_new_and_the_old_secret(
    api: Api, receiver: Receiver
) -> None:
    response = admin(api).post(ROTATE, {"overlap_s": 3600})

    assert response.status == 200
    view = response.json()
    assert view["secret"].startswith("whsec_") and view["previous_signs_until"] is not None
    body, headers = delivered(api, receiver)
    assert (verifies(body, headers, view["secret"]), verifies(body, headers, OLD)) == (True, True)
    assert len(headers["webhook-signature"].split()) == 2


def test_given_a_rotation_without_overlap_then_a_delivery_verifies_with_the_new_secret_only(
    api: Api, receiver: Receiver
) -> None:
    response = admin(api).post(ROTATE, {"overlap_s": 0})

    view = response.json()
    assert (response.status, view["previous_signs_until"]) == (200, None)
    body, headers = delivered(api, receiver)
    assert (verifies(body, headers, view["secret"]), verifies(body, headers, OLD)) == (True, False)


def test_given_no_body_field_then_a_day_of_overlap_and_the_other_tenant_untouched(api: Api) -> None:
    theirs = api.container.keys.get_signing_secrets(OTHER_TENANT)
    client = admin(api)
    before_ms = api.container.clock.now_ms()

    response = client.post(ROTATE, {})

    after_ms = api.container.clock.now_ms()
    stored = api.container.keys.get_signing_secrets(TENANT)
    assert stored is not None and stored.previous == OLD and stored.previous_until_ms is not None
    assert before_ms + DAY_MS <= stored.previous_until_ms <= after_ms + DAY_MS
    assert response.json()["secret"] == stored.current
    assert api.container.keys.get_signing_secrets(OTHER_TENANT) == theirs


def test_given_a_key_with_the_default_scopes_when_rotating_then_403_and_nothing_stored(api: Api) -> None:
    admin(api)

    response = api.acme.post(ROTATE, {"overlap_s": 60})

    assert (response.status, response.error_code) == (403, "forbidden")
    assert api.container.keys.get_signing_secrets(TENANT) == SigningSecrets(OLD)


@pytest.mark.parametrize(
    "body",
    [{"overlap_s": -1}, {"overlap_s": 604_801}, {"overlap_s": "60"}, {"overlap_s": 1.5}, {"overlap": 60}],
    ids=["negative", "over-a-week", "string", "fraction", "unknown-field"],
)
def test_given_a_bad_overlap_when_rotating_then_422_naming_it_and_nothing_stored(
    api: Api, body: dict[str, Any]
) -> None:
    response = admin(api).post(ROTATE, body)

    assert (response.status, response.error_code) == (422, "validation_error")
    assert response.json()["error"]["details"][0]["field"] in ("overlap_s", "overlap")
    assert api.container.keys.get_signing_secrets(TENANT) == SigningSecrets(OLD)


@pytest.mark.usefixtures("payload_format")
def test_given_the_clients_when_rotating_then_each_returns_the_secret_now_current(
    api: Api, served: str
) -> None:
    key = str(admin(api).api_key)

    with Client(served, key) as client:
        synchronous = client.rotate_signing_secret(overlap_s=60)
    asynchronous = asyncio.run(_rotate_async(served, key))

    stored = api.container.keys.get_signing_secrets(TENANT)
    assert stored == SigningSecrets(asynchronous.secret)  # the async call asked for no overlap
    assert synchronous.previous_signs_until is not None and synchronous.secret != asynchronous.secret


async def _rotate_async(served: str, key: str) -> SigningSecretRotationView:
    async with AsyncClient(served, key) as client:
        return await client.rotate_signing_secret(overlap_s=0)


def test_given_a_client_without_the_scope_when_rotating_then_forbidden(api: Api, served: str) -> None:
    with Client(served, str(api.acme.api_key)) as client, pytest.raises(Forbidden):
        client.rotate_signing_secret()


def test_given_the_cli_when_rotating_then_json_and_text_show_the_new_secret(
    api: Api, served: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOOKLINE_API", served)
    monkeypatch.setenv("HOOKLINE_KEY", str(admin(api).api_key))
    monkeypatch.chdir(tmp_path)  # no stray .hookline/dev.env from the checkout

    assert main(["signing-secret", "rotate", "--overlap-s", "60", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert main(["signing-secret", "rotate", "--overlap-s", "0"]) == 0
    text = capsys.readouterr().out

    stored = api.container.keys.get_signing_secrets(TENANT)
    assert stored is not None and shown["previous_signs_until"] is not None
    assert f"new signing secret: {stored.current}" in text and "only the new secret signs" in text
    assert shown["secret"] != stored.current
