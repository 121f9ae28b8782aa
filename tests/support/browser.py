"""Headless Chromium (Debian's chromium + chromium-driver) driven by Selenium, for the dashboard tests."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

# Where screenshots go (gitignored): CI keeps them as artifacts of the run.
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "dashboard"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def _find(names: tuple[str, ...]) -> str | None:
    return next((found for name in names if (found := shutil.which(name))), None)


@contextmanager
def headless_chromium() -> Iterator[webdriver.Chrome]:
    """Yields a headless Chromium; skips without one locally, fails in CI (CI=true) instead."""
    browser, driver = _find(BROWSERS), _find(("chromedriver",))
    if browser is None or driver is None:
        message = "chromium and chromium-driver are needed (apt-get install -y chromium chromium-driver)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1400,1000", "--disable-extensions", "--no-first-run"):  # fmt: skip
        options.add_argument(argument)
    # Selenium Manager would try to download a driver; the Debian one is given explicitly.
    chrome = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    chrome.set_page_load_timeout(20)
    try:
        yield chrome
    finally:
        chrome.quit()


def screenshot(chrome: webdriver.Chrome, name: str) -> Path:
    """Saves a PNG of the whole window as tests/artifacts/dashboard/<name>.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    chrome.save_screenshot(str(path))
    return path
