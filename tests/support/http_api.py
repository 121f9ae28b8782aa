"""The submit handler served over real HTTP: a WSGI server turning requests into proxy events."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from werkzeug.serving import make_server

from tests.support.apigw import wsgi_app

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment


def _one_at_a_time(app: WSGIApplication) -> WSGIApplication:
    """Runs app for one request at a time, as a Lambda sandbox does.

    The resolver keeps the current event on the app object, so two requests at once (a browser's parallel
    fetches) would read each other's events; Lambda never runs two invocations in one sandbox.
    """
    lock = threading.Lock()

    def serve(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        with lock:
            return list(app(environ, start_response))

    return serve


@contextmanager
def serving_api() -> Iterator[str]:
    """Serves the in-process API on a free loopback port while the block runs; yields its base URL."""
    server = make_server("127.0.0.1", 0, _one_at_a_time(wsgi_app), threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
