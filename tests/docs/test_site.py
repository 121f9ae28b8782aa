"""The documentation site builds with warnings as errors, its links hold, and it renders in a browser."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from tests.docs.pages import PAGES, REPO, blocks, runnable
from tests.support.browser import headless_chromium, screenshot
from tests.support.stack import wait_until

MKDOCS = Path(sys.executable).parent / "mkdocs"
RUN_LANGUAGES = {"sh", "python"}
SHOWN_ONLY = {"text", "javascript", "go"}  # output samples and the receivers' includes


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Builds the site as `make docs` does (--strict), into a temporary directory."""
    into = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(into)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=55,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return into


def test_given_the_docs_when_built_strictly_then_every_page_and_the_generated_reference_exist(
    site: Path,
) -> None:
    from hookline.api.health import openapi_document  # the document GET /openapi.json serves

    sys.path.insert(0, str(REPO))
    from functions.submit.app import app

    reference = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    document = json.loads((site / "reference" / "openapi.json").read_text(encoding="utf-8"))

    assert document == json.loads(openapi_document(app))
    operations = [op["operationId"] for path in document["paths"].values() for op in path.values()]
    assert operations and all(f'id="{operation}"' in reference for operation in operations)
    assert "RedisNodeType" in (site / "deploying" / "index.html").read_text(encoding="utf-8")
    assert (site / "images" / "fire_lag.png").stat().st_size > 0


def test_given_the_readme_when_its_relative_links_are_followed_then_each_names_a_file() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    targets = [t for t in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text) if "://" not in t]

    assert targets and [t for t in targets if not (REPO / t).exists()] == []


def test_given_the_readme_then_it_fits_a_screenful_and_tells_no_history() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")

    assert len(text.splitlines()) < 250
    assert re.search(r"\b(issue \d+|round|session)\b", text, re.I) is None


@pytest.mark.parametrize("page", PAGES)
def test_given_a_page_then_every_code_block_is_run_by_the_tests_or_says_why_not(page: str) -> None:
    for block in blocks(page):
        assert block.language in RUN_LANGUAGES | SHOWN_ONLY, (page, block.language, block.code[:80])
    listed = {str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md")} | {"README.md"}
    unlisted = [p for p in listed - set(PAGES) if any(runnable(p, language) for language in RUN_LANGUAGES)]
    assert unlisted == [], "pages with sh or python blocks must be in tests/docs/pages.py PAGES"


def test_given_the_built_site_when_opened_in_chromium_then_pages_render_and_the_receiver_tabs_switch(
    site: Path,
) -> None:
    with headless_chromium() as chrome:
        chrome.get((site / "reference" / "api" / "index.html").as_uri())
        assert "API reference" in chrome.title
        assert chrome.find_element(By.ID, "submitJob").is_displayed()
        screenshot(chrome, "docs-api-reference")

        chrome.get((site / "receivers" / "index.html").as_uri())
        node_tab = chrome.find_element(By.XPATH, "//label[normalize-space()='Node.js']")
        chrome.execute_script("arguments[0].click()", node_tab)  # as a click on the label does
        node_code = chrome.find_element(By.XPATH, "//div[contains(@class,'tabbed-block')][2]")
        wait_until(node_code.is_displayed, timeout_s=10)
        assert "createHmac" in node_code.text
        links = [a.get_attribute("href") for a in chrome.find_elements(By.CSS_SELECTOR, "nav a.md-nav__link")]
        assert any(href and "/getting-started/" in href for href in links)
        screenshot(chrome, "docs-receivers")
