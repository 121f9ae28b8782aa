"""Does cron arithmetic in a schedule's timezone: parses expressions and computes fire times across DST.

croniter alone gets daylight saving time wrong for our rules (croniter 7 on aware datetimes:
`30 2 * * *` in America/New_York fires at 03:00 on the spring-forward day, and `30 1 * * *` fires twice on
the fall-back day). So croniter only walks *naive local wall times* here, and each wall time is mapped to
an instant explicitly, as EventBridge Scheduler documents its rules:

- a wall time that does not exist (skipped by a spring-forward shift) does not fire;
- a wall time that occurs twice (repeated by a fall-back shift) fires once, at its first occurrence
  (`fold=0`), and not again when the clock repeats it.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, CroniterError, croniter

# A DST shift skips or repeats at most a few hours of wall time; a per-second schedule walks at most that
# many wall times before it leaves the shift. Far above that means a bug, not a schedule.
_MAX_WALL_STEPS = 6 * 3600
# How many consecutive fire times the frequency floor looks at. Cron fields form a product, so the
# shortest gap of the seconds, minutes and hours fields all show up within the first day of fire times.
FLOOR_SAMPLE = 1000


class CronError(ValueError):
    """An expression or timezone is not usable; the message says why (a ValueError, for pydantic)."""


def zone_of(name: str) -> ZoneInfo:
    """Returns the IANA timezone called name, or raises CronError."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise CronError(f"unknown IANA timezone {name!r}, for example 'Europe/London' or 'UTC'") from error


def normalise(expression: str) -> str:
    """Returns the expression with single spaces, or raises CronError when it is not 5 or 6 fields."""
    fields = expression.split()
    if len(fields) not in (5, 6):
        raise CronError(
            f"a cron expression has 5 fields (minute hour day-of-month month day-of-week) or 6 with "
            f"seconds first; got {len(fields)}"
        )
    if any(field.upper().startswith("H") for field in fields):
        raise CronError("hashed (H) fields are not supported")
    return " ".join(fields)


class CronSpec:
    """Does fire-time arithmetic for one expression in one timezone (thread-safe; build with spec_for)."""

    def __init__(self, expression: str, timezone: str) -> None:
        self.expression = normalise(expression)
        self.timezone = timezone
        self.zone = zone_of(timezone)
        self.has_seconds = len(self.expression.split()) == 6
        try:
            # Six fields put seconds first (Quartz, Spring, robfig/cron); croniter's default is last.
            self._walker = croniter(
                self.expression, datetime(2000, 1, 1), second_at_beginning=self.has_seconds
            )
        except (CroniterError, ValueError, KeyError, TypeError) as error:
            raise CronError(f"invalid cron expression {self.expression!r}: {error}") from error
        # Building a croniter costs several times moving one: reuse one walker, one caller at a time.
        self._lock = threading.Lock()

    def next_after(self, after_ms: int) -> int | None:
        """Returns the first fire time strictly after after_ms (ms since the epoch), or None if none comes."""
        local = datetime.fromtimestamp(after_ms // 1000, UTC).astimezone(self.zone)
        start = local.replace(tzinfo=None, fold=0)
        with self._lock:
            self._walker.set_current(start, force=True)
            for _ in range(_MAX_WALL_STEPS):
                try:
                    wall = self._walker.get_next(datetime)
                except CroniterBadDateError:
                    return None
                fire_ms = self._instant_ms(wall)
                # After a fall-back shift, wall times just after `start` may map (fold=0) to instants
                # before after_ms: they fired in the first pass, so they are passed over, not repeated.
                if fire_ms is not None and fire_ms > after_ms:
                    return fire_ms
        raise RuntimeError(f"no fire time of {self.expression!r} within {_MAX_WALL_STEPS} wall-time steps")

    def latest_at_or_before(self, at_ms: int, floor_ms: int) -> int | None:
        """Returns the last fire time in [floor_ms, at_ms], or None when there is none.

        Looks back through windows growing fourfold, so a frequent schedule finds it at once and a rare
        one needs a few steps; never walks further back than floor_ms.
        """
        window_ms = 1000
        while True:
            start_ms = max(at_ms - window_ms, floor_ms - 1)
            fire_ms = self.next_after(start_ms)
            if fire_ms is not None and fire_ms <= at_ms:
                while (later := self.next_after(fire_ms)) is not None and later <= at_ms:
                    fire_ms = later
                return fire_ms
            if start_ms <= floor_ms - 1:
                return None
            window_ms *= 4

    def upcoming(self, after_ms: int, count: int, until_ms: int | None = None) -> list[int]:
        """Returns up to count fire times after after_ms, ending at until_ms when given."""
        times: list[int] = []
        cursor = after_ms
        while len(times) < count:
            fire_ms = self.next_after(cursor)
            if fire_ms is None or (until_ms is not None and fire_ms > until_ms):
                break
            times.append(fire_ms)
            cursor = fire_ms
        return times

    def min_gap_ms(self, from_ms: int, sample: int = FLOOR_SAMPLE) -> int | None:
        """Returns the shortest gap between consecutive fire times among the next `sample` ones.

        Measured in local wall time, where the expression's fields live (a DST shift can shorten one gap a
        year in absolute time; the floor does not chase that). None when it fires fewer than twice.
        """
        local = datetime.fromtimestamp(from_ms // 1000, UTC).astimezone(self.zone).replace(tzinfo=None)
        walker = croniter(self.expression, local, second_at_beginning=self.has_seconds)
        gaps: list[float] = []
        previous: datetime | None = None
        for _ in range(sample):
            try:
                wall = walker.get_next(datetime)
            except CroniterBadDateError:
                break
            if previous is not None:
                gaps.append((wall - previous).total_seconds())
            previous = wall
        return int(min(gaps) * 1000) if gaps else None

    def matches(self, fire_ms: int) -> bool:
        """Tells whether the expression matches the local wall time of fire_ms (for checks and tests)."""
        wall = datetime.fromtimestamp(fire_ms // 1000, UTC).astimezone(self.zone).replace(tzinfo=None)
        return bool(croniter.match(self.expression, wall, second_at_beginning=self.has_seconds))

    def _instant_ms(self, wall: datetime) -> int | None:
        """Returns the instant of a naive local wall time (first occurrence), or None if it does not exist."""
        instant = wall.replace(tzinfo=self.zone, fold=0).astimezone(UTC)
        if instant.astimezone(self.zone).replace(tzinfo=None) != wall:
            return None  # inside a spring-forward gap: the round trip lands on another wall time
        return int(instant.timestamp()) * 1000


@lru_cache(maxsize=1024)
def spec_for(expression: str, timezone: str) -> CronSpec:
    """Returns the (shared, cached) spec of an expression in a timezone; raises CronError."""
    return CronSpec(expression, timezone)
