"""The dashboard tests' browser fixture: without chromium it skips locally and fails in CI."""

from __future__ import annotations

import pytest

from tests.support.browser import headless_chromium


@pytest.mark.parametrize(("ci", "outcome"), [(None, pytest.skip.Exception), ("true", pytest.fail.Exception)])
def test_given_no_chromium_when_starting_the_browser_then_local_runs_skip_and_ci_fails(
    ci: str | None, outcome: type[BaseException], monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no chromium, no chromedriver
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)

    with pytest.raises(outcome, match="chromium-driver"), headless_chromium():
        pass
