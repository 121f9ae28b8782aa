"""Forwards http://127.0.0.1:3000 to the deployed API on the emulator, and serves the request bin itself.

The deployed API answers at the emulator's execute-api address for the stack's API id and stage, which
changes with every deployment; README examples, scripts and users keep the fixed loopback address and
the same paths. Requests go upstream as they came (method, path, query, headers, body), over kept-alive
connections; answers come back as the API sent them. Local routes (the request bin at /dev/sink) are
served here, since callbacks must reach something on loopback.
"""

from __future__ import annotations

import http.client
import logging
import queue
from collections.abc import Mapping
from urllib.parse import unquote, urlsplit

from hookline_local.gateway import HttpRequest, HttpResponse, LocalRoute

logger = logging.getLogger(__name__)

UPSTREAM_TIMEOUT_S = 35.0  # API Gateway's own limit is 29 s; the emulator answers 504 after it
POOL_SIZE = 16
BAD_GATEWAY = {"message": "the deployed API did not answer"}
# Hop-by-hop headers and the framing each side writes for itself.
_NOT_FORWARDED = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "te", "upgrade"}


class Forwarder:
    """Answers each request from a local route or from the upstream API (a RequestHandler)."""

    def __init__(self, upstream: str, local_routes: Mapping[str, LocalRoute] | None = None) -> None:
        """Args:
        upstream: The deployed API's base URL (http only, loopback), e.g.
            http://127.0.0.1:4566/_aws/execute-api/abcd1234/dev.
        local_routes: Path prefixes served here for every method.
        """
        parts = urlsplit(upstream)
        if parts.scheme != "http" or parts.hostname is None:
            raise ValueError(f"upstream must be an http URL, not {upstream!r}")
        self._host = parts.hostname
        self._port = parts.port or 80
        self._base_path = parts.path.rstrip("/")
        self._local = dict(local_routes or {})
        self._idle: queue.LifoQueue[http.client.HTTPConnection] = queue.LifoQueue()

    def handle(self, request: HttpRequest) -> HttpResponse:
        """Answers one request."""
        path = unquote(urlsplit(request.target).path)
        for prefix, serve in self._local.items():
            if path == prefix or path.startswith(prefix + "/"):
                return serve(request)
        headers = {name: value for name, value in request.headers if name.lower() not in _NOT_FORWARDED}
        headers["X-Forwarded-For"] = request.source_ip
        target = self._base_path + request.target
        # A kept-alive connection may have been closed by the server while idle; such a failure shows
        # before any answer, so the request is sent once more on a new connection. A new connection
        # that fails is reported, never retried (a POST must not be sent twice after it may have run).
        for reused in (True, False):
            connection, was_idle = self._connection(fresh=not reused)
            try:
                connection.request(request.method, target, body=request.body or None, headers=headers)
                upstream = connection.getresponse()
                body = upstream.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                connection.close()
                if was_idle:
                    continue
                logger.warning("%s %s: the deployed API closed the connection", request.method, target)
                return HttpResponse.json(502, BAD_GATEWAY)
            except OSError as error:
                connection.close()
                logger.warning("%s %s: %s", request.method, target, error)
                return HttpResponse.json(502, BAD_GATEWAY)
            if upstream.will_close:
                connection.close()
            else:
                self._release(connection)
            answer = [
                (name, value) for name, value in upstream.getheaders() if name.lower() not in _NOT_FORWARDED
            ]
            return HttpResponse(upstream.status, answer, body)
        return HttpResponse.json(502, BAD_GATEWAY)

    def close(self) -> None:
        """Closes the idle upstream connections."""
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return

    def _connection(self, fresh: bool) -> tuple[http.client.HTTPConnection, bool]:
        if not fresh:
            try:
                return self._idle.get_nowait(), True
            except queue.Empty:
                pass
        return http.client.HTTPConnection(self._host, self._port, timeout=UPSTREAM_TIMEOUT_S), False

    def _release(self, connection: http.client.HTTPConnection) -> None:
        if self._idle.qsize() < POOL_SIZE:
            self._idle.put(connection)
        else:
            connection.close()
