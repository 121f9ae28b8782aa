"""DynamoDB adapters: jobs (with idempotency markers), executions, API keys and tenants."""
