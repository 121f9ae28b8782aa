"""MkDocs hook: the API reference page, rendered from the OpenAPI document the API serves.

The document comes from the API function's own resolver (`functions/submit/app.py`) through the same
`openapi_document` that answers `GET /openapi.json`, so the reference is never written by hand: a route or
model that changes changes the page at the next build. The hook adds two generated files to the site:
`reference/openapi.json` (the document, byte for byte) and `reference/api.md` (it rendered as Markdown).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
METHOD_ORDER = ("get", "post", "put", "patch", "delete")
TAG_ORDER = ("jobs", "dead letters", "schedules", "stats", "signing secret", "health")


def openapi_json() -> str:
    """Returns the API's OpenAPI document as the API serves it at /openapi.json."""
    for path in (ROOT, ROOT / "layers" / "core"):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
    from functions.submit.app import app  # noqa: PLC0415 - imported only when the site is built
    from hookline.api.health import openapi_document  # noqa: PLC0415

    return openapi_document(app)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Adds reference/openapi.json and the reference page rendered from it."""
    document = openapi_json()
    files.append(File.generated(config, "reference/openapi.json", content=document))
    files.append(File.generated(config, "reference/api.md", content=render(json.loads(document))))
    return files


def render(document: dict[str, Any]) -> str:
    """Renders an OpenAPI 3.1 document as one Markdown page: operations by tag, then schemas."""
    info = document["info"]
    lines = [
        "# API reference",
        "",
        f"{info['title']} {info['version']}. {info['description']}",
        "",
        "This page is generated from the OpenAPI document the API serves at `GET /openapi.json` "
        "([the same document](openapi.json)); `GET /docs` on a running API shows it in Swagger UI. "
        "Routes marked *no key* need no `Authorization` header.",
        "",
    ]
    operations = _operations(document)
    for tag in sorted({tag for tag, *_ in operations}, key=_tag_rank):
        lines += [f"## {tag.capitalize()}", ""]
        for _, path, method, operation in (entry for entry in operations if entry[0] == tag):
            lines += _operation(path, method, operation)
    lines += ["## Schemas", ""]
    for name, schema in sorted(document["components"]["schemas"].items()):
        lines += _schema(name, schema)
    return "\n".join(lines) + "\n"


def _tag_rank(tag: str) -> tuple[int, str]:
    return (TAG_ORDER.index(tag) if tag in TAG_ORDER else len(TAG_ORDER), tag)


def _operations(document: dict[str, Any]) -> list[tuple[str, str, str, dict[str, Any]]]:
    found = []
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            tag = (operation.get("tags") or ["other"])[0]
            found.append((tag, path, method, operation))
    return sorted(found, key=lambda e: (e[1].count("/"), e[1], METHOD_ORDER.index(e[2])))


def _operation(path: str, method: str, operation: dict[str, Any]) -> list[str]:
    anchor = operation["operationId"]
    keyless = operation.get("security") == [{}]
    lines = [
        f"### {method.upper()} `{path}` {{#{anchor}}}",
        "",
        f"{operation.get('summary', '')}. operationId `{anchor}`" + (", *no key*." if keyless else "."),
        "",
    ]
    if operation.get("description"):
        lines += [operation["description"].strip(), ""]
    parameters = operation.get("parameters", [])
    if parameters:
        lines += ["| parameter | in | type | required | description |", "|---|---|---|---|---|"]
        for parameter in parameters:
            lines.append(
                f"| `{parameter['name']}` | {parameter['in']} | {_type(parameter.get('schema', {}))} "
                f"| {'yes' if parameter.get('required') else 'no'} "
                f"| {_cell(parameter.get('description') or parameter.get('schema', {}).get('description'))} |"
            )
        lines.append("")
    body = operation.get("requestBody")
    if body:
        schema = next(iter(body["content"].values()))["schema"]
        lines += [f"Request body (JSON): {_type(schema)}.", ""]
    lines += ["| status | meaning | body |", "|---|---|---|"]
    for status, response in sorted(operation["responses"].items()):
        content = response.get("content") or {}
        schema = next(iter(content.values()), {}).get("schema")
        lines.append(
            f"| {status} | {_cell(response.get('description'))} | {_type(schema) if schema else '-'} |"
        )
    return [*lines, ""]


def _schema(name: str, schema: dict[str, Any]) -> list[str]:
    lines = [f"### {name} {{#schema-{name}}}", ""]
    if schema.get("description"):
        lines += [_cell(schema["description"]), ""]
    if "enum" in schema:
        return [*lines, "One of " + ", ".join(f"`{v}`" for v in schema["enum"]) + ".", ""]
    properties = schema.get("properties", {})
    if not properties:
        return [*lines, f"Type: {_type(schema)}.", ""]
    required = set(schema.get("required", []))
    lines += ["| field | type | required | default | description |", "|---|---|---|---|---|"]
    for field, spec in properties.items():
        default = f"`{json.dumps(spec['default'])}`" if "default" in spec else ""
        lines.append(
            f"| `{field}` | {_type(spec)} | {'yes' if field in required else 'no'} | {default} "
            f"| {(_cell(spec.get('description')) + _bounds(spec)).strip()} |"
        )
    return [*lines, ""]


def _type(schema: dict[str, Any]) -> str:
    """Names a schema's type, linking to a component schema it refers to."""
    if not schema:
        return "any JSON value"
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        return f"[{name}](#schema-{name})"
    if "anyOf" in schema:
        return " or ".join(_type(option) for option in schema["anyOf"])
    kind = schema.get("type")
    if kind == "array":
        return f"array of {_type(schema.get('items', {}))}"
    extra = schema.get("additionalProperties")
    if kind == "object" and isinstance(extra, dict):
        return f"object of {_type(extra)}"
    if "enum" in schema:
        return " \\| ".join(f"`{value}`" for value in schema["enum"])
    if kind == "string" and schema.get("format"):
        return f"string ({schema['format']})"
    return str(kind or "any JSON value")


def _bounds(spec: dict[str, Any]) -> str:
    """Returns the numeric and length bounds of a field (or of its non-null option), as text."""
    options = [spec, *spec.get("anyOf", [])]
    words = {
        "minimum": "≥",
        "exclusiveMinimum": ">",
        "maximum": "≤",
        "minLength": "length ≥",
        "maxLength": "length ≤",
        "maxItems": "items ≤",
    }
    found = [
        f"{word} {_number(option[key])}" for option in options for key, word in words.items() if key in option
    ]
    return f" ({', '.join(found)})" if found else ""


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _cell(text: str | None) -> str:
    """Makes text safe inside a Markdown table cell."""
    return (text or "").replace("|", "\\|").replace("\n", " ").strip()
