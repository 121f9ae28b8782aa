"""A Flask app that receives Hookline callbacks: verifies each one, then handles each job once.

Run it (Flask comes with the dev extras):

    HOOKLINE_SIGNING_SECRET=whsec_... .venv/bin/python -m examples.flask_receiver   # on 127.0.0.1:8000

and submit jobs with "url": "http://127.0.0.1:8000/hooks/hookline". During a signing-secret rotation, put
both secrets in HOOKLINE_SIGNING_SECRET, separated by a space: a callback signed by either passes.
"""

from __future__ import annotations

import os
from typing import Any

from flask import Flask, Response, request

import hookline_client as hookline


def create_app(secrets: list[str]) -> Flask:
    """Returns the receiver app; app.config["HANDLED"] lists the payloads handled, in order."""
    app = Flask(__name__)
    handled: list[Any] = []
    seen: set[str] = set()
    app.config["HANDLED"] = handled

    @app.post("/hooks/hookline")
    def receive() -> Response:
        try:
            # The raw body, before any JSON parsing: the signature covers the exact bytes sent.
            payload = hookline.verify(request.get_data(), dict(request.headers), secrets)
        except hookline.WebhookVerificationError as error:
            return Response(str(error), status=401)
        # At-least-once delivery: webhook-id (the job id) is the same on every attempt, so de-duplicate.
        job_id = request.headers["webhook-id"]
        if job_id not in seen:
            seen.add(job_id)
            handled.append(payload)
        return Response(status=204)

    return app


if __name__ == "__main__":
    create_app(os.environ["HOOKLINE_SIGNING_SECRET"].split()).run(host="127.0.0.1", port=8000)
