"""Adapters: Redis, DynamoDB, the callback HTTP client and metrics, each implementing ports."""
