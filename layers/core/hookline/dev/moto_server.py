"""Serves moto (every AWS API, in memory) on one loopback port, one request at a time; run as a process.

`python -m moto.server` answers each connection in its own thread; moto's work is pure Python, so the
threads only queue on the interpreter lock, and switching between them halves the requests served per
second (measured here: about 90/s threaded, 170/s serial). Requests are short, so serving them one after
another is the faster way, and the listen backlog holds the callers waiting their turn.

Usage: python -m hookline.dev.moto_server --port 5055
"""

from __future__ import annotations

import argparse

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server


def main(argv: list[str] | None = None) -> int:
    """Does the serving described above until terminated."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    server = make_server(
        args.host, args.port, DomainDispatcherApplication(create_backend_app), threaded=False
    )
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
