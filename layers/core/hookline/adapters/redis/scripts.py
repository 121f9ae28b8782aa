"""Finds and loads the Lua scripts kept as .lua files in the repository's lua/ folder.

A script may share code with others: a line `-- @include <fragment>` in it is replaced, at load time, by
lua/shared/<fragment>.lua (EVALSHA runs one self-contained chunk, and Redis has no include of its own). A
fragment defines local functions and constants only, reads no KEYS or ARGV (the script passes them in), and
includes nothing itself.
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path

SCRIPT_NAMES = (
    "index",
    "promote",
    "ack",
    "ack_many",
    "defer",
    "dead_letter",
    "redeliver",
    "claim_idle",
    "heartbeat",
    "prune_consumers",
    "rate_limit",
    "concurrency_acquire",
    "concurrency_release",
    "cron_claim",
    "cron_advance",
    "cron_set",
    "fanout_reserve",
    "queue_admit",
    "park",
    "unpark",
)
FRAGMENT_NAMES = ("waiter_queue", "wake_claim", "rate_window", "semaphore", "ready_entry")
FRAGMENT_DIR = "shared"
_INCLUDE = re.compile(r"^-- @include (\w+)$", re.MULTILINE)


def lua_dir() -> Path:
    """Returns the folder holding the scripts.

    Looks at HOOKLINE_LUA_DIR, then hookline/lua (where the layer build copies them), then the repository's
    lua/ folder above this package (a source checkout or an editable install).
    """
    override = os.environ.get("HOOKLINE_LUA_DIR")
    if override:
        return Path(override)
    here = Path(__file__).resolve().parent
    candidates = [here / "lua", *(parent / "lua" for parent in here.parents)]
    for candidate in candidates:
        if (candidate / "promote.lua").is_file():
            return candidate
    raise FileNotFoundError("no lua/ folder with promote.lua found; set HOOKLINE_LUA_DIR")


def fragment_source(name: str) -> str:
    """Returns the source of lua/shared/<name>.lua, a fragment scripts include.

    Raises:
        ValueError: name is not one of FRAGMENT_NAMES.
    """
    if name not in FRAGMENT_NAMES:
        raise ValueError(f"unknown Lua fragment {name!r}; the fragments are {FRAGMENT_NAMES}")
    return (lua_dir() / FRAGMENT_DIR / f"{name}.lua").read_text()


@cache
def script_source(name: str) -> str:
    """Returns the source of lua/<name>.lua, each `-- @include <fragment>` line replaced by the fragment."""
    return _INCLUDE.sub(
        lambda match: fragment_source(match[1]).rstrip("\n"), (lua_dir() / f"{name}.lua").read_text()
    )
