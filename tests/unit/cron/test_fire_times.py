"""Fire times in a timezone: strictly increasing, matching in local time, DST gaps skipped, repeats once."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hookline.domain.cron.expression import CronError, CronSpec, spec_for

ZONES = [
    "UTC",
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",  # 30-minute DST shift
    "Pacific/Chatham",  # +12:45 / +13:45, shifts at 02:45 and 03:45
    "America/Santiago",  # shifts at midnight
]


def ms(zone: str, *wall: int, fold: int = 0) -> int:
    return int(datetime(*wall, tzinfo=ZoneInfo(zone), fold=fold).timestamp() * 1000)  # type: ignore[misc]


def local(zone: str, fire_ms: int) -> datetime:
    return datetime.fromtimestamp(fire_ms / 1000, UTC).astimezone(ZoneInfo(zone))


@cache
def transitions(zone: str) -> list[int]:
    """Returns the instants (ms) in 2025-2027 at which the zone's UTC offset changes."""
    tz = ZoneInfo(zone)
    found, step = [], timedelta(minutes=15)
    moment = datetime(2025, 1, 1, tzinfo=UTC)
    offset = moment.astimezone(tz).utcoffset()
    while moment.year < 2028:
        moment += step
        current = moment.astimezone(tz).utcoffset()
        if current != offset:
            found.append(int(moment.timestamp() * 1000))
            offset = current
    return found


def field(low: int, high: int) -> st.SearchStrategy[str]:
    values = st.integers(low, high)
    return st.one_of(
        st.just("*"),
        values.map(str),
        st.integers(2, max(2, (high - low) // 2)).map(lambda k: f"*/{k}"),
        st.lists(values, min_size=2, max_size=4, unique=True).map(lambda v: ",".join(map(str, sorted(v)))),
        st.tuples(values, values).map(lambda ab: f"{min(ab)}-{max(ab)}"),
    )


# Day fields stay open so gaps stay short enough to check every minute (or second) in between.
minute_expressions = st.builds(lambda m, h: f"{m} {h} * * *", field(0, 59), field(0, 23))
second_expressions = st.builds(lambda s, m: f"{s} {m} * * * *", field(0, 59), field(0, 59))


@st.composite
def starts(draw: st.DrawFn, zone: str) -> int:
    """Draws a start instant, half of the time within two days before a DST transition."""
    if zone != "UTC" and draw(st.booleans()):
        moment = draw(st.sampled_from(transitions(zone)))
        return moment - draw(st.integers(0, 2 * 86_400_000))
    return draw(st.integers(ms("UTC", 2025, 1, 1), ms("UTC", 2027, 12, 1)))


def open_day_matcher(spec: CronSpec) -> Callable[[datetime], bool]:
    """Returns a fast wall-time matcher for expressions whose day fields are all `*` (the strategies')."""
    expanded = croniter(spec.expression, datetime(2026, 1, 1), second_at_beginning=spec.has_seconds).expanded
    assert expanded[2:5] == [["*"], ["*"], ["*"]]

    def allowed(values: list[Any], size: int) -> set[int]:
        return set(range(size)) if values == ["*"] else {int(v) for v in values}

    minutes, hours = allowed(expanded[0], 60), allowed(expanded[1], 24)
    seconds = allowed(expanded[5], 60) if spec.has_seconds else {0}
    return lambda wall: wall.second in seconds and wall.minute in minutes and wall.hour in hours


def assert_fire_times_follow_the_rules(spec: CronSpec, start_ms: int, count: int, step_s: int) -> None:
    """Checks the properties over `count` fire times, brute-forcing every step_s in between."""
    times = spec.upcoming(start_ms, count)
    assert times, "an open-day expression always fires"
    assert all(a < b for a, b in zip([start_ms, *times], times, strict=False)), "strictly increasing"
    walls = [local(spec.timezone, t).replace(tzinfo=None) for t in times]
    assert len(set(walls)) == len(walls), "a repeated wall time fires once"
    for fire_ms, wall in zip(times, walls, strict=True):
        assert fire_ms % 1000 == 0
        assert spec.matches(fire_ms), "matches the expression in local time"
        assert local(spec.timezone, fire_ms).fold == 0, "the first of two equal wall times"
        assert croniter.match(spec.expression, wall, second_at_beginning=spec.has_seconds)
    # Nothing skipped: every instant in between either does not match or repeats a wall time (fold=1).
    matches = open_day_matcher(spec)
    cursor = (start_ms // (step_s * 1000) + 1) * step_s * 1000
    for fire_ms in times:
        while cursor < fire_ms:
            moment = local(spec.timezone, cursor)
            assert not matches(moment) or moment.fold == 1, f"skipped {moment.isoformat()}"
            cursor += step_s * 1000
        cursor = fire_ms + step_s * 1000


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), expression=minute_expressions, zone=st.sampled_from(ZONES))
def test_given_minute_expressions_in_any_zone_then_fire_times_follow_the_rules(
    data: st.DataObject, expression: str, zone: str
) -> None:
    start_ms = data.draw(starts(zone))
    assert_fire_times_follow_the_rules(spec_for(expression, zone), start_ms, count=6, step_s=60)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), expression=second_expressions, zone=st.sampled_from(ZONES))
def test_given_second_expressions_in_any_zone_then_fire_times_follow_the_rules(
    data: st.DataObject, expression: str, zone: str
) -> None:
    start_ms = data.draw(starts(zone))
    assert_fire_times_follow_the_rules(spec_for(expression, zone), start_ms, count=6, step_s=1)


@pytest.mark.parametrize(
    ("zone", "expression", "after", "want"),
    [
        pytest.param(
            "America/New_York",
            "30 2 * * *",
            (2026, 3, 7, 12, 0),
            [(2026, 3, 9, 2, 30, 0)],
            id="given_new_york_spring_forward_then_0230_that_does_not_exist_is_skipped",
        ),
        pytest.param(
            "America/New_York",
            "30 1 * * *",
            (2026, 10, 31, 12, 0),
            [(2026, 11, 1, 1, 30, 0), (2026, 11, 2, 1, 30, 0)],
            id="given_new_york_fall_back_then_0130_fires_once_at_its_first_occurrence",
        ),
        pytest.param(
            "Europe/London",
            "*/30 1 * * *",
            (2026, 10, 25, 0, 0),
            [(2026, 10, 25, 1, 0, 0), (2026, 10, 25, 1, 30, 0), (2026, 10, 26, 1, 0, 0)],
            id="given_london_fall_back_then_each_wall_time_of_the_repeated_hour_fires_once",
        ),
        pytest.param(
            "Australia/Lord_Howe",
            "15 2 * * *",
            (2026, 10, 3, 12, 0),
            [(2026, 10, 5, 2, 15, 0)],
            id="given_lord_howe_half_hour_spring_forward_then_0215_is_skipped",
        ),
        pytest.param(
            "Australia/Lord_Howe",
            "45 1 * * *",
            (2026, 4, 4, 12, 0),
            [(2026, 4, 5, 1, 45, 0), (2026, 4, 6, 1, 45, 0)],
            id="given_lord_howe_half_hour_fall_back_then_0145_fires_once",
        ),
        pytest.param(
            "Pacific/Chatham",
            "0 3 * * *",
            (2026, 9, 26, 12, 0),
            [(2026, 9, 28, 3, 0, 0)],
            id="given_chatham_spring_forward_at_0245_then_0300_is_skipped",
        ),
        pytest.param(
            "Pacific/Chatham",
            "0 3 * * *",
            (2026, 4, 4, 12, 0),
            [(2026, 4, 5, 3, 0, 0), (2026, 4, 6, 3, 0, 0)],
            id="given_chatham_fall_back_at_0345_then_0300_fires_once",
        ),
    ],
)
def test_dst_examples(
    zone: str, expression: str, after: tuple[int, ...], want: list[tuple[int, ...]]
) -> None:
    spec = spec_for(expression, zone)

    times = spec.upcoming(ms(zone, *after), len(want))

    assert [local(zone, t).replace(tzinfo=None) for t in times] == [datetime(*w) for w in want]  # type: ignore[misc]


def test_given_per_minute_schedule_over_new_york_fall_back_then_repeated_hour_does_not_fire_again() -> None:
    spec = spec_for("*/20 * * * *", "America/New_York")

    times = spec.upcoming(ms("America/New_York", 2026, 11, 1, 0, 30), 6)

    assert [local("America/New_York", t).isoformat() for t in times] == [
        "2026-11-01T00:40:00-04:00",
        "2026-11-01T01:00:00-04:00",
        "2026-11-01T01:20:00-04:00",
        "2026-11-01T01:40:00-04:00",
        "2026-11-01T02:00:00-05:00",  # 01:00-01:40 EST repeat wall times that already fired
        "2026-11-01T02:20:00-05:00",
    ]


def test_given_start_inside_the_repeated_hour_then_latest_is_the_first_pass_not_an_earlier_wall_time() -> (
    None
):
    spec = spec_for("*/20 * * * *", "America/New_York")
    at_ms = ms("America/New_York", 2026, 11, 1, 1, 10, fold=1)  # 01:10 EST, the second pass

    assert local("America/New_York", spec.latest_at_or_before(at_ms, 0) or 0).isoformat() == (
        "2026-11-01T01:40:00-04:00"
    )
    assert local("America/New_York", spec.next_after(at_ms) or 0).isoformat() == "2026-11-01T02:00:00-05:00"


@pytest.mark.parametrize(
    ("expression", "from_wall", "want"),
    [
        ("5 * * * * *", (2026, 1, 1, 0, 0, 0), [(2026, 1, 1, 0, 0, 5), (2026, 1, 1, 0, 1, 5)]),
        ("0 9 * * MON", (2026, 1, 1, 0, 0, 0), [(2026, 1, 5, 9, 0, 0), (2026, 1, 12, 9, 0, 0)]),
    ],
    ids=["given_six_fields_then_the_first_is_seconds", "given_five_fields_then_minute_resolution"],
)
def test_field_layout(expression: str, from_wall: tuple[int, ...], want: list[tuple[int, ...]]) -> None:
    times = spec_for(expression, "UTC").upcoming(ms("UTC", *from_wall), 2)

    assert [local("UTC", t).replace(tzinfo=None) for t in times] == [datetime(*w) for w in want]  # type: ignore[misc]


@pytest.mark.parametrize(
    ("expression", "zone", "reason"),
    [
        ("* * * *", "UTC", "5 fields"),
        ("* * * * * * *", "UTC", "5 fields"),
        ("61 * * * *", "UTC", "invalid cron expression"),
        ("H * * * *", "UTC", "hashed"),
        ("* * * * *", "Mars/Olympus_Mons", "unknown IANA timezone"),
    ],
)
def test_given_bad_expression_or_zone_then_cron_error_says_why(
    expression: str, zone: str, reason: str
) -> None:
    with pytest.raises(CronError, match=reason):
        CronSpec(expression, zone)


def test_given_expression_that_never_matches_then_no_next_fire_time() -> None:
    assert spec_for("0 0 30 2 *", "UTC").next_after(0) is None


@pytest.mark.parametrize(
    ("expression", "want_ms"),
    [("*/5 * * * * *", 5_000), ("0 0,59 1,3 * * *", 59 * 60_000), ("0 9 * * *", 86_400_000)],
)
def test_min_gap(expression: str, want_ms: int) -> None:
    assert spec_for(expression, "UTC").min_gap_ms(ms("UTC", 2026, 1, 1)) == want_ms
