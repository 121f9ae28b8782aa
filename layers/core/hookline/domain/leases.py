"""How long an attempt holds its job, and how often its executor proves it is still alive."""

from __future__ import annotations

from dataclasses import dataclass

from hookline.domain import constants


@dataclass(frozen=True)
class LeaseTiming:
    """The timing of leases, heartbeats and recovery; see check() for the invariants they keep.

    Attributes:
        lease_ms: A claim holds its job this long; the heartbeat extends it while the attempt runs. Until it
            expires no other executor may claim the job, so a crashed executor's job waits at most this long.
        margin_ms: An attempt stops (or does not start) its callback this long before its lease expires.
        renew_below_ms: The heartbeat extends a lease once less than this is left, so an attempt that ends
            within lease_ms - renew_below_ms of its claim costs no renewal write.
        heartbeat_ms: How often an executor marks its pending entries as alive and renews leases.
        redeliver_after_ms: A pending entry idle this long belongs to a gone executor and is re-delivered.
        recover_every_ms: How often each executor looks for such entries (besides the reaper).
    """

    lease_ms: int = constants.LEASE_MS
    margin_ms: int = int(constants.LEASE_MARGIN_S * 1000)
    renew_below_ms: int = constants.LEASE_RENEW_BELOW_MS
    heartbeat_ms: int = constants.HEARTBEAT_MS
    redeliver_after_ms: int = constants.REDELIVER_AFTER_MS
    recover_every_ms: int = constants.RECOVER_EVERY_MS

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Raises ValueError unless the timings keep the invariants below.

        - margin + 2 heartbeats <= renew_below < lease: a lease due for renewal gets at least two renewal
          tries before its attempt's callback must have ended, and a fresh lease is not renewed at once.
        - 3 heartbeats <= redeliver_after: an entry looks abandoned only after three missed beats, so a
          heartbeat delayed by a busy process does not get a live attempt re-delivered.
        """
        if not self.margin_ms + 2 * self.heartbeat_ms <= self.renew_below_ms < self.lease_ms:
            raise ValueError("lease timing needs margin + 2 * heartbeat <= renew_below < lease")
        if 3 * self.heartbeat_ms > self.redeliver_after_ms:
            raise ValueError("lease timing needs 3 * heartbeat <= redeliver_after")
        if self.recover_every_ms <= 0 or self.heartbeat_ms <= 0:
            raise ValueError("heartbeat and recovery intervals must be positive")
