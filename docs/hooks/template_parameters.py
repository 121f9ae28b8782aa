"""MkDocs hook: the deploying page's parameter table, generated from template.yaml's Parameters.

A page marks the place with `<!-- template-parameters -->`; the table lists every parameter's name,
default and description as the template declares them, so the page cannot list a parameter the
template lacks or miss one it has.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"
MARKER = "<!-- template-parameters -->"


class _TemplateLoader(yaml.SafeLoader):
    """Reads CloudFormation's short-form tags (!Ref, !Sub, ...) as plain values."""


def _any_tag(loader: yaml.SafeLoader, _suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_mapping(node)  # type: ignore[arg-type]


_TemplateLoader.add_multi_constructor("!", _any_tag)


def parameters_table(template: Path = TEMPLATE) -> str:
    """Returns a Markdown table of the template's parameters."""
    declared = yaml.load(template.read_text(encoding="utf-8"), Loader=_TemplateLoader)["Parameters"]
    rows = ["| parameter | default | description |", "|---|---|---|"]
    for name, spec in declared.items():
        default = spec.get("Default", "")
        shown = f"`{default}`" if default != "" else "(empty)"
        description = " ".join(str(spec.get("Description", "")).split()).replace("|", "\\|")
        rows.append(f"| `{name}` | {shown} | {description} |")
    return "\n".join(rows)


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Replaces the marker with the table."""
    return markdown.replace(MARKER, parameters_table()) if MARKER in markdown else markdown
