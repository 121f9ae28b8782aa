"""GET /dashboard: one self-contained page, served without a key, that may load nothing from elsewhere."""

from __future__ import annotations

import re

from tests.support.apigw import ApiClient


def test_given_no_key_when_opening_the_dashboard_then_the_page_comes_with_a_strict_policy() -> None:
    response = ApiClient().get("/dashboard")

    assert response.status == 200
    assert response.headers["content-type"].startswith("text/html")
    policy = response.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    assert re.search(r"script-src 'sha256-[A-Za-z0-9+/=]+'", policy)
    assert response.headers["x-request-id"]


def test_given_the_page_when_read_then_it_references_no_other_origin_and_inlines_its_code() -> None:
    html = ApiClient().get("/dashboard").body

    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert not re.search(r"url\(\s*['\"]?(https?:)?//|@import", html)
    assert "/*SCRIPT*/" not in html and "/*STYLE*/" not in html
    assert "fetch(BASE + path" in html and "sessionStorage" in html and "localStorage" not in html
