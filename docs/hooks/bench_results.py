"""MkDocs hook: the performance page's plot, taken from bench/results where `make bench` writes it.

The site shows the last run's `fire_lag.png` as `images/fire_lag.png` without a copy kept under docs/, so a
new `make bench` run changes the page's plot with its tables.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"
PLOTS = ("fire_lag.png",)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Adds each plot of bench/results under images/."""
    for name in PLOTS:
        files.append(File.generated(config, f"images/{name}", abs_src_path=str(RESULTS / name)))
    return files
