"""adapters/dynamo/paging.py over in-memory buckets that answer as DynamoDB queries do.

merge_newest_first must give every item once, greatest first, page after page, whatever the spread over
the buckets, the filter, the batch and the read budget (a budget-cut page goes on from where it stopped,
never skipping an item nor repeating one). scan_partitions must read every partition to its end, each one
advancing on every call.
"""

from __future__ import annotations

import random

import pytest

from hookline.adapters.dynamo.paging import BucketFetch, BucketPage, merge_newest_first, scan_partitions


def bucket_fetch(buckets: list[list[str]], keep: set[str] | None) -> BucketFetch[str]:
    """Returns a fetch over buckets of ids (each sorted newest first), filtering by keep after the read.

    As DynamoDB: a page that reached its limit gives its last evaluated position even when nothing follows.
    """

    def fetch(bucket: int, after: str | None, limit: int) -> BucketPage[str]:
        ids = [i for i in buckets[bucket] if after is None or i < after]
        taken = ids[:limit]
        last = taken[-1] if len(taken) == limit else None
        return BucketPage([i for i in taken if keep is None or i in keep], last, len(taken))

    return fetch


def list_all(
    buckets: list[list[str]], keep: set[str] | None, limit: int, batch: int | None, max_read: int
) -> tuple[list[str], int]:
    fetch = bucket_fetch(buckets, keep)
    found: list[str] = []
    after: str | None = None
    for calls in range(1, 10_000):
        page, after = merge_newest_first(len(buckets), fetch, lambda i: i, after, limit, batch, max_read)
        assert len(page) <= limit
        found += page
        if after is None:
            return found, calls
    raise AssertionError("the listing did not end")


@pytest.mark.parametrize("seed", range(40))
def test_given_any_spread_filter_batch_and_budget_when_paged_then_every_item_once_greatest_first(
    seed: int,
) -> None:
    rng = random.Random(seed)
    count = rng.randint(0, 120)
    ids = [f"{n:05d}" for n in rng.sample(range(100_000), count)]
    bucket_count = rng.choice([1, 2, 3, 8])
    skew = rng.random() < 0.3  # sometimes every item in one bucket
    buckets: list[list[str]] = [[] for _ in range(bucket_count)]
    for i in ids:
        buckets[0 if skew else rng.randrange(bucket_count)].append(i)
    for bucket in buckets:
        bucket.sort(reverse=True)
    keep = None if rng.random() < 0.5 else {i for i in ids if rng.random() < 0.2}
    batch = None if keep is None else rng.choice([1, 2, 5, 25])
    max_read = rng.choice([1, 3, 10, 1_000])

    found, _ = list_all(buckets, keep, rng.randint(1, 12), batch, max_read)

    assert found == sorted((i for i in ids if keep is None or i in keep), reverse=True)


def test_given_a_budget_smaller_than_one_round_then_each_call_still_moves_on() -> None:
    buckets = [[f"{n:03d}" for n in range(b, 64, 8)][::-1] for b in range(8)]

    found, calls = list_all(buckets, set(), 5, 1, 1)  # nothing matches: only positions move

    assert found == []
    assert calls <= 64 + 1


def test_given_partitions_when_scanned_then_each_read_to_its_end_and_all_advance_each_call() -> None:
    rows = {"a": list(range(5)), "b": list(range(2)), "c": []}

    def fetch(partition: str, start: object, limit: int) -> tuple[list[tuple[str, int]], object]:
        begin = 0 if start is None else int(str(start)) + 1
        page = rows[partition][begin : begin + limit]
        more = begin + limit < len(rows[partition])
        return [(partition, n) for n in page], (begin + len(page) - 1) if more else None

    first, cursor = scan_partitions(list(rows), fetch, None, 3)  # 3 // 3 partitions: one item each
    found = list(first)
    while cursor is not None:
        page, cursor = scan_partitions(list(rows), fetch, cursor, 3)
        found += page

    assert first == [("a", 0), ("b", 0)]
    assert sorted(found) == sorted((p, n) for p, ns in rows.items() for n in ns)
