"""Hookline: a serverless HTTP-callback job scheduler (core package, shipped as a Lambda layer)."""
