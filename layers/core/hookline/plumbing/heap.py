"""The interpreter's heap after a cold start: what the cyclic garbage collector need not look at again.

A function's imports and wiring (boto3 and botocore's service models, pydantic, Powertools, the container)
leave a heap of objects that live as long as the process. CPython's collector scans every tracked object
on each full (oldest-generation) collection, which runs whenever the long-lived objects grew by a quarter:
in a warm executor, a pause taken in whichever delivery thread allocated at that moment (its length is on
docs/performance.md). gc.freeze() moves the objects alive now to a permanent generation that
collections skip (the CPython documentation suggests it for heaps built once at start-up); they are
still freed by reference counting, and a cycle among them would be kept, which for module-level objects
is the case anyway. Objects made later are collected as before.
"""

from __future__ import annotations

import gc


def freeze_start_up_heap() -> int:
    """Collects what the start-up left as garbage, then freezes everything still alive; returns how many
    objects the permanent generation holds."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
