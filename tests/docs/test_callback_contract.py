"""The callback contract as the pages state it to receivers agrees with what the engine does."""

from __future__ import annotations

import random
import re

import pytest

from hookline.domain.backoff import retry_delay_ms
from tests.docs.pages import REPO

# The pages that tell a receiver how its answers are read, in one paragraph each.
CONTRACT_PAGES = ("docs/concepts.md", "docs/receivers.md", "docs/architecture.md")


def contract_paragraph(page: str) -> str:
    """Returns the page's paragraph that says which answers are retried, as one line."""
    paragraphs = re.split(r"\n\s*\n", (REPO / page).read_text(encoding="utf-8"))
    found = [p for p in paragraphs if ("Retry-After" in p and "304" in p) or "redirect_refused" in p]
    assert found, f"{page} states no callback contract"
    return " ".join(" ".join(found).split())


@pytest.mark.parametrize("page", CONTRACT_PAGES)
def test_given_a_long_retry_after_then_the_page_says_the_jobs_max_backoff_wins(page: str) -> None:
    # What the engine does: a day's Retry-After waits the job's max_backoff_s (60 s here).
    assert retry_delay_ms(1, 1_000, 60_000, 86_400, random.Random(1)) == 60_000

    paragraph = contract_paragraph(page)

    assert "Retry-After" in paragraph
    assert "max_backoff_s" in paragraph


@pytest.mark.parametrize("page", CONTRACT_PAGES)
def test_given_a_304_then_the_page_says_it_is_no_refused_redirect(page: str) -> None:
    paragraph = contract_paragraph(page)

    assert "304" in paragraph
    # a 3xx is refused as a redirect, except 304, which the pages must name as such
    assert re.search(r"304 \(no redirect\)|, and 304, are\s+permanent", paragraph)
