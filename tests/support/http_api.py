"""The submit handler served over real HTTP: a WSGI server turning requests into proxy events."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from werkzeug.serving import make_server

from tests.support.apigw import wsgi_app


@contextmanager
def serving_api() -> Iterator[str]:
    """Serves the in-process API on a free loopback port while the block runs; yields its base URL."""
    server = make_server("127.0.0.1", 0, wsgi_app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
