"""The emulator's binary media types workaround (ministack_main.binary_media_types_unescaped)."""

from __future__ import annotations

from typing import Any

from hookline_local.ministack_main import binary_media_types_unescaped


def test_given_escaped_patterns_when_matching_then_the_original_matcher_sees_them_unescaped() -> None:
    seen: list[list[str]] = []

    def original(media_type: Any, patterns: Any) -> bool:
        seen.append(list(patterns))
        return "*/*" in patterns

    matches = binary_media_types_unescaped(original)

    assert matches("application/json", ["*~1*"]) is True
    assert matches("application/json", None) is False
    assert seen == [["*/*"], []]
