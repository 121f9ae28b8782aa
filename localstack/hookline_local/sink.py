"""A request bin at /dev/sink: records the callbacks it receives, checks their signatures, lists them."""

from __future__ import annotations

import hmac
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from hookline.domain.signing import signature_header
from hookline_local.gateway import HttpRequest, HttpResponse

SINK_PATH = "/dev/sink"
MAX_KEPT = 1000  # oldest requests are dropped beyond this, so a long session cannot grow without bound


class RequestBin:
    """Keeps the last MAX_KEPT requests; GET lists them, DELETE clears them, anything else is recorded.

    Recorded requests carry `signature_valid`: whether `webhook-signature` verifies with one of the
    secrets `secrets_for(tenant)` returns for the development tenant (None when the request is unsigned).
    """

    def __init__(self, secrets: Callable[[], list[str]]) -> None:
        self._secrets = secrets
        self._lock = threading.Lock()
        self._requests: deque[dict[str, Any]] = deque(maxlen=MAX_KEPT)

    def serve(self, request: HttpRequest) -> HttpResponse:
        """Answers one request to /dev/sink (or a path below it)."""
        if request.method == "GET":
            with self._lock:
                listed = list(self._requests)
            return HttpResponse.json(200, {"requests": listed})
        if request.method == "DELETE":
            with self._lock:
                self._requests.clear()
            return HttpResponse(204)
        self.record(request)
        return HttpResponse.json(200, {"received": True})

    def record(self, request: HttpRequest) -> dict[str, Any]:
        """Stores one request and returns what was stored."""
        headers = {name.lower(): value for name, value in request.headers}
        entry = {
            "method": request.method,
            "path": request.target,
            "headers": headers,
            "body": request.body.decode("utf-8", errors="replace"),
            "received_ms": time.time_ns() // 1_000_000,
            "signature_valid": self._verify(headers, request.body),
        }
        with self._lock:
            self._requests.append(entry)
        return entry

    def _verify(self, headers: dict[str, str], body: bytes) -> bool | None:
        msg_id, timestamp, signatures = (
            headers.get("webhook-id"),
            headers.get("webhook-timestamp"),
            headers.get("webhook-signature"),
        )
        if not (msg_id and timestamp and signatures and timestamp.isdigit()):
            return None
        received = set(signatures.split())
        for secret in self._secrets():
            expected = signature_header([secret], msg_id, int(timestamp), body)
            if any(hmac.compare_digest(expected, candidate) for candidate in received):
                return True
        return False
