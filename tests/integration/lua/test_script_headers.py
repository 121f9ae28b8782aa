"""Every lua/*.lua script opens with a header naming each KEYS[i] and ARGV[i] it uses, and its returns."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hookline.adapters.redis.scripts import SCRIPT_NAMES, lua_dir

pytestmark = pytest.mark.integration

_USE = re.compile(r"\b(KEYS|ARGV)\[(\d+)\]")
_DOC = re.compile(r"^--\s+(KEYS|ARGV)\[(\d+)\]\s+\S")


def _header_and_body(path: Path) -> tuple[list[str], str]:
    lines = path.read_text().splitlines()
    header_len = next((i for i, line in enumerate(lines) if not line.startswith("--")), len(lines))
    return lines[:header_len], "\n".join(lines[header_len:])


def test_given_lua_folder_then_it_holds_exactly_the_loaded_scripts() -> None:
    assert sorted(path.stem for path in lua_dir().glob("*.lua")) == sorted(SCRIPT_NAMES)


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_given_script_then_header_documents_every_key_and_arg_it_uses_and_its_returns(name: str) -> None:
    header, body = _header_and_body(lua_dir() / f"{name}.lua")

    used = {(kind, int(n)) for kind, n in _USE.findall(body)}
    documented = {
        (kind, int(n)) for line in header if (match := _DOC.match(line)) for kind, n in [match.groups()]
    }

    assert used, f"{name}.lua uses no KEYS/ARGV"
    assert used - documented == set(), f"{name}.lua uses undocumented inputs"
    assert documented - used == set(), f"{name}.lua documents inputs it never reads"
    assert header[0].startswith(f"-- {name}.lua:"), f"{name}.lua header must open with its purpose"
    assert any("Returns" in line for line in header), f"{name}.lua header must say what it returns"
