"""examples/flask_receiver.py takes a real delivery from the executor, verifies it, refuses forgeries."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from werkzeug.serving import make_server

from examples.flask_receiver import create_app
from hookline.adapters.dynamo.key_store import SigningSecrets
from hookline.domain.signing import new_signing_secret
from tests.integration.api.conftest import TENANT, Api

pytestmark = pytest.mark.integration


@pytest.fixture
def secret(api: Api) -> str:
    """Gives the tenant a signing secret of the test's choosing, as `hookline keys create` would."""
    chosen = new_signing_secret()
    api.container.keys.put_signing_secrets(TENANT, SigningSecrets(chosen), api.container.clock.now_ms())
    return chosen


@pytest.fixture
def flask_receiver(secret: str) -> Iterator[tuple[str, list[object]]]:
    """Serves the example app on a free loopback port; yields its hook URL and its handled payloads."""
    app = create_app([secret])
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/hooks/hookline", app.config["HANDLED"]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_given_example_receiver_when_a_job_is_delivered_then_it_verifies_and_handles_it_once(
    api: Api, flask_receiver: tuple[str, list[object]]
) -> None:
    url, handled = flask_receiver
    job = api.acme.post("/v1/jobs", {"url": url, "body": {"order": 42}}).json()

    api.deliver_ready()
    forged = urllib.request.Request(
        url,
        data=b'{"order": 43}',
        headers={"webhook-id": "x", "webhook-timestamp": "1", "webhook-signature": "v1,AAAA"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(forged, timeout=5)
    refused.value.close()  # an HTTPError holds the open response: close its socket, not the GC

    assert handled == [{"order": 42}]
    attempts = api.acme.get(f"/v1/jobs/{job['id']}/executions").json()["executions"]
    assert [(a["status_code"], a["outcome"]) for a in attempts] == [(204, "succeeded")]
    assert refused.value.code == 401
