"""`hookline jobs|dead|schedules|stats` against the API over HTTP: tables by default, JSON with --json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hookline_client.cli import main
from hookline_client.cli.jobs import duration_s
from tests.integration.api.conftest import Api
from tests.support.receiver import Receiver, Reply
from tests.support.stack import running_loops

pytestmark = pytest.mark.integration

HOOK = "http://127.0.0.1:9/hook"


@pytest.fixture
def cli_env(api: Api, served: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Points the CLI at the served API with the acme key, as `set -a; . .hookline/dev.env` would."""
    monkeypatch.setenv("HOOKLINE_API", served)
    monkeypatch.setenv("HOOKLINE_KEY", str(api.acme.api_key))
    monkeypatch.chdir(tmp_path)  # no stray .hookline/dev.env from the checkout


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Runs one command; returns its exit code, stdout and stderr."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    """Runs one command with --json and returns its parsed output (failing on a non-zero exit)."""
    code, stdout, stderr = run(capsys, *argv, "--json")
    assert code == 0, stderr
    return json.loads(stdout)


@pytest.mark.usefixtures("cli_env")
def test_given_cli_when_submitting_listing_and_cancelling_then_json_and_tables_agree(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "body.json").write_text('{"order": 42}')
    job = run_json(
        capsys, "jobs", "submit", HOOK, "--in", "5m", "--body", "@body.json", "--header", "X-Trace=abc",
        "--idempotency-key", "order-42",
    )  # fmt: skip
    at = run_json(capsys, "jobs", "submit", HOOK, "--at", "2030-01-01T00:00:00Z")
    listed = run_json(capsys, "jobs", "list", "--status", "scheduled")
    got = run_json(capsys, "jobs", "get", job["id"])
    code, table, _ = run(capsys, "jobs", "list")
    cancelled = run_json(capsys, "jobs", "cancel", job["id"])

    assert (job["body"], job["headers"]["X-Trace"], job["idempotency_key"]) == (
        '{"order":42}',
        "abc",
        "order-42",
    )
    assert at["run_at"] == "2030-01-01T00:00:00.000Z"
    assert [j["id"] for j in listed["jobs"]] == [at["id"], job["id"]]
    assert got["id"] == job["id"] and cancelled["status"] == "cancelled"
    assert code == 0 and job["id"] in table and at["id"] in table and "STATUS" in table


@pytest.mark.usefixtures("cli_env")
def test_given_dead_jobs_when_using_attempts_dead_and_replay_then_each_works(
    api: Api, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    dead = [api.dead_job(receiver).job_id for _ in range(3)]

    attempts = run_json(capsys, "jobs", "attempts", dead[0])
    code, attempts_table, _ = run(capsys, "jobs", "attempts", dead[0])
    listed = run_json(capsys, "dead", "list")
    one = run_json(capsys, "jobs", "replay", dead[0])
    by_id = run_json(capsys, "dead", "replay", dead[1])
    every = run_json(capsys, "dead", "replay", "--all")
    stats = run_json(capsys, "stats")
    again, _, error = run(capsys, "jobs", "replay", dead[0])

    assert [(a["attempt"], a["status_code"]) for a in attempts] == [(1, 404)]
    assert code == 0 and "404" in attempts_table and "permanent" in attempts_table
    assert sorted(j["id"] for j in listed["jobs"]) == sorted(dead)
    assert one["status"] == "scheduled" and [j["id"] for j in by_id["replayed"]] == [dead[1]]
    assert [j["id"] for j in every["replayed"]] == [dead[2]]
    assert (stats["dead_letters"], stats["last_hour"]["replayed"]) == (0, 3)
    assert again == 1 and "409 conflict" in error and "request id:" in error


@pytest.mark.usefixtures("cli_env")
def test_given_many_dead_jobs_when_replaying_all_then_a_progress_bar_counts_them(
    api: Api, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    for _ in range(3):
        api.dead_job(receiver)

    code, stdout, stderr = run(capsys, "dead", "replay", "--all")

    assert code == 0 and "replayed 3, failed 0" in stdout
    assert "replaying dead letters" in stderr and "3/3" in stderr


@pytest.mark.usefixtures("cli_env")
def test_given_cli_when_managing_schedules_then_create_list_get_pause_resume_delete(
    capsys: pytest.CaptureFixture[str],
) -> None:
    created = run_json(capsys, "schedules", "create", "0 9 * * MON-FRI", HOOK, "--timezone", "Europe/London")
    listed = run_json(capsys, "schedules", "list")
    _, table, _ = run(capsys, "schedules", "list")
    got = run_json(capsys, "schedules", "get", created["id"])
    _, details, _ = run(capsys, "schedules", "get", created["id"])
    paused = run_json(capsys, "schedules", "pause", created["id"])
    resumed = run_json(capsys, "schedules", "resume", created["id"])
    deleted = run_json(capsys, "schedules", "delete", created["id"])
    missing, _, error = run(capsys, "schedules", "get", created["id"], "--json")

    assert [s["id"] for s in listed["schedules"]] == [created["id"]]
    assert len(got["next_fire_times"]) == 5 and got["next_fire_times"][0] in details
    assert listed["schedules"][0]["next_fire_times"] == got["next_fire_times"][:1]
    assert got["next_fire_times"][0][:16] in table
    assert (paused["paused"], resumed["paused"], deleted) == (True, False, {"deleted": created["id"]})
    assert missing == 1 and json.loads(error)["error"]["code"] == "not_found"


@pytest.mark.usefixtures("cli_env")
def test_given_jobs_finishing_when_tailing_then_each_outcome_is_printed_and_max_stops_it(
    api: Api, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    receiver.script("/ok", [Reply(200)])
    receiver.script("/gone", [Reply(410)])
    run_json(capsys, "jobs", "submit", receiver.url("/ok"), "--in", "1s")
    run_json(capsys, "jobs", "submit", receiver.url("/gone"), "--in", "1s")

    with running_loops(api.container, max_runtime_s=15):
        code, stdout, _ = run(
            capsys, "jobs", "tail", "--max", "2", "--timeout", "15s", "--interval", "0.2", "--json"
        )

    outcomes = sorted(json.loads(line)["status"] for line in stdout.splitlines())
    assert code == 0 and outcomes == ["dead", "succeeded"]


@pytest.mark.usefixtures("cli_env")
def test_given_nothing_happening_when_tailing_with_timeout_then_it_stops_empty(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, stdout, _ = run(capsys, "jobs", "tail", "--timeout", "0.5s", "--interval", "0.1s")

    assert (code, stdout) == (0, "")


def test_given_only_a_dev_env_file_when_running_then_the_cli_reads_api_and_key_from_it(
    api: Api, served: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("HOOKLINE_API", raising=False)
    monkeypatch.delenv("HOOKLINE_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".hookline").mkdir()
    # Written as `hookline dev` writes it: shell assignments, values quoted with shlex.
    (tmp_path / ".hookline" / "dev.env").write_text(
        f"# Written by `hookline dev`\nHOOKLINE_API='{served}'\nHOOKLINE_KEY={api.acme.api_key}\n"
    )

    stats = run_json(capsys, "stats")
    code, table, _ = run(capsys, "stats")

    assert stats["dead_letters"] == 0 and stats["window_minutes"] == 60
    assert code == 0 and "success rate (last hour)" in table


def test_given_durations_when_parsed_then_units_add_up() -> None:
    assert [duration_s(text) for text in ("90", "30s", "5m", "1h30m", "250ms")] == [90, 30, 300, 5400, 0.25]
    with pytest.raises(Exception, match="not a duration"):
        duration_s("5 minutes")
