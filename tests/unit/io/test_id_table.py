"""IdTable.lookup: dense indices of user ids, against a dict, on dense and sparse id sets; sorted_unique and
has_duplicates (the id checks of every loader) against np.unique."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from support.examples import examples

from deteval.types import IdTable, has_duplicates, sorted_unique

_EDGE = [np.iinfo(np.int64).min, np.iinfo(np.int64).min + 1, -1, 0, 1, np.iinfo(np.int64).max - 1,
         np.iinfo(np.int64).max]  # fmt: skip


@settings(max_examples=examples(300), deadline=None)
@given(
    ids=st.sets(st.integers(-50, 300) | st.sampled_from(_EDGE), min_size=1, max_size=40),
    extra=st.lists(st.integers(-60, 310) | st.sampled_from(_EDGE), max_size=60),
    dtype=st.sampled_from([np.int64, np.int32]),
)
def test_lookup_matches_a_dict(ids, extra, dtype):
    table = IdTable(np.array(sorted(ids), np.int64))
    index = {v: i for i, v in enumerate(sorted(ids))}
    values = np.array([*sorted(ids), *extra], np.int64)
    if dtype == np.int32:
        values = values[(values >= np.iinfo(np.int32).min) & (values <= np.iinfo(np.int32).max)].astype(np.int32)
    pos, found = table.lookup(values)
    assert pos.dtype == np.int32 and found.dtype == bool
    assert found.tolist() == [int(v) in index for v in values]
    assert pos[found].tolist() == [index[int(v)] for v in values[found]]  # the others: no index


def test_lookup_of_dense_ids_with_many_queries_uses_the_whole_range():
    ids = np.array([3, 5, 6, 9], np.int64)  # dense enough for the id -> index table
    values = np.array([2, 3, 4, 5, 9, 10, -(2**63), 2**63 - 1, 6], np.int64)
    pos, found = IdTable(ids).lookup(values)
    assert found.tolist() == [False, True, False, True, True, False, False, False, True]
    assert pos[found].tolist() == [0, 1, 3, 2]


@settings(max_examples=examples(300), deadline=None)
@given(
    base=st.sampled_from(["min", "zero", "max"]),
    offsets=st.lists(st.integers(0, 400), min_size=0, max_size=120),
    dtype=st.sampled_from([np.int64, np.int32, np.int8, np.uint8, np.uint64]),
    order=st.randoms(use_true_random=False),
)
def test_sorted_unique_is_np_unique(base, offsets, dtype, order):
    """Dense ranges (the mark array's path, any order, at the dtype's ends) and sparse ones (the sort's)."""
    info = np.iinfo(dtype)
    span = max(offsets, default=0)
    lo = int(info.min) if base == "min" else (0 if base == "zero" else int(info.max) - span)
    values = [lo + o for o in offsets if int(info.min) <= lo + o <= int(info.max)]
    order.shuffle(values)
    arr = np.array(values, dtype=dtype)
    want = np.unique(arr)
    got = sorted_unique(arr)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
    assert has_duplicates(arr) == (len(want) != len(arr))


def test_sorted_unique_of_other_kinds():
    for values in (np.array([3.0, 1.0, 3.0, -0.0]), np.array(["b", "a", "b"]), np.zeros(0, np.int64), np.array([7])):
        assert np.unique(values).tolist() == sorted_unique(values).tolist()


_I64 = np.iinfo(np.int64)
_WIDE = [0, 1, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 1]  # the ends of int64 and uint64


def _as_array(values: list) -> np.ndarray:
    """int64 where every value fits, else uint64 (ids past 2**63, as the readers store them)."""
    return np.array(values, np.int64 if all(_I64.min <= v <= _I64.max for v in values) else np.uint64)


@settings(max_examples=examples(300), deadline=None)
@given(
    ids=st.sets(st.integers(0, 2**64 - 1) | st.sampled_from(_WIDE), min_size=1, max_size=30),
    extra=st.lists(st.integers(-(2**63), 2**64 - 1) | st.sampled_from([*_WIDE, -1, _I64.min]), max_size=40),
)
def test_lookup_of_int64_beside_uint64_matches_a_dict(ids, extra):
    """Ids past 2**63 in one column only: int64 queries among uint64 ids and the reverse compare as the integers
    they are (no wrap-around: -1 is not 2**64-1, 2**64-1 not -1)."""
    table = IdTable(_as_array(sorted(ids)))
    index = {v: i for i, v in enumerate(sorted(ids))}
    for part in ([v for v in extra if v >= 0], [v for v in extra if v < 2**63], [*ids, *extra]):
        try:
            values = _as_array(part)
        except OverflowError:  # negative beside past 2**63: no 64-bit column
            continue
        pos, found = table.lookup(values)
        assert found.tolist() == [v in index for v in part]
        assert pos[found].tolist() == [index[v] for v in part if v in index]
