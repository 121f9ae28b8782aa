"""A Hookline receiver on the standard library: verify, then answer 204 (401 when the signature fails)."""

import os
from http.server import BaseHTTPRequestHandler, HTTPServer

import hookline_client

SECRETS = os.environ["HOOKLINE_SIGNING_SECRET"].split()  # during a rotation: "whsec_new whsec_old"


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))  # the exact bytes signed
        try:
            payload = hookline_client.verify(raw, dict(self.headers), SECRETS)
        except hookline_client.WebhookVerificationError:
            self.send_response(401)
        else:
            # webhook-id is the job id, the same on every attempt: de-duplicate on it.
            print("verified", self.headers["webhook-id"], payload, flush=True)
            self.send_response(204)
        self.end_headers()


HTTPServer(("127.0.0.1", int(os.environ.get("PORT", "8000"))), Receiver).serve_forever()
