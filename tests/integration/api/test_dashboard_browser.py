"""The dashboard in headless Chromium against the API over HTTP: sign in, jobs, attempts, dead letters,
schedules.

Each test saves screenshots under tests/artifacts/dashboard/ (gitignored).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.integration.api.conftest import TENANT, Api
from tests.support.browser import headless_chromium, screenshot
from tests.support.receiver import Receiver, Reply

pytestmark = pytest.mark.integration

# Generous: the machine running the tests may be busy; a wait ends as soon as its condition holds.
WAIT_S = 30


@pytest.fixture(scope="module")
def chrome() -> Iterator[webdriver.Chrome]:
    """One browser for the module; each test opens its own API (its own origin, so a fresh session)."""
    with headless_chromium() as browser:
        yield browser


def wait(chrome: webdriver.Chrome, css: str) -> WebElement:
    """Returns the first element matching css once it is visible."""
    return WebDriverWait(chrome, WAIT_S).until(ec.visibility_of_element_located((By.CSS_SELECTOR, css)))


def wait_gone(chrome: webdriver.Chrome, css: str) -> None:
    """Waits until no element matches css."""
    WebDriverWait(chrome, WAIT_S).until(lambda c: not c.find_elements(By.CSS_SELECTOR, css))


def texts(chrome: webdriver.Chrome, css: str) -> list[str]:
    """Returns the rendered text of every element matching css, read in one script (never stale)."""
    script = "return [...document.querySelectorAll(arguments[0])].map((e) => e.innerText.trim())"
    found = chrome.execute_script(script, css)
    assert isinstance(found, list)
    return [str(text) for text in found]


def sign_in(chrome: webdriver.Chrome, base_url: str, key: str) -> None:
    """Opens the dashboard and submits the sign-in form with key."""
    chrome.get(f"{base_url}/dashboard")
    wait(chrome, "#api-key").send_keys(key)
    chrome.find_element(By.ID, "signin-button").click()


def test_given_wrong_key_when_signing_in_then_the_error_shows_and_no_page_opens(
    api: Api, served: str, chrome: webdriver.Chrome
) -> None:
    sign_in(chrome, served, "hl_AAAAAAAAAAAA_wrongsecret")

    error = wait(chrome, "#error")
    path = screenshot(chrome, "signin-wrong-key")

    assert "401 unauthorized" in error.text and "request" in error.text
    assert chrome.find_element(By.ID, "page-signin").is_displayed()
    assert not chrome.find_element(By.ID, "nav").is_displayed()
    assert chrome.execute_script("return sessionStorage.getItem('hookline.apiKey')") is None
    assert path.stat().st_size > 0


def test_given_signed_in_when_a_job_is_submitted_then_it_appears_with_its_attempts_and_overview_counts_it(
    api: Api, served: str, receiver: Receiver, chrome: webdriver.Chrome
) -> None:
    sign_in(chrome, served, str(api.acme.api_key))
    wait(chrome, "#metric-submitted")
    receiver.script("/ok", [Reply(200, body=b'{"received": true}')])
    job = api.acme.post("/v1/jobs", {"url": receiver.url("/ok"), "body": {"order": 42}}).json()
    api.deliver_ready()

    chrome.get(f"{served}/dashboard#jobs")
    wait(chrome, f'tr[data-job-id="{job["id"]}"]').click()
    attempt = wait(chrome, '#attempts tr[data-attempt="1"]').text
    fields = dict(zip(texts(chrome, "#job-detail dt"), texts(chrome, "#job-detail dd"), strict=True))
    screenshot(chrome, "jobs-with-attempts")
    search = chrome.find_element(By.ID, "jobs-search")
    search.send_keys(receiver.url("/nothing-here"))
    chrome.find_element(By.ID, "jobs-go").click()
    empty = wait(chrome, "#jobs-rows td.empty").text
    chrome.get(f"{served}/dashboard#overview")
    # Found afresh on each poll: the overview re-renders its cards every 10 s.
    WebDriverWait(chrome, WAIT_S).until(lambda c: texts(c, "#metric-submitted .value") == ["1"])
    success = texts(chrome, "#metric-success .value")
    screenshot(chrome, "overview")

    assert "200" in attempt and "succeeded" in attempt and '{"received": true}' in attempt
    assert "No job whose URL starts with" in empty
    assert (fields["id"], fields["status"], fields["url"]) == (job["id"], "succeeded", receiver.url("/ok"))
    assert success == ["100.0%"]
    assert chrome.find_elements(By.CSS_SELECTOR, '#chart-outcomes g[data-outcome="succeeded"] rect')


def test_given_dead_letters_when_replayed_one_then_all_then_none_remain(
    api: Api, served: str, receiver: Receiver, chrome: webdriver.Chrome
) -> None:
    dead = [api.dead_job(receiver).job_id for _ in range(3)]
    sign_in(chrome, served, str(api.acme.api_key))
    wait(chrome, "#metric-dead")

    chrome.get(f"{served}/dashboard#dead")
    wait(chrome, f'tr[data-job-id="{dead[0]}"] button.replay-one')
    screenshot(chrome, "dead-letters")
    chrome.find_element(By.CSS_SELECTOR, f'tr[data-job-id="{dead[0]}"] button.replay-one').click()
    wait_gone(chrome, f'tr[data-job-id="{dead[0]}"]')
    chrome.find_element(By.ID, "dead-replay-all").click()
    empty = wait(chrome, "#dead-rows td.empty")

    assert empty.text == "No dead letters"
    assert [api.container.jobs.get(TENANT, job_id).status.value for job_id in dead] == ["scheduled"] * 3
    assert wait(chrome, "#dead-count").text == "0 dead"


def test_given_a_schedule_when_paused_and_deleted_from_the_page_then_the_api_agrees(
    api: Api, served: str, chrome: webdriver.Chrome
) -> None:
    created = api.acme.post(
        "/v1/schedules",
        {"expression": "*/5 * * * *", "timezone": "Europe/Paris", "job": {"url": "http://127.0.0.1:9/x"}},
    ).json()
    sign_in(chrome, served, str(api.acme.api_key))
    wait(chrome, "#metric-dead")

    chrome.get(f"{served}/dashboard#schedules")
    row = f'tr[data-schedule-id="{created["id"]}"]'
    next_fire = wait(chrome, f"{row} td.next-fire").text
    screenshot(chrome, "schedules")
    chrome.find_element(By.CSS_SELECTOR, f"{row} button.pause").click()
    wait(chrome, f"{row} button.resume")
    screenshot(chrome, "schedules-paused")
    paused_row = chrome.find_element(By.CSS_SELECTOR, row).text
    fetched = api.acme.get(f"/v1/schedules/{created['id']}").json()
    chrome.find_element(By.CSS_SELECTOR, f"{row} button.delete").click()  # arms it
    chrome.find_element(By.CSS_SELECTOR, f"{row} button.delete").click()  # deletes
    wait_gone(chrome, row)

    assert fetched["paused"] is True
    assert len(next_fire.splitlines()) == 3 and next_fire.startswith(created["created_at"][:4])
    assert "paused" in paused_row
    assert api.acme.get(f"/v1/schedules/{created['id']}").status == 404


def test_given_job_detail_when_cancelled_or_replayed_then_request_shows_row_refreshes_and_action_is_confirmed(
    api: Api, served: str, receiver: Receiver, chrome: webdriver.Chrome
) -> None:
    waiting = api.acme.post(
        "/v1/jobs",
        {
            "url": receiver.url("/later"),
            "body": {"order": 7},
            "headers": {"X-Trace": "t-1"},
            "delay_s": 3600,
        },
    ).json()
    receiver.script("/fails", [Reply(500)])
    failed = api.acme.post("/v1/jobs", {"url": receiver.url("/fails"), "max_attempts": 1}).json()
    api.deliver_ready()
    sign_in(chrome, served, str(api.acme.api_key))
    wait(chrome, "#metric-dead")

    chrome.get(f"{served}/dashboard#jobs")
    wait(chrome, f'tr[data-job-id="{waiting["id"]}"]').click()
    wait(chrome, "#job-cancel")
    headers = dict(zip(texts(chrome, "#job-headers dt"), texts(chrome, "#job-headers dd"), strict=True))
    body = wait(chrome, "#job-body").text
    chrome.find_element(By.ID, "job-cancel").click()
    cancelled = wait(chrome, "#notice").text
    WebDriverWait(chrome, WAIT_S).until(
        lambda c: "cancelled" in texts(c, f'#jobs-rows tr[data-job-id="{waiting["id"]}"]')[0]
    )
    chrome.find_element(By.CSS_SELECTOR, f'tr[data-job-id="{failed["id"]}"]').click()
    final = wait(chrome, '#attempts tr[data-attempt="1"] td.outcome').text
    screenshot(chrome, "job-dead-detail")
    chrome.find_element(By.ID, "job-replay").click()
    WebDriverWait(chrome, WAIT_S).until(lambda c: "Replayed" in texts(c, "#notice")[0])
    replayed_row = texts(chrome, f'#jobs-rows tr[data-job-id="{failed["id"]}"]')[0]

    assert headers.get("X-Trace") == "t-1"
    assert '"order": 7' in body
    assert cancelled == f"Cancelled job {waiting['id']}"
    assert final == "dead attempts exhausted"
    assert "scheduled" in replayed_row
    assert api.container.jobs.get(TENANT, failed["id"]).status.value == "scheduled"


def test_given_a_schedule_when_its_jobs_are_opened_then_the_jobs_page_lists_that_schedule_only(
    api: Api, served: str, chrome: webdriver.Chrome
) -> None:
    created = api.acme.post(
        "/v1/schedules", {"expression": "0 9 * * *", "job": {"url": "http://127.0.0.1:9/x"}}
    ).json()
    api.acme.post("/v1/jobs", {"url": "http://127.0.0.1:9/other", "delay_s": 3600})
    sign_in(chrome, served, str(api.acme.api_key))
    wait(chrome, "#metric-dead")

    chrome.get(f"{served}/dashboard#schedules")
    wait(chrome, f'tr[data-schedule-id="{created["id"]}"] button.jobs').click()
    chip = wait(chrome, "#jobs-schedule").text
    empty = wait(chrome, "#jobs-rows td.empty").text
    chrome.find_element(By.ID, "jobs-schedule-clear").click()
    wait(chrome, "#jobs-rows tr[data-job-id]")

    assert created["id"] in chip
    assert empty == "No job from this schedule yet"
    assert not chrome.find_element(By.ID, "jobs-schedule").is_displayed()


def test_given_a_paused_queue_with_a_waiting_job_when_resumed_from_the_page_then_figures_and_api_agree(
    api: Api, served: str, receiver: Receiver, chrome: webdriver.Chrome
) -> None:
    api.acme.request("PUT", "/v1/queues/mail", json_body={"rate_limit": {"limit": 5, "period_s": 1}})
    api.acme.post("/v1/queues/mail/pause")
    api.acme.post("/v1/jobs", {"url": receiver.url("/mail"), "queue": "mail"})
    api.deliver_ready()  # parked: the queue is paused
    sign_in(chrome, served, str(api.acme.api_key))
    wait(chrome, "#metric-dead")

    chrome.get(f"{served}/dashboard#queues")
    row = 'tr[data-queue="mail"]'
    waiting = wait(chrome, f"{row} td.waiting").text
    paused_row = chrome.find_element(By.CSS_SELECTOR, row).text
    screenshot(chrome, "queues-paused")
    chrome.find_element(By.CSS_SELECTOR, f"{row} button.resume").click()
    wait(chrome, f"{row} button.pause")
    screenshot(chrome, "queues-resumed")

    assert waiting == "1"
    assert "paused" in paused_row and "5 / 1 s" in paused_row
    assert api.acme.get("/v1/queues/mail").json()["paused"] is False
    assert api.deliver_ready() == 1
