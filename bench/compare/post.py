"""The one job every peer runs: POST the same ~200 B JSON to the receiver (a keep-alive client per thread)."""

from __future__ import annotations

import json
import os
import threading

import httpx

PAYLOAD = {"order": 42, "items": [1, 2, 3], "customer": "c_0001", "note": "the same payload for every system"}
_local = threading.local()


def body(job_id: str) -> bytes:
    """Returns the JSON body of a job (about 200 bytes)."""
    return json.dumps({"id": job_id, "payload": PAYLOAD}).encode()


def post(job_id: str) -> int:
    """Delivers one job to $BENCH_RECEIVER/hook; returns the status code (raises on a transport error)."""
    client = getattr(_local, "client", None)
    if client is None:
        # Plain HTTP on loopback: verify=False spares each thread loading the CA bundle (~0.2 s of CPU).
        client = _local.client = httpx.Client(timeout=10.0, verify=False)
    url = os.environ["BENCH_RECEIVER"] + "/hook"
    response = client.post(url, content=body(job_id), headers={"Content-Type": "application/json"})
    response.raise_for_status()
    return response.status_code


def close() -> None:
    """Closes this thread's client, if it has one (a worker thread that ends calls it)."""
    client = getattr(_local, "client", None)
    if client is not None:
        client.close()
        _local.client = None
