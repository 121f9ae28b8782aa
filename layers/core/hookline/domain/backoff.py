"""Retry delays: exponential backoff with full jitter, floored at the minimum, honouring Retry-After up to the
job's maximum backoff; and reading a receiver's Retry-After header."""

from __future__ import annotations

import math
import random
import re
from datetime import UTC
from email.utils import parsedate_to_datetime

from hookline.domain import constants

_DELAY_SECONDS = re.compile(r"[0-9]+")  # ASCII only: \d would also match other scripts' digits
_MAX_DELAY_DIGITS = 9  # more is over a day anyway
_MAX_DATE_CHARS = 64  # an HTTP-date is at most 30 characters (RFC 850 form with a long weekday)


def retry_delay_ms(
    attempt: int,
    min_backoff_ms: int,
    max_backoff_ms: int,
    retry_after_s: float | None,
    rng: random.Random,
) -> int:
    """Returns how long to wait before the attempt after `attempt` (1-based).

    Full jitter (uniform in [0, min(max, min * 2^(attempt-1))]) spreads retries of jobs that failed together;
    the floor keeps the first retry from being immediate. A receiver's Retry-After is a lower bound up to the
    job's max_backoff_ms: the job's own maximum wins over the receiver's wish (and a day caps either), so
    a receiver cannot park a job longer than its submitter allowed.
    """
    ceiling_ms = min(max_backoff_ms, min_backoff_ms * 2 ** min(attempt - 1, 40))
    delay_ms = max(min_backoff_ms, int(rng.uniform(0, ceiling_ms)))
    # NaN fails every comparison, so min() would keep it and int() raise: it is ignored (infinity is capped).
    if retry_after_s is not None and not math.isnan(retry_after_s):
        wished_ms = int(min(retry_after_s, constants.MAX_RETRY_AFTER_S) * 1000)
        delay_ms = max(delay_ms, min(wished_ms, max_backoff_ms))
    return delay_ms


def parse_retry_after(value: str | None, now_ms: int) -> float | None:
    """Turns a Retry-After header (delay in seconds or an HTTP-date) into seconds from now; never raises.

    Only ASCII digits count as a delay: str.isdigit() also accepts "²" or "٣", which float() rejects, and
    a receiver controls this header. Anything else that is short ASCII is read as an HTTP-date (any of
    RFC 9110's three forms, as leniently as email.utils reads dates) and otherwise ignored.

    Args:
        value: The header value, or None when absent.
        now_ms: The current wall time in Unix milliseconds, to measure an HTTP-date against.

    Returns:
        Seconds to wait, clamped to [0, MAX_RETRY_AFTER_S]; None when absent or unparseable.
    """
    if value is None:
        return None
    value = value.strip(" \t")
    if _DELAY_SECONDS.fullmatch(value):
        # A long digit string is past the cap anyway; int() of one would be slow, or refused past 4300 digits.
        delay_s = float(value) if len(value) <= _MAX_DELAY_DIGITS else float(constants.MAX_RETRY_AFTER_S)
    elif value.isascii() and len(value) <= _MAX_DATE_CHARS:
        try:
            moment = parsedate_to_datetime(value)
            if moment.tzinfo is None:  # asctime form (or "-0000"): an HTTP-date is always GMT
                moment = moment.replace(tzinfo=UTC)
            delay_s = moment.timestamp() - now_ms / 1000
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    else:
        return None
    if not math.isfinite(delay_s):
        return None
    return min(max(delay_s, 0.0), float(constants.MAX_RETRY_AFTER_S))
