"""Time-ordered ids."""

from __future__ import annotations

from hookline.domain.ids import derived_id, is_valid_id, new_id


def test_given_ids_from_later_milliseconds_when_sorted_then_in_time_order() -> None:
    ids = [new_id(t) for t in (1_000, 1_001, 2_000, 1_700_000_000_000)]
    assert sorted(ids) == ids
    assert all(is_valid_id(i) for i in ids)


def test_given_same_millisecond_when_new_ids_made_then_distinct() -> None:
    assert len({new_id(5) for _ in range(1000)}) == 1000


def test_given_same_seed_and_time_when_derived_then_same_id_and_other_seed_differs() -> None:
    assert derived_id(10, "s1:10") == derived_id(10, "s1:10")
    assert derived_id(10, "s1:10") != derived_id(10, "s2:10")
    assert derived_id(10, "s") < derived_id(11, "s")
