"""The `hookline` command line.

Commands that live outside the core (the local stack's `hookline dev`) join through the `hookline.commands`
entry point group, so the core never imports them and the Lambda layer cannot depend on them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

from hookline.cli.jobs import add_job_commands
from hookline.cli.keys import add_key_commands
from hookline.cli.migrate import add_migrate_commands

COMMANDS_GROUP = "hookline.commands"


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one `hookline` subcommand; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="hookline", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    add_key_commands(commands)
    add_job_commands(commands)
    add_migrate_commands(commands)
    for plugin in sorted(entry_points(group=COMMANDS_GROUP), key=lambda point: point.name):
        plugin.load()(commands)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
