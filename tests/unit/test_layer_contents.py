"""What layers/core/Makefile puts in the Lambda layer: the package less the workstation-only parts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hookline_local.template import find_template

REPO = find_template().parent


def test_given_the_layer_build_when_run_then_commands_are_left_out_and_models_dashboard_and_scripts_kept(
    tmp_path: Path,
) -> None:
    # PYTHON=true skips the pip step (it fetches Lambda wheels); the copy and the pruning run as in sam build.
    subprocess.run(
        ["make", "-s", "-f", str(REPO / "layers/core/Makefile"), "build-CoreLayer",
         f"ARTIFACTS_DIR={tmp_path}", "PYTHON=true"],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    package = tmp_path / "python" / "hookline"
    probe = (
        "import os, hookline, hookline.api.dashboard, hookline.api.dashboard_page, hookline.api.jobs;"
        "import hookline_client.schemas as s;"
        "assert hookline.__file__.startswith(os.getcwd()), hookline.__file__;"
        "assert s.__file__.startswith(os.getcwd()), s.__file__;"
        "assert hookline.api.dashboard_page.page()[0].startswith('<!doctype html>');"
        # Every script loads from the layer's own copy, its included fragments with it.
        "from hookline.adapters.redis import scripts; assert str(scripts.lua_dir()).startswith(os.getcwd());"
        "assert all(scripts.script_source(n) for n in scripts.SCRIPT_NAMES)"
    )

    assert not (package / "cli").exists() and not (tmp_path / "python" / "hookline_client" / "cli").exists()
    assert not list(package.rglob("hookline_local*"))
    assert {p.name for p in (package / "api" / "dashboard_page").iterdir()} >= {
        "index.html",
        "app.js",
        "app.css",
    }
    # The layer's package imports on its own (its dependencies come from this virtualenv here).
    subprocess.run([sys.executable, "-c", probe], check=True, cwd=tmp_path / "python", timeout=30)
