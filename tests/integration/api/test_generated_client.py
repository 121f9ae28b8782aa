"""A client generated from /openapi.json by openapi-python-client (a standard generator) calls the API."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.api.conftest import Api

pytestmark = pytest.mark.integration

PACKAGE = "hookline_generated"
GENERATOR = Path(sys.executable).parent / "openapi-python-client"


def generate(document: str, into: Path) -> None:
    """Writes the generated package for document into `into`/PACKAGE."""
    (into / "openapi.json").write_text(document, encoding="utf-8")
    # Its post-generation hooks run ruff from PATH: the virtualenv's.
    env = {**os.environ, "PATH": f"{GENERATOR.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    command = [str(GENERATOR), "generate", "--path", str(into / "openapi.json"), "--meta", "none"]
    command += ["--output-path", str(into / PACKAGE)]
    subprocess.run(command, check=True, capture_output=True, timeout=55, env=env, cwd=into)


def module(name: str) -> Any:
    """Imports a module of the generated package."""
    return importlib.import_module(f"{PACKAGE}.{name}")


def test_given_the_openapi_document_when_a_client_is_generated_then_its_operations_call_the_api(
    api: Api, served: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generate(httpx.get(f"{served}/openapi.json").text, tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(f"{PACKAGE}.")]:
        monkeypatch.delitem(sys.modules, name)

    models = module("models")
    client = module("client").AuthenticatedClient(base_url=served, token=api.acme.api_key)
    request = models.JobRequest(url="http://127.0.0.1:9/hook", delay_s=60.0)
    job = module("api.jobs.submit_job").sync(client=client, body=request)
    fetched = module("api.jobs.get_job").sync(job.id, client=client)
    page = module("api.jobs.list_jobs").sync(client=client, limit=10)
    stats = module("api.stats.get_stats").sync(client=client)
    missing = module("api.jobs.get_job").sync("01ARZ3NDEKTSV4RRFFQ69G5FAV", client=client)

    assert isinstance(job, models.JobView) and job.status == "scheduled"
    assert fetched.id == job.id and [j.id for j in page.jobs] == [job.id]
    assert isinstance(stats, models.StatsView) and stats.last_hour.submitted == 1
    assert isinstance(missing, models.ErrorEnvelope) and missing.error.code == "not_found"
    # One module per operation, named from the operationIds: the names a generated client exposes.
    operations = {path.stem for path in (tmp_path / PACKAGE / "api").rglob("*.py") if path.stem != "__init__"}
    assert {"submit_job", "list_jobs", "get_stats", "replay_dead_letters", "update_schedule"} <= operations
