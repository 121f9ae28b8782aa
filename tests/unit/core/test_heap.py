"""The start-up heap frozen out of the collector's sight (plumbing/heap.py), its garbage collected first."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from hookline.plumbing.heap import freeze_start_up_heap


class Node:
    """An object that can sit in a reference cycle."""

    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def unfrozen_afterwards() -> Iterator[None]:
    yield
    gc.unfreeze()  # the rest of the test session keeps its usual collections


def test_given_objects_alive_and_a_dropped_cycle_when_frozen_then_the_alive_are_permanent_and_the_cycle_gone(
    unfrozen_afterwards: None,
) -> None:
    kept = Node()
    first, second = Node(), Node()
    first.other, second.other = second, first  # a cycle only the collector frees
    dropped = weakref.ref(first)
    del first, second

    frozen = freeze_start_up_heap()

    assert dropped() is None  # collected before the freeze, not kept forever in the permanent generation
    # Only a freeze adds to the permanent generation; another thread of the session (a test proxy's handler
    # ending) may free frozen objects meanwhile, so the count read now can only be lower.
    assert 0 < gc.get_freeze_count() <= frozen
    assert not any(obj is kept for obj in gc.get_objects())  # a collection no longer looks at it
