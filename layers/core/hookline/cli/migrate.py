"""`hookline migrate-keys`: move the jobs table's items to the keys of a job bucket count (docs/deploying.md).

Run it with the functions stopped (no API traffic, no promote, execute or reap invocation): an item a
function changes while it is being moved is left in place and counted, and a function of another bucket
count would not find the moved items. It reads the table names and endpoint from the HOOKLINE_*
environment, like the functions. Once every item is in place it records the count, which the functions
then start with (HOOKLINE_JOB_BUCKETS must equal it).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from hookline.adapters.dynamo.key_store import DynamoKeyStore
from hookline.adapters.dynamo.migrate import KeyMigration, MigrationReport
from hookline.adapters.dynamo.tables import DEFAULT_JOB_BUCKETS, MAX_JOB_BUCKETS, Keyspace
from hookline.domain.clock import SystemClock
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import dynamodb_client


def add_migrate_commands(commands: Any) -> None:
    """Adds `migrate-keys` to the top-level parser's subcommands."""
    migrate = commands.add_parser(
        "migrate-keys",
        help="move jobs and idempotency markers to the keys of a job bucket count (functions stopped)",
    )
    migrate.add_argument(
        "--buckets",
        type=_buckets,
        default=DEFAULT_JOB_BUCKETS,
        help=f"the job bucket count to move to (the template's JobBuckets; default {DEFAULT_JOB_BUCKETS})",
    )
    migrate.add_argument("--dry-run", action="store_true", help="count what would move; write nothing")
    migrate.set_defaults(run=lambda args: migrate_keys(Settings.from_env(), args.buckets, args.dry_run))


def migrate_keys(settings: Settings, buckets: int, dry_run: bool = False, out: TextIO = sys.stdout) -> int:
    """Moves every job and marker to the keys of `buckets`, then records the count; returns the exit code."""
    client = dynamodb_client(settings)
    try:
        keys = DynamoKeyStore(client, settings.api_keys_table)
        recorded = keys.recorded_buckets()
        report = KeyMigration(client, settings.jobs_table, Keyspace(buckets), dry_run=dry_run).run()
        _print(report, recorded, buckets, dry_run, out)
        if dry_run or not report.complete:
            return 0 if dry_run else 1
        keys.set_buckets(buckets, SystemClock().now_ms())
        print(
            f"recorded {buckets} job buckets: start the functions with HOOKLINE_JOB_BUCKETS={buckets}",
            file=out,
        )
        return 0
    finally:
        client.close()


def _print(report: MigrationReport, recorded: int | None, buckets: int, dry_run: bool, out: TextIO) -> None:
    was = "none (the layout before buckets)" if recorded is None else str(recorded)
    verb = "would move" if dry_run else "moved"
    print(f"recorded bucket count: {was}; moving to {buckets}", file=out)
    print(
        f"jobs and markers: {report.scanned} read, {report.in_place} in place, {verb} {report.moved}, "
        f"{report.changed} left (changed meanwhile: stop the functions and run again)",
        file=out,
    )


def _buckets(text: str) -> int:
    value = int(text)
    if not 1 <= value <= MAX_JOB_BUCKETS:
        raise argparse.ArgumentTypeError(f"buckets: 1..{MAX_JOB_BUCKETS}")
    return value
