"""The `hookline` command line: `jobs`, `dead`, `schedules` and `stats` against the API.

Commands that live elsewhere join through the `hookline.commands` entry point group: the server's operator
commands (`keys`, `migrate`) and the local stack's `hookline dev`. Installed alone, hookline-client[cli]
offers the API commands; beside the server, all of them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

COMMANDS_GROUP = "hookline.commands"


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one `hookline` subcommand; returns the process exit code."""
    try:
        from hookline_client.cli.jobs import add_job_commands  # noqa: PLC0415 - needs the [cli] extra
    except ModuleNotFoundError as missing:
        print(
            f"the hookline command needs {missing.name}: pip install 'hookline-client[cli]'", file=sys.stderr
        )
        return 2
    parser = argparse.ArgumentParser(prog="hookline", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    add_job_commands(commands)
    for plugin in sorted(entry_points(group=COMMANDS_GROUP), key=lambda point: point.name):
        plugin.load()(commands)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
