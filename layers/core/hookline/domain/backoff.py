"""Retry delays: exponential backoff with full jitter, floored at the minimum, honouring Retry-After."""

from __future__ import annotations

import math
import random

from hookline.domain import constants


def retry_delay_ms(
    attempt: int,
    min_backoff_ms: int,
    max_backoff_ms: int,
    retry_after_s: float | None,
    rng: random.Random,
) -> int:
    """Returns how long to wait before the attempt after `attempt` (1-based).

    Full jitter (uniform in [0, min(max, min * 2^(attempt-1))]) spreads retries of jobs that failed together;
    the floor keeps the first retry from being immediate. A receiver's Retry-After is a lower bound (capped at
    a day, so a hostile header cannot park a job forever).
    """
    ceiling_ms = min(max_backoff_ms, min_backoff_ms * 2 ** min(attempt - 1, 40))
    delay_ms = max(min_backoff_ms, int(rng.uniform(0, ceiling_ms)))
    # NaN fails every comparison, so min() would keep it and int() raise: it is ignored (infinity is capped).
    if retry_after_s is not None and not math.isnan(retry_after_s):
        delay_ms = max(delay_ms, int(min(retry_after_s, constants.MAX_RETRY_AFTER_S) * 1000))
    return delay_ms
