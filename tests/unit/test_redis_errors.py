"""Which Redis errors the adapters turn into IndexUnavailable: blips yes, bugs and bad data no."""

from __future__ import annotations

import pytest
import redis

from hookline.adapters.redis.errors import is_transient, translating
from hookline.domain.errors import IndexUnavailable


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        pytest.param(redis.ConnectionError("Connection refused"), True, id="connection_refused"),
        pytest.param(redis.TimeoutError("Timeout reading from socket"), True, id="socket_timeout"),
        pytest.param(redis.BusyLoadingError("Redis is loading the dataset"), True, id="loading"),
        pytest.param(redis.ReadOnlyError("You can't write against a read only replica"), True, id="readonly"),
        pytest.param(redis.ResponseError("UNBLOCKED the stream key no longer exists"), True, id="unblocked"),
        pytest.param(redis.ResponseError("MASTERDOWN Link with MASTER is down"), True, id="masterdown"),
        pytest.param(
            redis.ResponseError("Error running script (call to f_1): @user_script:3: -TRYAGAIN Multiple "),
            True,
            id="tryagain_inside_a_script",
        ),
        pytest.param(redis.ResponseError("WRONGTYPE Operation against a key"), False, id="wrongtype"),
        pytest.param(redis.ResponseError("ERR Error running script: attempt to index nil"), False, id="bug"),
        pytest.param(redis.DataError("Invalid input"), False, id="data_error"),
    ],
)
def test_given_redis_error_when_classified_then_only_blips_are_transient(
    error: redis.RedisError, transient: bool
) -> None:
    assert is_transient(error) is transient


def test_given_wrapped_method_when_redis_blips_then_it_raises_index_unavailable_with_the_cause() -> None:
    cause = redis.ConnectionError("Connection reset by peer")

    @translating
    def call() -> None:
        raise cause

    with pytest.raises(IndexUnavailable) as raised:
        call()
    assert raised.value.__cause__ is cause


def test_given_wrapped_method_when_redis_reports_a_bug_then_the_error_is_left_as_it_is() -> None:
    @translating
    def call() -> None:
        raise redis.ResponseError("WRONGTYPE Operation against a key")

    with pytest.raises(redis.ResponseError):
        call()
