"""The dashboard in headless Chromium: the signing-secret page (a two-click rotation shows the secret once)
and a waiting job's Run now."""

from __future__ import annotations

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from hookline.domain.keys import SigningSecrets
from hookline.usecases.auth import ALL_SCOPES, SECRETS_SCOPE
from tests.integration.api.conftest import TENANT, Api, make_key
from tests.integration.api.test_dashboard_browser import (  # noqa: F401 - chrome: a fixture
    WAIT_S,
    chrome,
    sign_in,
    texts,
    wait,
)
from tests.support.browser import screenshot

pytestmark = pytest.mark.integration

OLD = "whsec_" + "b2xkLXNlY3JldC1vbGQtc2VjcmV0LW9sZC1zZWNyZXQ="


def test_given_a_key_with_secrets_write_when_rotating_from_the_page_then_the_new_secret_shows_once(
    api: Api,
    served: str,
    chrome: webdriver.Chrome,  # noqa: F811 - the imported fixture
) -> None:
    api.container.keys.put_signing_secrets(TENANT, SigningSecrets(OLD), api.container.clock.now_ms())
    sign_in(chrome, served, make_key(api.container, scopes=(*ALL_SCOPES, SECRETS_SCOPE)))
    wait(chrome, "#metric-dead")

    chrome.get(f"{served}/dashboard#secret")
    overlap = wait(chrome, "#secret-overlap")
    overlap.clear()
    overlap.send_keys("600")
    chrome.find_element(By.ID, "secret-rotate").click()  # arms it
    unchanged = api.container.keys.get_signing_secrets(TENANT)
    chrome.find_element(By.ID, "secret-rotate").click()  # rotates
    shown = wait(chrome, "#secret-value").text
    screenshot(chrome, "signing-secret")
    ending = chrome.find_element(By.ID, "secret-overlap-end").text
    chrome.get(f"{served}/dashboard#overview")
    chrome.get(f"{served}/dashboard#secret")
    wait(chrome, "#secret-overlap")

    stored = api.container.keys.get_signing_secrets(TENANT)
    assert unchanged == SigningSecrets(OLD)
    assert stored is not None and (stored.current, stored.previous) == (shown, OLD)
    assert "signs too until" in ending
    assert chrome.find_element(By.ID, "secret-value").text == ""  # shown once: gone when the page is left


def test_given_a_key_without_the_scope_when_rotating_then_the_403_shows_and_nothing_changes(
    api: Api,
    served: str,
    chrome: webdriver.Chrome,  # noqa: F811 - the imported fixture
) -> None:
    api.container.keys.put_signing_secrets(TENANT, SigningSecrets(OLD), api.container.clock.now_ms())
    sign_in(chrome, served, str(api.acme.api_key))
    wait(chrome, "#metric-dead")

    chrome.get(f"{served}/dashboard#secret")
    wait(chrome, "#secret-rotate").click()
    chrome.find_element(By.ID, "secret-rotate").click()
    error = wait(chrome, "#error").text

    assert "403 forbidden" in error
    assert api.container.keys.get_signing_secrets(TENANT) == SigningSecrets(OLD)


def test_given_a_waiting_job_when_run_now_from_its_detail_then_it_is_due_now_in_a_new_generation(
    api: Api,
    served: str,
    chrome: webdriver.Chrome,  # noqa: F811 - the imported fixture
) -> None:
    job = api.submit(delay_s=3600)
    sign_in(chrome, served, str(api.acme.api_key))
    wait(chrome, "#metric-dead")

    chrome.get(f"{served}/dashboard#jobs")
    wait(chrome, f'tr[data-job-id="{job.job_id}"]').click()
    wait(chrome, "#job-run-now").click()
    WebDriverWait(chrome, WAIT_S).until(lambda c: "due now" in texts(c, "#notice")[0])
    screenshot(chrome, "job-run-now")

    moved = api.container.jobs.get(TENANT, job.job_id)
    assert (moved.generation, moved.attempt) == (job.generation + 1, 0)
    assert moved.due_ms < job.due_ms
