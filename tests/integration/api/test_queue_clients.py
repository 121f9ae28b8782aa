"""Named queues through the Python clients (blocking and asyncio) and the CLI's `hookline queues --json`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from hookline_client import AsyncClient, Client, Conflict, NotFound
from hookline_client.cli import main
from hookline_client.schemas import QueueView
from tests.integration.api.conftest import Api

pytestmark = pytest.mark.integration

HOOK = "http://127.0.0.1:9/hook"


def test_given_client_when_managing_a_queue_then_put_list_get_pause_resume_delete(
    api: Api, served: str
) -> None:
    with Client(served, api.acme.api_key) as client:
        created = client.put_queue("mail", {"rate_limit": {"limit": 10, "period_s": 1}})
        with pytest.raises(Conflict):
            client.put_queue("mail", {"max_concurrency": 2, "version": 9})
        listed = [q.name for q in client.list_queues().queues]
        paused = client.pause_queue("mail")
        job = client.submit_job({"url": HOOK, "queue": "mail", "delay_s": 60})
        fetched = client.get_queue("mail")
        resumed = client.resume_queue("mail")
        client.delete_queue("mail")
        with pytest.raises(NotFound) as missing:
            client.get_queue("mail")

    assert (created.version, listed, job.queue) == (1, ["mail"], "mail")
    assert (paused.paused, paused.paused_since is not None, resumed.paused) == (True, True, False)
    assert fetched.figures is not None and fetched.figures.waiting == 0  # not due yet: not held back
    assert missing.value.code == "queue_not_found"


def test_given_async_client_when_managing_a_queue_then_same_routes(api: Api, served: str) -> None:
    async def scenario() -> tuple[QueueView, QueueView, list[str]]:
        async with AsyncClient(served, api.acme.api_key) as client:
            await client.put_queue("mail", {"max_concurrency": 3})
            paused = await client.pause_queue("mail")
            resumed = await client.resume_queue("mail")
            names = [q.name for q in (await client.list_queues()).queues]
            await client.delete_queue("mail")
            return paused, resumed, names

    paused, resumed, names = asyncio.run(scenario())

    assert (paused.paused, resumed.paused, resumed.max_concurrency, names) == (True, False, 3, ["mail"])


def test_given_cli_when_managing_a_queue_then_json_answers_are_the_api_views(
    api: Api, served: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOOKLINE_API", served)
    monkeypatch.setenv("HOOKLINE_KEY", str(api.acme.api_key))
    monkeypatch.chdir(tmp_path)

    def run_json(*argv: str) -> dict[str, object]:
        assert main([*argv, "--json"]) == 0
        answer: dict[str, object] = json.loads(capsys.readouterr().out)
        return answer

    put = run_json("queues", "put", "mail", "--rate", "5/2", "--max-concurrency", "2", "--max-attempts", "4")
    paused = run_json("queues", "pause", "mail")
    job = run_json("jobs", "submit", HOOK, "--in", "1m", "--queue", "mail")
    got = run_json("queues", "get", "mail")
    listed = run_json("queues", "list")
    resumed = run_json("queues", "resume", "mail")
    assert main(["queues", "list"]) == 0
    table = capsys.readouterr().out
    deleted = run_json("queues", "delete", "mail")

    assert (put["rate_limit"], put["max_concurrency"], put["max_attempts"]) == (
        {"limit": 5, "period_s": 2},
        2,
        4,
    )
    assert (paused["paused"], resumed["paused"], deleted["name"]) == (True, False, "mail")
    assert (job["queue"], job["max_attempts"]) == ("mail", 4)
    assert got["figures"] == {"waiting": 0, "in_flight": 0, "in_rate_window": 0}
    assert [q["name"] for q in listed["queues"]] == ["mail"]  # type: ignore[attr-defined]
    assert "mail" in table and "5/2s" in table
