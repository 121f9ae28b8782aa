"""Domain errors; the API maps each to one HTTP status and a machine-readable code, once."""


class HooklineError(Exception):
    """Base of every error the core raises on purpose."""

    code = "internal_error"
    http_status = 500


class InvalidRequest(HooklineError):
    """The request is well-formed JSON but breaks a rule the models cannot express."""

    code = "validation_error"
    http_status = 422

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class UnsafeUrl(InvalidRequest):
    """The callback URL resolves to an address Hookline must not call."""

    code = "unsafe_url"


class UnresolvedHost(UnsafeUrl):
    """The callback host name does not resolve right now: refused at submit like any unsafe URL, but
    retried at delivery, where a DNS outage must not dead-letter every job it meets."""


class DnsTimeout(UnresolvedHost):
    """The callback host's lookup outlasted its time limit at submit.

    503, not 422: the URL may be perfectly good and the request worth repeating, since a lookup that hangs is
    far more often a slow or overloaded resolver (ours or the name's) than a wrong URL; a client that retries
    5xx submits it again, whereas a 422 tells it to change the request. Still an UnresolvedHost, so that
    delivery, if it ever meets one, retries it like any lookup failure.
    """

    code = "dns_timeout"
    http_status = 503


class Unauthorized(HooklineError):
    """The API key is missing, malformed, unknown or revoked (one answer for all, on purpose)."""

    code = "unauthorized"
    http_status = 401


class Forbidden(HooklineError):
    """The key is valid but lacks the scope the route needs."""

    code = "forbidden"
    http_status = 403


class NotFound(HooklineError):
    """No such item for this tenant (another tenant's item is not found, never forbidden)."""

    code = "not_found"
    http_status = 404


class QueueNotFound(NotFound):
    """A job or schedule names a queue the tenant has not created: refused, nothing stored."""

    code = "queue_not_found"


class Conflict(HooklineError):
    """The request conflicts with the item's current state."""

    code = "conflict"
    http_status = 409


class IdempotencyConflict(Conflict):
    """The idempotency key was used before with a different request."""

    code = "idempotency_key_reused"


class NotWaiting(Conflict):
    """The job is not waiting (scheduled): it runs, or has ended, so it cannot be moved to now."""

    code = "job_not_waiting"


class SigningSecretChanged(Conflict):
    """Another rotation replaced the tenant's signing secret between this one's read and its write."""

    code = "signing_secret_changed"


class StaleState(HooklineError):
    """A conditional write lost a race: the item is no longer in the state the caller saw."""

    code = "stale_state"
    http_status = 409


class NotYet(HooklineError):
    """A job may not start an attempt yet: it is due later, or another attempt still holds its lease."""

    code = "not_yet"
    http_status = 409

    def __init__(self, message: str, retry_at_ms: int) -> None:
        super().__init__(message)
        self.retry_at_ms = retry_at_ms


class RateLimited(HooklineError):
    """The caller exceeded its request rate."""

    code = "rate_limited"
    http_status = 429

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class DependencyDown(HooklineError):
    """Redis or DynamoDB is unreachable, or kept refusing for a transient reason (throttled, conflicting)."""

    code = "dependency_unavailable"
    http_status = 503


class IndexUnavailable(DependencyDown):
    """Redis (the live indexes) did not answer or lost a blocked read: transient, so loops wait it out.

    The Redis adapters raise it in place of the client's connection, timeout and fail-over errors, so use
    cases can tell a blip from a bug without importing redis.
    """


class ShardCountLowered(HooklineError):
    """The engine was started with fewer shards than jobs were written with: it refuses to run.

    A job's shard is a hash of its id modulo the shard count, fixed when it is written; the promoters,
    executors and reaper serve shards 0 .. count - 1 only, so lowering the count would leave every job on
    the dropped shards unpromoted, unexecuted and unreconciled for good.
    """

    code = "shard_count_lowered"
    http_status = 500

    def __init__(self, recorded: int, configured: int) -> None:
        super().__init__(
            f"HOOKLINE_SHARDS is {configured}, but jobs were written with {recorded} shards: jobs on shards "
            f"{configured}..{recorded - 1} would never run. Set HOOKLINE_SHARDS (the template's Shards "
            f"parameter) to {recorded} or more."
        )
        self.recorded = recorded
        self.configured = configured


class JobBucketsChanged(HooklineError):
    """The engine was started with another job bucket count than the jobs table's items were written with.

    A job's partition key holds a hash of its id modulo the bucket count (adapters/dynamo/tables.py
    Keyspace), so with another count every get, claim, finish, cancel and replay would look for existing
    jobs under the wrong key, and reconciliation would read the wrong live-index partitions.
    """

    code = "job_buckets_changed"
    http_status = 500

    def __init__(self, recorded: int, configured: int) -> None:
        super().__init__(
            f"HOOKLINE_JOB_BUCKETS is {configured}, but the jobs table's items were written with {recorded} "
            f"buckets. Set HOOKLINE_JOB_BUCKETS (the template's JobBuckets parameter) back to {recorded}, "
            f"or stop the functions and move the items with `hookline migrate-keys --buckets {configured}`."
        )
        self.recorded = recorded
        self.configured = configured
