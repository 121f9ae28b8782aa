"""The web dashboard: one self-contained page (HTML, CSS and JavaScript inlined), served at /dashboard.

The page is a client of the public API like any other: it holds the API key in the tab's session storage
and calls the /v1 routes beside it. Nothing is fetched from elsewhere; the Content-Security-Policy allows
only this page's own inline script and style (by hash) and requests to the API's own origin.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def _hash_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@cache
def page() -> tuple[str, dict[str, str]]:
    """Returns the dashboard's HTML and the headers to serve it with (read once per process)."""
    script = (_HERE / "app.js").read_text(encoding="utf-8")
    style = (_HERE / "app.css").read_text(encoding="utf-8")
    html = (
        (_HERE / "index.html")
        .read_text(encoding="utf-8")
        .replace("/*STYLE*/", style)
        .replace("/*SCRIPT*/", script)
    )
    policy = "; ".join(
        [
            "default-src 'none'",
            f"script-src {_hash_source(script)}",
            f"style-src {_hash_source(style)}",
            "connect-src 'self'",
            "img-src 'self' data:",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        ]
    )
    headers = {
        "Content-Security-Policy": policy,
        "Cache-Control": "no-store",
        "Referrer-Policy": "no-referrer",
        "X-Content-Type-Options": "nosniff",
    }
    return html, headers
