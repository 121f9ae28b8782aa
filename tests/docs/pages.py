"""The code blocks of the README and the documentation pages, as the tests run them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The README first, then the pages in the order a reader meets them (each page runs in a shell of its own).
PAGES = (
    "README.md",
    "docs/getting-started.md",
    "docs/api.md",
    "docs/cron.md",
    "docs/limits.md",
    "docs/queues.md",
    "docs/client.md",
    "docs/receivers.md",
    "docs/operating.md",
)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>[^>]+?)\s*-->\s*$")
FENCE = re.compile(r"^```(?P<language>\w+)\n(?P<code>.*?)^```$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    """One fenced block at the start of a line: its page, language, code and why it is not run (if so)."""

    page: str
    language: str
    code: str
    not_run: str | None


def blocks(page: str) -> list[Block]:
    """Returns the page's top-level fenced blocks in order (indented ones, inside tabs, are includes)."""
    text = (REPO / page).read_text(encoding="utf-8")
    found = []
    for fence in FENCE.finditer(text):
        before = text[: fence.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = NOT_RUN.search(before)
        found.append(Block(page, fence["language"], fence["code"], marker["reason"] if marker else None))
    return found


def runnable(page: str, language: str) -> list[Block]:
    """Returns the page's blocks in language that the tests run."""
    return [block for block in blocks(page) if block.language == language and block.not_run is None]
