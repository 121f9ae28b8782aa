"""Creates Hookline's DynamoDB tables, exactly as template.yaml defines them, at a local AWS endpoint.

Used by the LocalStack init hook (ready.d/10-hookline.sh) and by hand against LocalStack or a moto server:

    python localstack/create_tables.py --endpoint-url http://127.0.0.1:4566

Table names come from the same variables the functions read (HOOKLINE_JOBS_TABLE, ...; defaults in
hookline.plumbing.settings), so the tables it creates are the ones the code will look for. Idempotent.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import boto3

from hookline.plumbing.settings import Settings
from hookline_local.template import create_tables, load_template, table_names

DEFAULT_ENDPOINT = "http://127.0.0.1:4566"


def main(argv: list[str] | None = None) -> int:
    """Does the table creation described in the module docstring; returns the exit status."""
    parser = argparse.ArgumentParser(description="Create Hookline's tables from template.yaml.")
    parser.add_argument(
        "--endpoint-url",
        default=os.environ.get("HOOKLINE_AWS_ENDPOINT") or DEFAULT_ENDPOINT,
        help=f"AWS endpoint (default: $HOOKLINE_AWS_ENDPOINT, else {DEFAULT_ENDPOINT})",
    )
    parser.add_argument("--template", type=Path, default=None, help="template.yaml (default: found upwards)")
    args = parser.parse_args(argv)

    settings = Settings.from_env()
    dynamodb = boto3.client(
        "dynamodb",
        endpoint_url=args.endpoint_url,
        region_name=settings.aws_region,
        # LocalStack and moto accept any credentials; real ones, if set, are used as they are.
        aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "test"),
        aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "test"),
    )
    names = table_names(settings)
    create_tables(dynamodb, load_template(args.template), names)
    for logical_id, name in names.items():
        print(f"{logical_id}: {name} ready at {args.endpoint_url}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
