"""The `hookline` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from hookline.cli_dev import add_dev_commands
from hookline.cli_jobs import add_job_commands
from hookline.cli_keys import add_key_commands


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one `hookline` subcommand; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="hookline", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    add_key_commands(commands)
    add_dev_commands(commands)
    add_job_commands(commands)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
