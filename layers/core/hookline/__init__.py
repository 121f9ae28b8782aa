"""Hookline: a serverless HTTP-callback job scheduler (core package, shipped as a Lambda layer).

`hookline.verify` checks a callback on the receiving side; `hookline.client` talks to the API.
"""

from hookline.domain.receiving import WebhookVerificationError, verify

__all__ = ["WebhookVerificationError", "verify"]
