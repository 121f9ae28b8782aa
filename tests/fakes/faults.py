"""Failure injection for the fakes: make the Nth call of a port method raise, before or after it acts.

Every public port method of a fake is wrapped by `port_call`, which counts its calls in the fake's `faults`
and raises a planned error. A fault `before` the call models a request that never reached the server (a
refused connection); a fault `after` models a reply lost on the way back (the server acted, the caller
cannot know). The Redis adapters turn every transient client error into the domain's IndexUnavailable, so
that is what a Redis fake raises; botocore's errors reach the use cases untranslated, so a DynamoDB fake
raises DynamoUnavailable, a generic exception standing for them.

DynamoDB transactions have a fault plan of their own (TransactionCancellations): a cancellation with a
reason code, which the job store fake reads exactly as adapters/dynamo/transactions.py reads DynamoDB's.
A lost reply that the DynamoDB client itself sends again (botocore's retries, the JSON client's) has one
too (LostReplies): the request is applied, and the caller gets the answer to its repeat, as
tests/support/dynamo_faults' proxy does on the wire for the real clients (its LosingReplies, this plan).
"""

from __future__ import annotations

import functools
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from hookline.domain.errors import IndexUnavailable


class DynamoUnavailable(Exception):
    """A DynamoDB call failed for a reason that is not a refused condition (throttling, a 5xx, a timeout)."""


class ConditionFailed(Exception):
    """A conditional write the real adapter does not turn into a domain error (botocore's ClientError)."""


class TransactionRejected(Exception):
    """A transaction cancelled for a reason that waiting does not heal (botocore's ClientError, re-raised)."""


class ScriptError(Exception):
    """A Lua script failed inside Redis (redis.ResponseError in the real adapter)."""


def redis_down() -> BaseException:
    """Returns what a Redis adapter raises for a lost connection, a timeout, a fail-over: IndexUnavailable."""
    return IndexUnavailable("redis is unavailable; retry later")


def dynamo_down() -> BaseException:
    """Returns the error a failing DynamoDB call raises in the fakes."""
    return DynamoUnavailable("fake DynamoDB: ProvisionedThroughputExceededException")


@dataclass
class Fault:
    """Calls on_call .. on_call + times - 1 of one method raise error(), before or after the call acts."""

    method: str
    on_call: int
    times: int
    error: Callable[[], BaseException]
    after: bool

    def applies(self, call: int) -> bool:
        """Tells whether the given (1-based) call of the method is one this fault breaks."""
        return self.on_call <= call < self.on_call + self.times


class Faults:
    """The calls a fake has seen and the faults planned for them; thread-safe."""

    def __init__(self, default_error: Callable[[], BaseException]) -> None:
        self._default_error = default_error
        self._lock = threading.Lock()
        self._calls: Counter[str] = Counter()
        self._planned: list[Fault] = []

    def fail(
        self,
        method: str,
        *,
        on_call: int = 1,
        times: int = 1,
        error: Callable[[], BaseException] | None = None,
        after: bool = False,
    ) -> None:
        """Makes calls on_call .. on_call + times - 1 of method (counted from the fake's creation) raise.

        on_call is counted from the fake's creation, so on_call=calls(method) + 1 breaks the next call.
        """
        self._planned.append(Fault(method, on_call, times, error or self._default_error, after))

    def fail_next(
        self,
        method: str,
        *,
        times: int = 1,
        error: Callable[[], BaseException] | None = None,
        after: bool = False,
    ) -> None:
        """Makes the next `times` calls of method raise."""
        self.fail(method, on_call=self.calls(method) + 1, times=times, error=error, after=after)

    def calls(self, method: str) -> int:
        """Returns how many times method was called (faulty calls included)."""
        with self._lock:
            return self._calls[method]

    def enter(self, method: str) -> Fault | None:
        """Counts one call of method; returns the fault that breaks it, if any."""
        with self._lock:
            call = self._calls[method] = self._calls[method] + 1
            if not self._planned:  # the common case (and the bench's): nothing to look for
                return None
            return next((f for f in self._planned if f.method == method and f.applies(call)), None)


class TransactionCancellations:
    """Cancels the next `remaining` transactions with `reason` at item `at` ("None" at the others).

    The plan tests/support/dynamo_faults' proxy also answers real clients with, on the wire: DynamoDB's
    CancellationReasons, one code per item in TransactItems order. Thread-safe.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reason = "None"
        self._at = -1
        self.remaining = 0
        self.cancelled = 0

    def plan(self, reason: str, count: int = 1, at: int = -1) -> None:
        """Cancels the next count transactions with reason at item index at (-1: the last item)."""
        with self._lock:
            self._reason, self._at, self.remaining = reason, at, count

    def take(self, items: int) -> list[str] | None:
        """Counts one transaction of `items` items; returns its cancellation reasons, None when it may go."""
        with self._lock:
            if self.remaining <= 0:
                return None
            self.remaining -= 1
            self.cancelled += 1
            reasons = ["None"] * items
            reasons[self._at] = self._reason
            return reasons


class LostReplies:
    """Loses the reply of the next `count` requests of a DynamoDB operation (put_item, update_item,
    transact_write_items): each is applied, then sent again, and its repeat answers; `between` runs between
    the two, as another writer's request that reaches the table first. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._planned: Counter[str] = Counter()
        self._between: dict[str, Callable[[], object]] = {}
        self.lost = 0

    def lose(self, operation: str, count: int = 1, between: Callable[[], object] | None = None) -> None:
        """Loses the reply of the next count requests of operation, running between() before each repeat."""
        with self._lock:
            self._planned[operation] = count
            self._between[operation] = between or (lambda: None)

    def take(self, operation: str) -> Callable[[], object] | None:
        """Counts one request of operation; returns what runs before its repeat if its reply is lost."""
        with self._lock:
            if self._planned[operation] <= 0:
                return None
            self._planned[operation] -= 1
            self.lost += 1
            return self._between[operation]


class HasFaults(Protocol):
    """A fake whose port calls can be broken."""

    @property
    def faults(self) -> Faults:
        """Returns the fake's fault plan."""
        ...


F = TypeVar("F", bound=HasFaults)
P = ParamSpec("P")
R = TypeVar("R")


def port_call(method: Callable[Concatenate[F, P], R]) -> Callable[Concatenate[F, P], R]:
    """Counts the calls of a fake's port method and raises the faults planned for them."""
    name = method.__name__

    @functools.wraps(method)
    def wrapper(self: F, /, *args: P.args, **kwargs: P.kwargs) -> R:
        fault = self.faults.enter(name)
        if fault is not None and not fault.after:
            raise fault.error()
        result = method(self, *args, **kwargs)
        if fault is not None:
            raise fault.error()
        return result

    return wrapper
