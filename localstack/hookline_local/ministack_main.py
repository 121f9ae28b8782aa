"""Runs ministack (`python -m ministack`) with workarounds for three of its defects (its DynamoDB's
parsing, its API Gateway's binary media types and gateway responses): this file is what
hookline_local.emulator starts, by path, with the emulator's own Python (.venv-emu).

It imports only ministack and the standard library: .venv-emu has no Hookline packages.

The defect: ministack's `_evaluate_condition` tokenizes and syntax-checks an expression string again for
every item it is evaluated against. A Query evaluates its KeyConditionExpression (and FilterExpression) on
every item of the partition before it pages, so each page of a Query costs a parse per item of the
partition: with 15,000 jobs stored about 0.8 s per page of the reaper's due scan
(bench/emulator_dynamodb.py; 0.2 s patched), where DynamoDB reads only the page. Each page of Hookline's
reaper queries every partition of its shard in the live index, and each page of `GET /v1/jobs` every
partition of the tenant (one per job bucket), so on the emulator both slowed with every job stored.

The workaround parses each (expression, slot) once: the tokens of an expression that passed ministack's
own checks are kept (least recently used, 1,024 expressions), and each item is evaluated from them with
ministack's own evaluator. Whatever is not plainly valid goes to ministack's original function, so every
error and its message stay ministack's own: an expression failing a check, one with BETWEEN (whose bounds
check reads the values), and any error raised while evaluating an item. Results are unchanged; only the
repeated parsing goes. (Remove this once ministack caches its parses; tests/e2e/test_emulator_patch.py
checks the answers against the stock function.)

The second: CloudFormation takes a REST API's BinaryMediaTypes with "/" escaped as "~1" ("*~1*" is "*/*"),
and ministack matches request media types against the escaped text, so no body ever matches and every one
reaches the function decoded as UTF-8 text. binary_media_types_unescaped() unescapes the patterns first.

The third: SAM writes an API's GatewayResponses into its OpenAPI body as the extension
`x-amazon-apigateway-gateway-responses`, which API Gateway imports with the API; ministack's import skips
it, so the API answers an unknown route with the built-in 403 instead of the template's.
gateway_responses_imported() puts each of them after the import, through ministack's PutGatewayResponse.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ConditionEvaluator = Callable[..., Any]
_CACHED_EXPRESSIONS = 1024


def cached_condition_evaluator(dynamodb: Any) -> ConditionEvaluator:
    """Returns a drop-in `_evaluate_condition` for ministack's dynamodb module that parses each
    (expression, slot) once; anything it does not plainly handle goes to the module's original."""
    original: ConditionEvaluator = dynamodb._evaluate_condition

    @functools.lru_cache(maxsize=_CACHED_EXPRESSIONS)
    def checked_tokens(expression: str, slot: str) -> tuple[Any, ...] | None:
        """The expression's tokens if it passes ministack's checks and has no BETWEEN; None otherwise."""
        tokens = dynamodb._tokenize(expression)
        if (
            dynamodb._check_redundant_parens(tokens, slot)
            or dynamodb._check_reserved_keyword_usage(tokens)
            or dynamodb._condition_syntax_error(expression, slot)
        ):
            return None
        if any(token[0] == "IDENT" and str(token[1]).upper() == "BETWEEN" for token in tokens):
            return None
        return tuple(tokens)

    def evaluate_condition(
        expr: Any,
        item: Any,
        attr_values: Any,
        attr_names: Any,
        slot: str = "ConditionExpression",
    ) -> Any:
        if not isinstance(expr, str) or not expr.strip():
            return original(expr, item, attr_values, attr_names, slot=slot)
        try:
            tokens = checked_tokens(expr, slot)
        except Exception:  # a tokenizer error: the original raises it with ministack's own wording
            tokens = None
        if tokens is None:
            return original(expr, item, attr_values, attr_names, slot=slot)
        try:
            return dynamodb._ExprEval(list(tokens), item, attr_values, attr_names).evaluate()
        except Exception:
            # An evaluation error (e.g. begins_with on a number): the original repeats it and words it.
            return original(expr, item, attr_values, attr_names, slot=slot)

    return evaluate_condition


MediaTypeMatcher = Callable[[Any, Any], bool]


def binary_media_types_unescaped(original: MediaTypeMatcher) -> MediaTypeMatcher:
    """Returns a drop-in `_media_type_matches` for ministack's apigateway_v1 module that unescapes the API's
    binary media types ("~1" is "/", "~0" is "~", as CloudFormation reads them) before matching."""

    def media_type_matches(media_type: Any, binary_media_types: Any) -> bool:
        patterns = [str(p).replace("~1", "/").replace("~0", "~") for p in binary_media_types or []]
        return bool(original(media_type, patterns))

    return media_type_matches


RestApiImporter = Callable[..., Any]


def gateway_responses_imported(apigateway: Any) -> RestApiImporter:
    """Returns a drop-in `_import_rest_api` for ministack's apigateway_v1 module that also puts the body's
    `x-amazon-apigateway-gateway-responses` (as API Gateway's import does)."""
    original: RestApiImporter = apigateway._import_rest_api

    def import_rest_api(spec: Any, base_data: Any = None) -> Any:
        api_id = original(spec, base_data)
        responses = spec.get("x-amazon-apigateway-gateway-responses") if isinstance(spec, dict) else None
        for response_type, response in (responses or {}).items():
            apigateway._put_gateway_response(api_id, response_type, response)
        return api_id

    return import_rest_api


def patch_ministack() -> None:
    """Applies the workarounds to ministack's modules (idempotent)."""
    # Imported here: ministack exists only in .venv-emu, and main() first clears sys.path.
    from ministack.services import apigateway_v1, dynamodb  # type: ignore[import-not-found]  # noqa: PLC0415

    if not getattr(dynamodb._evaluate_condition, "hookline_cached", False):
        patched = cached_condition_evaluator(dynamodb)
        patched.hookline_cached = True  # type: ignore[attr-defined]
        dynamodb._evaluate_condition = patched
    if not getattr(apigateway_v1._media_type_matches, "hookline_unescaped", False):
        matcher = binary_media_types_unescaped(apigateway_v1._media_type_matches)
        matcher.hookline_unescaped = True  # type: ignore[attr-defined]
        apigateway_v1._media_type_matches = matcher
    if not getattr(apigateway_v1._import_rest_api, "hookline_responses", False):
        importer = gateway_responses_imported(apigateway_v1)
        importer.hookline_responses = True  # type: ignore[attr-defined]
        apigateway_v1._import_rest_api = importer


def main() -> None:
    """Patches ministack, then runs it as `python -m ministack` does."""
    # Run by path, this file's folder is first on sys.path: its siblings (services.py, runtime.py, ...)
    # must not shadow anything the emulator imports.
    here = Path(__file__).resolve().parent
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != here]
    patch_ministack()
    from ministack.app import main as ministack_main  # type: ignore[import-not-found]  # noqa: PLC0415

    ministack_main()


if __name__ == "__main__":
    main()
