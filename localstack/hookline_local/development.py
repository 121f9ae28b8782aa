"""What `hookline dev` gives a developer whichever stack runs: the development tenant's key and dev.env."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

from hookline.adapters.dynamo.key_store import DynamoKeyStore
from hookline.domain.clock import SystemClock
from hookline.domain.keys import SigningSecrets
from hookline.domain.signing import new_signing_secret
from hookline.usecases.auth import mint_key

DEV_TENANT = "dev"
REGION = "us-east-1"


def development_key(store: DynamoKeyStore) -> tuple[str, str]:
    """Creates an API key for the development tenant; returns it and the tenant's signing secret."""
    now_ms = SystemClock().now_ms()
    record, api_key = mint_key(DEV_TENANT, now_ms)
    store.put_key(record)
    store.put_signing_secrets(DEV_TENANT, SigningSecrets(new_signing_secret()), now_ms, only_if_missing=True)
    secrets = store.get_signing_secrets(DEV_TENANT)
    assert secrets is not None
    return api_key, secrets.current


def write_env_file(
    path: Path, environment: Mapping[str, str], api_url: str, api_key: str, signing_secret: str
) -> None:
    """Writes the stack's environment for the CLI (owner-only: it holds the key and the signing secret)."""
    lines = [
        "# Written by `hookline dev`, valid while it runs. Load: set -a; . .hookline/dev.env; set +a",
        *(f"{name}={shlex.quote(value)}" for name, value in sorted(environment.items())),
        f"HOOKLINE_API={shlex.quote(api_url)}",
        f"HOOKLINE_KEY={shlex.quote(api_key)}",
        f"HOOKLINE_SIGNING_SECRET={shlex.quote(signing_secret)}",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
