"""Hookline's sender for the bench's client (client.py): its API, one sandbox per client thread.

one() is POST /v1/jobs, many() POST /v1/jobs/batch, each request sent over loopback to the API sandbox
of the thread's index (lambda_process.py: the SubmitFunction's handler module, the event built there as
API Gateway builds it) with the bench tenant's API key. The client pays for the request's JSON and a
round trip, as an HTTP client of the API would; the HTTP leg itself (TLS, API Gateway) is in neither side.
"""

from __future__ import annotations

import json
import os
from multiprocessing.connection import Client, Connection

from bench.compare.hookline_system import job_fields

Job = tuple[str, float | None]


class ApiSender:
    """One connection to one API sandbox."""

    def __init__(self, port: int, api_key: str, url: str) -> None:
        self._connection: Connection = Client(("127.0.0.1", port))
        self._headers = [("Authorization", f"Bearer {api_key}"), ("Content-Type", "application/json")]
        self._url = url

    def _post(self, path: str, document: object) -> str:
        self._connection.send(("POST", path, self._headers, json.dumps(document).encode()))
        status, body = self._connection.recv()
        if status not in (200, 201):
            raise RuntimeError(f"{path} answered {status}: {body[:300]}")
        return str(body)

    def one(self, job_id: str, due_s: float | None) -> None:
        """POST /v1/jobs."""
        self._post("/v1/jobs", job_fields(self._url, job_id, due_s))

    def many(self, jobs: list[Job]) -> None:
        """POST /v1/jobs/batch; raises if any job was refused."""
        reply = json.loads(self._post("/v1/jobs/batch", {"jobs": [job_fields(self._url, *j) for j in jobs]}))
        refused = [item for item in reply["results"] if item["status"] not in (200, 201)]
        if refused:
            raise RuntimeError(f"{len(refused)} batch items refused, e.g. {refused[0]}")

    def close(self) -> None:
        """Closes the connection (the sandbox then waits for the next one)."""
        self._connection.close()


def open_sender(index: int) -> ApiSender:
    """Returns thread index's sender: the index-th API sandbox of BENCH_API_PORTS."""
    ports = [int(port) for port in os.environ["BENCH_API_PORTS"].split(",")]
    return ApiSender(ports[index], os.environ["BENCH_API_KEY"], os.environ["BENCH_RECEIVER"] + "/hook")
