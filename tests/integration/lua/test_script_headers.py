"""Every lua/*.lua script opens with a header naming each KEYS[i] and ARGV[i] it uses, and its returns.

The body checked is the script as loaded, with its fragments (lua/shared) included; a fragment reads no
KEYS or ARGV of its own, and every fragment is included by some script."""

from __future__ import annotations

import re

import pytest

from hookline.adapters.redis.scripts import (
    FRAGMENT_DIR,
    FRAGMENT_NAMES,
    SCRIPT_NAMES,
    fragment_source,
    lua_dir,
    script_source,
)

pytestmark = pytest.mark.integration

_USE = re.compile(r"\b(KEYS|ARGV)\[(\d+)\]")
_DOC = re.compile(r"^--\s+(KEYS|ARGV)\[(\d+)\]\s+\S")


def _header_and_body(source: str) -> tuple[list[str], str]:
    lines = source.splitlines()
    header_len = next((i for i, line in enumerate(lines) if not line.startswith("--")), len(lines))
    return lines[:header_len], "\n".join(lines[header_len:])


def test_given_lua_folder_then_it_holds_exactly_the_loaded_scripts_and_fragments() -> None:
    assert sorted(path.stem for path in lua_dir().glob("*.lua")) == sorted(SCRIPT_NAMES)
    assert sorted(path.stem for path in (lua_dir() / FRAGMENT_DIR).glob("*.lua")) == sorted(FRAGMENT_NAMES)


@pytest.mark.parametrize("name", FRAGMENT_NAMES)
def test_given_fragment_then_it_reads_no_keys_or_args_includes_nothing_and_some_script_includes_it(
    name: str,
) -> None:
    header, body = _header_and_body(fragment_source(name))
    including = [script for script in SCRIPT_NAMES if f"-- @include {name}\n" in _raw(script)]

    assert header[0].startswith(f"-- {name}.lua:"), f"{name}.lua header must open with its purpose"
    assert any("Returns" in line for line in header), f"{name}.lua header must say what it returns"
    assert _USE.findall(body) == [], f"{name}.lua must take its keys and arguments from the script"
    assert "@include" not in body, f"{name}.lua must include nothing itself"
    assert including, f"no script includes {name}.lua"
    for script in including:
        assert body in script_source(script), f"{script}.lua as loaded must hold {name}.lua"


def _raw(name: str) -> str:
    return (lua_dir() / f"{name}.lua").read_text()


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_given_script_as_loaded_then_every_include_was_resolved(name: str) -> None:
    assert "-- @include" not in script_source(name)


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_given_script_then_header_documents_every_key_and_arg_it_uses_and_its_returns(name: str) -> None:
    header, body = _header_and_body(script_source(name))

    used = {(kind, int(n)) for kind, n in _USE.findall(body)}
    documented = {
        (kind, int(n)) for line in header if (match := _DOC.match(line)) for kind, n in [match.groups()]
    }

    assert used, f"{name}.lua uses no KEYS/ARGV"
    assert used - documented == set(), f"{name}.lua uses undocumented inputs"
    assert documented - used == set(), f"{name}.lua documents inputs it never reads"
    assert header[0].startswith(f"-- {name}.lua:"), f"{name}.lua header must open with its purpose"
    assert any("Returns" in line for line in header), f"{name}.lua header must say what it returns"
