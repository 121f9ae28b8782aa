"""Hookline: a serverless HTTP-callback job scheduler (core package, shipped as a Lambda layer).

The API client and `verify` for receivers are in the hookline-client distribution (`hookline_client`).
"""
