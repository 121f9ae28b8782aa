"""How the API answers an error raised past validation: the ports' errors, not a client library's, decide."""

from __future__ import annotations

import pytest
import redis
from botocore.exceptions import ClientError

from hookline.adapters.dynamo import errors as dynamo_errors
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


def _client_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "x"}}, "PutItem")


@pytest.mark.parametrize("code", sorted(dynamo_errors.TRANSIENT_ERROR_CODES))
def test_given_a_dynamodb_error_the_adapter_calls_transient_when_answered_then_503(code: str) -> None:
    response = failure_response(_client_error(code))

    assert response.status_code == 503
    assert '"code": "dependency_unavailable"' in str(response.body)


def test_given_the_adapter_list_changed_when_answered_then_the_api_follows_it_not_a_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One list decides what is transient: a code added to the adapter's list is a 503 at once, and a code
    # dropped from it a 500, with nothing in the API to keep in step.
    monkeypatch.setattr(dynamo_errors, "TRANSIENT_ERROR_CODES", frozenset({"SomeNewBusyException"}))

    assert failure_response(_client_error("SomeNewBusyException")).status_code == 503
    assert failure_response(_client_error("ThrottlingException")).status_code == 500


def test_given_a_dynamodb_validation_error_when_answered_then_500_not_a_retry_hint() -> None:
    response = failure_response(_client_error("ValidationException"))

    assert response.status_code == 500
    assert '"code": "internal_error"' in str(response.body)
