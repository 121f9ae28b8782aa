"""Defaults and bounds, with units in every name."""

# Job request bounds.
MAX_BODY_BYTES = 256 * 1024
MAX_HEADERS = 50
# Header bytes (UTF-8, names and values): one value, and all of a job's headers together. With the body,
# the url and the keys at their limits a job's item stays under 300 KB, below DynamoDB's 400 KB.
MAX_HEADER_VALUE_BYTES = 8 * 1024
MAX_HEADERS_BYTES = 16 * 1024
# A schedule's job template as the schedule item stores it (JSON text), which the item must fit beside.
MAX_TEMPLATE_BYTES = 320 * 1024
MAX_ATTEMPTS_LIMIT = 100
DEFAULT_MAX_ATTEMPTS = 5
DEFAULT_MIN_BACKOFF_S = 1.0
DEFAULT_MAX_BACKOFF_S = 3600.0
DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 300.0
MAX_DELAY_S = 365 * 24 * 3600
# The times a client may give (run_at, a schedule's start_at and end_at), in Unix ms: 1970-01-01T00:00:00Z
# up to, not including, 2100-01-01T00:00:00Z. Outside it a time has no non-negative Unix ms (instance ids
# encode fire times) or, with an extreme offset, no RFC 3339 form at all (years 1 to 9999 in UTC).
EARLIEST_TIME_MS = 0
LATEST_TIME_MS = 4_102_444_800_000
MAX_RETRY_AFTER_S = 24 * 3600

# Execution.
LEASE_MARGIN_S = 30.0
RESPONSE_BODY_PREVIEW_BYTES = 1024
EXECUTION_RETENTION_S = 30 * 24 * 3600
TERMINAL_JOB_RETENTION_S = 30 * 24 * 3600
IDEMPOTENCY_RETENTION_S = 24 * 3600

# Redis batch bounds (a script never does unbounded work in one call).
PROMOTE_BATCH = 500
READ_BATCH = 64
AUTOCLAIM_BATCH = 100
DEAD_STREAM_MAX_LEN = 100_000

# Loops inside one invocation.
PROMOTER_MAX_SLEEP_MS = 1000
EXECUTOR_BLOCK_MS = 1000
INVOCATION_SAFETY_MARGIN_MS = 3000
