"""LeaseTiming refuses timings that would let a live attempt be re-delivered or its lease lapse."""

from __future__ import annotations

import pytest

from hookline.domain.leases import LeaseTiming
from hookline.plumbing.settings import Settings


def test_given_default_settings_then_timings_keep_the_invariants() -> None:
    timing = Settings().lease_timing()

    assert timing == LeaseTiming()
    # A gone executor's job is claimable again after at most a lease, and its entry re-delivered after at
    # most the idle time plus one recovery interval: both inside the 15 s recovery target.
    assert timing.lease_ms <= 15_000
    assert timing.redeliver_after_ms + timing.recover_every_ms <= 15_000


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"renew_below_ms": 3_000}, id="renewal_starts_too_late_for_two_tries_before_the_margin"),
        pytest.param({"renew_below_ms": 10_000}, id="renewal_due_as_soon_as_claimed"),
        pytest.param({"redeliver_after_ms": 2_000}, id="fewer_than_three_missed_beats_before_redelivery"),
        pytest.param({"heartbeat_ms": 0, "margin_ms": 0}, id="no_heartbeat"),
    ],
)
def test_given_timings_breaking_an_invariant_then_refused(changes: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=r"lease timing|must be positive"):
        LeaseTiming(**changes)


def test_given_environment_when_settings_read_then_lease_timings_come_from_it() -> None:
    settings = Settings.from_env({"HOOKLINE_LEASE_MS": "20000", "HOOKLINE_HEARTBEAT_MS": "500"})

    timing = settings.lease_timing()

    assert (timing.lease_ms, timing.renew_below_ms, timing.heartbeat_ms) == (20_000, 10_000, 500)
