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

# Execution: leases, heartbeats and recovery (hookline.domain.leases.LeaseTiming says what each keeps).
# A claim holds its job this long; the executor's heartbeat extends it while the attempt runs, so a killed
# executor's job is free again within LEASE_MS, whatever the job's callback timeout.
LEASE_MS = 10_000
# An attempt's callback must end this long before its lease expires (clock skew, the finish write).
LEASE_MARGIN_S = 2.0
# The heartbeat renews a lease once less than this is left: an attempt over within 5 s costs no renewal.
LEASE_RENEW_BELOW_MS = LEASE_MS // 2
# How often an executor resets the idle time of its pending entries and renews the leases due.
HEARTBEAT_MS = 1_000
# A pending entry idle this long is re-delivered: its executor missed several heartbeats, so it is gone.
REDELIVER_AFTER_MS = 8_000
# How often every executor re-delivers idle entries (the reaper does too, once a minute).
RECOVER_EVERY_MS = 2_000
# A re-delivered entry whose job's lease runs out within this is held by its executor until then and claimed
# again, instead of deferred through the due ZSET (which would queue it behind any backlog at the stream's
# tail). An entry turns idle REDELIVER_AFTER_MS after its executor's last heartbeat, when the lease has at
# most LEASE_MS - REDELIVER_AFTER_MS + HEARTBEAT_MS left; 2 s more cover clock skew and a slow renewal.
TAKEOVER_WAIT_MS = LEASE_MS - REDELIVER_AFTER_MS + 2 * HEARTBEAT_MS
# A shard reader claims idle entries in place (ahead of the backlog) at most this often while there are none.
CLAIM_IDLE_EVERY_MS = 1_000
# An executor's recovery pass re-adds an idle entry at the stream's tail only once it stayed idle this much
# longer than REDELIVER_AFTER_MS: its readers claim it in place before then, unless none has a free slot.
# Above CLAIM_IDLE_EVERY_MS plus EXECUTOR_BLOCK_MS, the longest a reader goes without a claim. (The reaper,
# once a minute, re-adds at REDELIVER_AFTER_MS: it is what recovers a shard no executor reads.)
READD_GRACE_MS = 3_000
# An executor stops taking work this long plus the longest callback before its invocation ends: room for
# recording the outcome (the finish write, its retries and DynamoDB's timeouts) after the callback.
ATTEMPT_WRAP_UP_S = 30.0
# No attempt holds a job (or its in-flight member, or a concurrency slot) longer than this.
LONGEST_ATTEMPT_MS = int((MAX_TIMEOUT_S + ATTEMPT_WRAP_UP_S) * 1000)
# The execute function's timeout in template.yaml (tests/unit/test_template_contract.py checks they agree),
# and so how long one execute invocation reads: all of it but the longest attempt (90 s).
EXECUTE_FUNCTION_TIMEOUT_S = 420
EXECUTOR_READ_MS = EXECUTE_FUNCTION_TIMEOUT_S * 1000 - LONGEST_ATTEMPT_MS
# Fan-out: the most executors the promoters start beside the scheduled ones, running at once
# (HOOKLINE_MAX_EXECUTORS).
FAN_OUT_MAX_EXECUTORS = 100
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
# A due member left unpromoted this long after its due time means no promoter is working its shard (the
# invocation died, or the next one has not started): executors and the reaper promote it themselves.
PROMOTER_GAP_MS = 2_000
EXECUTOR_BLOCK_MS = 1000
# An executor with nothing read or in flight this long, the streams empty, ends its invocation (idle mode).
EXECUTOR_IDLE_MS = 10_000
# A shard reader in a backlog waits up to this long for more delivery slots to free before it reads, so one
# XREADGROUP serves several jobs (usecases/readers.py); an idle executor reads at once.
READ_GATHER_MS = 2
INVOCATION_SAFETY_MARGIN_MS = 3000
