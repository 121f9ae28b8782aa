"""The `hookline` command's argument errors: a usage message and exit status 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from hookline_client.cli import main
from hookline_client.cli.jobs import body_value


@pytest.mark.parametrize(
    "argv",
    [
        ["jobs", "submit", "http://127.0.0.1:9/hook", "--body", "@payload.json"],
        ["schedules", "create", "* * * * *", "http://127.0.0.1:9/hook", "--body", "@payload.json"],
    ],
    ids=["jobs submit", "schedules create"],
)
def test_given_body_file_that_does_not_exist_when_running_then_usage_error_names_it_and_exits_2(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOOKLINE_API", "http://127.0.0.1:9")  # no request is made: the arguments fail first

    with pytest.raises(SystemExit) as exited:
        main(argv)

    stderr = capsys.readouterr().err
    assert exited.value.code == 2
    assert "argument --body: cannot read 'payload.json': No such file or directory" in stderr
    assert "Traceback" not in stderr


def test_given_body_file_when_parsing_then_its_json_is_the_body(tmp_path: Path) -> None:
    (tmp_path / "payload.json").write_text('{"order": 42}', encoding="utf-8")

    assert body_value(f"@{tmp_path / 'payload.json'}") == {"order": 42}
    assert body_value("plain text") == "plain text"
