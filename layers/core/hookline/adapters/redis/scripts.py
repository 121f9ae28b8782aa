"""Finds and loads the Lua scripts kept as .lua files in the repository's lua/ folder."""

from __future__ import annotations

import os
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
    "heartbeat",
    "prune_consumers",
    "rate_limit",
    "concurrency_acquire",
    "concurrency_release",
    "cron_claim",
    "cron_advance",
    "cron_set",
    "fanout_reserve",
)


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


@cache
def script_source(name: str) -> str:
    """Returns the source of lua/<name>.lua."""
    return (lua_dir() / f"{name}.lua").read_text()
