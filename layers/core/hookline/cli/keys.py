"""`hookline keys`: create, list and revoke API keys; rotate a tenant's signing secret."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.table import Table

from hookline.adapters.dynamo.key_store import DynamoKeyStore
from hookline.api.views import rfc3339
from hookline.domain.clock import SystemClock
from hookline.domain.errors import NotFound, SigningSecretChanged
from hookline.domain.keys import SigningSecrets
from hookline.domain.signing import new_signing_secret
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import dynamodb_client
from hookline.usecases.auth import ALL_SCOPES, KEY_CACHE_TTL_MS, KNOWN_SCOPES, SECRETS_SCOPE, mint_key
from hookline.usecases.signing_secrets import rotate_signing_secret
from hookline_client.cli import output
from hookline_client.schemas import DEFAULT_ROTATION_OVERLAP_S, MAX_ROTATION_OVERLAP_S

TENANT_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def add_key_commands(commands: Any) -> None:
    """Adds `keys` and its subcommands to the top-level parser's subcommands."""
    keys = commands.add_parser("keys", help="manage API keys and signing secrets")
    actions = keys.add_subparsers(dest="action", required=True)

    create = actions.add_parser(
        "create", help="create a key; prints it (and a new tenant's signing secret) once"
    )
    create.add_argument("--tenant", required=True, type=_tenant)
    create.add_argument(
        "--scopes",
        default=",".join(ALL_SCOPES),
        help=f"comma-separated scopes (default: all but {SECRETS_SCOPE}, granted only when named)",
    )
    create.add_argument(
        "--rate-limit-per-s",
        type=_positive_int,
        default=None,
        help="API requests per second for this key (default: the deployment's HOOKLINE_API_RATE_LIMIT_PER_S)",
    )
    create.add_argument("--json", action="store_true", help="print JSON")
    create.set_defaults(run=_create)

    listing = actions.add_parser("list", help="list keys (never their secrets)")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(run=_list)

    revoke = actions.add_parser(
        "revoke", help="revoke a key (warm API instances stop accepting it within 30 s)"
    )
    revoke.add_argument("key_id")
    revoke.set_defaults(run=_revoke)

    rotate = actions.add_parser(
        "rotate-signing-secret", help="new signing secret; the old one keeps signing too"
    )
    rotate.add_argument("--tenant", required=True, type=_tenant)
    rotate.add_argument("--overlap-s", type=_overlap_s, default=DEFAULT_ROTATION_OVERLAP_S)
    rotate.set_defaults(run=_rotate)


def _tenant(value: str) -> str:
    if not TENANT_PATTERN.match(value):
        raise argparse.ArgumentTypeError("tenant: 1-64 letters, digits, '_', '.', '-'")
    return value


def _overlap_s(value: str) -> int:
    if not value.isdigit() or int(value) > MAX_ROTATION_OVERLAP_S:
        raise argparse.ArgumentTypeError(f"a whole number of seconds, 0 to {MAX_ROTATION_OVERLAP_S}")
    return int(value)


def _positive_int(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError("a whole number of at least 1")
    return int(value)


@contextmanager
def _store() -> Iterator[DynamoKeyStore]:
    settings = Settings.from_env()
    client = dynamodb_client(settings)
    try:
        yield DynamoKeyStore(client, settings.api_keys_table)
    finally:
        client.close()


def _create(args: argparse.Namespace) -> int:
    now_ms = SystemClock().now_ms()
    scopes = tuple(s.strip() for s in args.scopes.split(",") if s.strip())
    unknown = set(scopes) - set(KNOWN_SCOPES)
    if unknown or not scopes:
        raise SystemExit(f"unknown or no scopes: {sorted(unknown)}; known: {list(KNOWN_SCOPES)}")
    record, api_key = mint_key(args.tenant, now_ms, scopes, args.rate_limit_per_s)
    secret = new_signing_secret()
    with _store() as store:
        store.put_key(record)
        created = store.put_signing_secrets(args.tenant, SigningSecrets(secret), now_ms, only_if_missing=True)
    result = {
        "key_id": record.key_id,
        "tenant": record.tenant,
        "scopes": list(scopes),
        "rate_limit_per_s": record.rate_limit_per_s,
        "api_key": api_key,
        # A tenant's signing secret is printed once, when its first key is created.
        "signing_secret": secret if created else None,
    }
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"key id:         {record.key_id}")
    print(f"tenant:         {record.tenant}")
    print(f"api key:        {api_key}   (shown once: store it now)")
    if created:
        print(f"signing secret: {secret}   (shown once: your receivers verify callbacks with it)")
    return 0


def _list(args: argparse.Namespace) -> int:
    with _store() as store:
        records = store.list_keys()
    rows: list[dict[str, Any]] = [
        {
            "key_id": r.key_id,
            "tenant": r.tenant,
            "scopes": list(r.scopes),
            "created_ms": r.created_ms,
            "revoked_ms": r.revoked_ms,
            "rate_limit_per_s": r.rate_limit_per_s,
        }
        for r in records
    ]
    if args.json:
        print(json.dumps(rows))
        return 0
    output.console().print(keys_table(rows))
    return 0


def keys_table(rows: list[dict[str, Any]]) -> Table:
    """Returns a table of API keys (never a secret): id, tenant, state, scopes, rate limit, creation time."""
    table = output.new_table("KEY ID", "TENANT", "STATE", "SCOPES", "RATE/S", "CREATED")
    for row in rows:
        state = "[red]revoked[/red]" if row["revoked_ms"] else "[green]active[/green]"
        limit = "" if row["rate_limit_per_s"] is None else str(row["rate_limit_per_s"])
        created = rfc3339(row["created_ms"]) or ""
        table.add_row(row["key_id"], row["tenant"], state, ",".join(row["scopes"]), limit, created)
    return table


def _revoke(args: argparse.Namespace) -> int:
    try:
        with _store() as store:
            store.revoke_key(args.key_id, SystemClock().now_ms())
    except NotFound:
        print(f"no key {args.key_id}", file=sys.stderr)
        return 1
    print(f"revoked {args.key_id} (warm API instances may accept it for up to {KEY_CACHE_TTL_MS // 1000} s)")
    return 0


def _rotate(args: argparse.Namespace) -> int:
    with _store() as store:
        try:
            rotation = rotate_signing_secret(store, args.tenant, SystemClock().now_ms(), args.overlap_s)
        except SigningSecretChanged as error:
            print(str(error), file=sys.stderr)
            return 1
    print(f"new signing secret: {rotation.secret}   (shown once)")
    if rotation.previous_until_ms is not None:
        print(f"callbacks carry both signatures for {args.overlap_s} s; then only the new one")
    return 0
