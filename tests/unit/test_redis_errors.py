"""Which Redis errors the adapters turn into IndexUnavailable: blips yes, bugs and bad data no."""

from __future__ import annotations

import pytest
import redis
from redis.exceptions import (
    ClusterDownError,
    ClusterError,
    MasterDownError,
    OutOfMemoryError,
    RedisClusterException,
    SlotNotCoveredError,
    TryAgainError,
)

from hookline.adapters.redis.errors import is_out_of_memory, is_transient, translating
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
        # redis-py strips the code from these cluster replies and raises a class of its own instead.
        pytest.param(ClusterDownError("The cluster is down"), True, id="clusterdown"),
        pytest.param(MasterDownError("Link with MASTER is down"), True, id="masterdown_class"),
        pytest.param(TryAgainError("Multiple keys request during rehashing of slot"), True, id="tryagain"),
        pytest.param(ClusterError("TTL exhausted."), True, id="redirections_exhausted"),
        # At maxmemory with nothing to evict, Redis refuses writes until memory frees: wait it out.
        pytest.param(
            OutOfMemoryError("command not allowed when used memory > 'maxmemory'."), True, id="out_of_memory"
        ),
        pytest.param(
            redis.ResponseError(
                "Error running script (call to f_1): @user_script:9: -OOM command not allowed"
            ),
            True,
            id="out_of_memory_inside_a_script",
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


@pytest.mark.parametrize(
    ("error", "out_of_memory"),
    [
        pytest.param(OutOfMemoryError("command not allowed when used memory > 'maxmemory'."), 1, id="oom"),
        pytest.param(redis.ConnectionError("Connection reset by peer"), 0, id="other_blip"),
    ],
)
def test_given_wrapped_method_when_redis_refuses_for_want_of_memory_then_told_and_index_unavailable(
    error: redis.RedisError, out_of_memory: int
) -> None:
    told: list[object] = []

    def call(role: object) -> None:
        raise error

    wrapped = translating(call, told.append)
    role = object()

    with pytest.raises(IndexUnavailable) as raised:
        wrapped(role)
    assert raised.value.__cause__ is error
    assert told == [role] * out_of_memory
    assert is_out_of_memory(error) is bool(out_of_memory)


def test_given_wrapped_method_when_redis_reports_a_bug_then_the_error_is_left_as_it_is() -> None:
    @translating
    def call() -> None:
        raise redis.ResponseError("WRONGTYPE Operation against a key")

    with pytest.raises(redis.ResponseError):
        call()


@pytest.mark.parametrize(
    ("error", "translated"),
    [
        pytest.param(
            RedisClusterException(
                "Redis Cluster cannot be connected. Please provide at least one reachable node"
            ),
            True,
            id="no_node_reachable",
        ),
        pytest.param(
            RedisClusterException("All slots are not covered after query all startup_nodes. 1 of 16384"),
            True,
            id="slots_not_covered_while_mapping",
        ),
        pytest.param(
            SlotNotCoveredError('Slot "42" is not covered by the cluster.'), True, id="slot_not_covered"
        ),
        pytest.param(
            RedisClusterException("BLPOP - all keys must map to the same key slot"),
            False,
            id="cross_slot_bug",
        ),
        pytest.param(
            RedisClusterException("Cluster mode is not enabled on this node"), False, id="not_a_cluster"
        ),
    ],
)
def test_given_cluster_client_error_when_wrapped_then_only_an_unreachable_cluster_is_index_unavailable(
    error: RedisClusterException, translated: bool
) -> None:
    """The cluster client raises these outside RedisError: an outage must still read as a blip, a bug not."""

    @translating
    def call() -> None:
        raise error

    expected: type[Exception] = IndexUnavailable if translated else RedisClusterException
    with pytest.raises(expected) as raised:
        call()
    if translated:
        assert raised.value.__cause__ is error
        assert "127.0.0.1" not in str(raised.value)
