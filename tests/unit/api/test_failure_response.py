"""How the API answers an error raised past validation: the ports' errors, not a client library's, decide."""

from __future__ import annotations

import pytest
import redis

from hookline.api.errors import failure_response
from hookline.domain.errors import IndexUnavailable


def test_given_the_index_port_unavailable_when_answered_then_503_dependency_down() -> None:
    response = failure_response(IndexUnavailable("redis is unavailable; retry later"))

    assert response.status_code == 503
    assert '"code": "dependency_unavailable"' in str(response.body)


@pytest.mark.parametrize(
    "error",
    [
        redis.ResponseError("WRONGTYPE Operation against a key holding the wrong kind of value"),
        redis.DataError("x"),
    ],
    ids=["wrong-type", "data-error"],
)
def test_given_a_redis_error_the_adapter_did_not_translate_when_answered_then_500_not_a_retry_hint(
    error: redis.RedisError,
) -> None:
    # The adapters turn every transient Redis failure into IndexUnavailable; what reaches the API as the
    # client's own error is a bug or bad data, which "retry later" would hide.
    response = failure_response(error)

    assert response.status_code == 500
    assert '"code": "internal_error"' in str(response.body)
