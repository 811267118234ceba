"""The score sort every ranking uses: stable, descending, the same order as a stable comparison sort."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from deteval.matching.sorting import (
    radix_sort_by_score_desc,
    sort_by_score_desc,
    sort_slices_by_score_desc,
)
from deteval.tuning import TUNING

_RADIX_MIN = TUNING.radix_min  # the default: the strategies below straddle it

# ties, both zeros, infinities, negatives and subnormals: every way the bit mapping could go wrong
_POOL = [0.0, -0.0, 1.0, 0.5, 0.123, 0.1230000001, -0.5, -2.0, np.inf, -np.inf, 5e-324, -5e-324, 1e300, 0.999]


@st.composite
def _case(draw):
    n_score = draw(st.integers(1, 5 * _RADIX_MIN))
    picked = draw(st.lists(st.sampled_from(range(len(_POOL))), min_size=1, unique=True))  # 0.0 == -0.0: by index
    pool = [_POOL[i] for i in picked]
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    score = rng.choice(np.array(pool), n_score)
    n = draw(st.integers(0, n_score))
    rows = rng.permutation(n_score)[:n].astype(np.int64)
    return rows, score


@given(_case())
def test_sort_by_score_desc_is_a_stable_descending_sort(case):
    rows, score = case
    expected = rows[np.argsort(-score[rows], kind="stable")]  # -0.0 and 0.0 compare equal: they tie
    merged = rows.copy()
    sort_by_score_desc(merged, score)
    assert np.array_equal(merged, expected)
    # the radix sort for slices of TUNING.radix_min rows or more, the merge sort for shorter ones
    half = len(rows) // 2
    sliced = rows.copy()
    sort_slices_by_score_desc(sliced, np.array([0, half, len(rows)], np.int64), score)
    for part, lo, hi in ((sliced[:half], 0, half), (sliced[half:], half, len(rows))):
        assert np.array_equal(part, rows[lo:hi][np.argsort(-score[rows[lo:hi]], kind="stable")])


def test_a_category_sized_slice_with_many_ties():
    rng = np.random.default_rng(0)
    score = np.round(rng.random(20000), 3)  # scores rounded as detectors write them: many ties
    rows = rng.permutation(20000)[:6000].astype(np.int64)
    got = rows.copy()
    assert radix_sort_by_score_desc(got, score)
    assert np.array_equal(got, rows[np.argsort(-score[rows], kind="stable")])


def test_a_nan_score_leaves_the_radix_sort_to_the_comparison_sort():
    score = np.arange(2 * _RADIX_MIN, dtype=np.float64)
    score[7] = np.nan
    rows = np.arange(2 * _RADIX_MIN, dtype=np.int64)
    untouched = rows.copy()
    assert not radix_sort_by_score_desc(untouched, score)
    assert np.array_equal(untouched, rows)
    sort_by_score_desc(rows, score)  # the merge sort's order, whatever NaN does to it: still a permutation
    assert np.array_equal(np.sort(rows), np.arange(2 * _RADIX_MIN))


def test_accumulate_ranks_large_inputs_by_radix_with_the_same_arrays(bench_preset, monkeypatch):
    """coco-sparse (130k detections) crosses accumulate's radix threshold: the same precision, recall, scores."""
    import deteval

    d = bench_preset("coco-sparse")
    dets, gt = deteval.io.coco.load_coco_pair(d / "dets.json", d / "gt.json")
    assert len(dets) >= TUNING.radix_rows
    radix = deteval.evaluate(dets, gt).arrays
    monkeypatch.setattr(TUNING, "radix_rows", 1 << 62)
    merged = deteval.evaluate(dets, gt).arrays
    for key in ("precision", "recall", "scores"):
        assert np.array_equal(radix[key], merged[key]), key


def test_grouping_in_one_pass_or_two_gives_the_same_groups(monkeypatch):
    """Few rows over many (image, category) pairs take two counting sorts; the groups are the same."""
    import dataclasses

    from deteval.matching import groups as grp

    rng = np.random.default_rng(5)

    class Rows:
        def __init__(self, n, n_img, n_cat, score=None):
            self.image = rng.integers(0, n_img, n).astype(np.int32)
            self.category = rng.integers(0, n_cat, n).astype(np.int32)
            self.images, self.categories = range(n_img), range(n_cat)
            if score is not None:
                self.score = np.round(rng.random(n), 1)  # ties

        def __len__(self):
            return len(self.image)

    for n_img, n_cat in ((7, 3), (300, 80)):
        gt, dt = Rows(400, n_img, n_cat), Rows(900, n_img, n_cat, score=True)
        for use_cats in (True, False):
            monkeypatch.setattr(TUNING, "one_pass_bins_per_row", 1 << 20)
            one = grp.group_by_image_category(gt, dt, use_cats=use_cats, max_det=5)
            monkeypatch.setattr(TUNING, "one_pass_bins_per_row", 0)
            two = grp.group_by_image_category(gt, dt, use_cats=use_cats, max_det=5)
            for f in dataclasses.fields(one):
                assert np.array_equal(getattr(one, f.name), getattr(two, f.name)), (n_img, use_cats, f.name)


@given(st.integers(0, 300), st.integers(1, 40), st.integers(0, 2**32 - 1))
def test_counting_sort_and_the_group_order_check_are_the_same_by_numpy_and_by_kernel(n, n_bins, seed):
    from deteval.accumulation.accumulate import _in_group_order, _rows_in_group_order
    from deteval.matching.sorting import counting_sort, counting_sort_kernel

    rng = np.random.default_rng(seed)
    keys = rng.integers(0, n_bins, n).astype(np.int64)
    order = rng.permutation(n).astype(np.int64)[: rng.integers(0, n + 1)]
    by_numpy = counting_sort(keys, order, n_bins)  # small: numpy's stable argsort
    assert by_numpy.dtype == np.int64 and np.array_equal(by_numpy, counting_sort_kernel(keys, order, False, n_bins))
    every = counting_sort(keys, None, n_bins)  # every row, in order
    assert every.dtype == np.int64 and np.array_equal(every, counting_sort(keys, np.arange(n), n_bins))
    assert np.array_equal(every, counting_sort_kernel(keys, np.empty(0, np.int64), True, n_bins))
    # rows in (category, image, rank) order, or one pair swapped
    cat, img, rank = (np.sort(rng.integers(0, 3, n)) for _ in range(3))
    rows = np.lexsort((rank, img, cat))
    cat, img, rank = cat[rows], img[rows], rank[rows]
    if n > 1 and rng.integers(0, 2):
        i = rng.integers(0, n - 1)
        for a in (cat, img, rank):
            a[[i, i + 1]] = a[[i + 1, i]]
    if n:
        assert _rows_in_group_order(cat, img, rank) == bool(_in_group_order(cat, img, rank))


@given(st.integers(0, 2**32 - 1), st.integers(1, 5), st.sampled_from([None, 1, 3]))
def test_grouping_walked_in_parts_on_threads_gives_the_same_groups(seed, threads, max_det):
    """The walk split among threads (parts begin at a key; empty parts; groups with ground truth only)."""
    import dataclasses

    from deteval.jit import using_threads
    from deteval.matching import groups as grp

    rng = np.random.default_rng(seed)

    class Rows:
        def __init__(self, n, n_img, n_cat, score=False):
            self.image = rng.integers(0, n_img, n).astype(np.int32)
            self.category = rng.integers(0, n_cat, n).astype(np.int32)
            self.images, self.categories = range(n_img), range(n_cat)
            self.score = np.round(rng.random(n), 1) if score else None  # ties

        def __len__(self):
            return len(self.image)

    n_img, n_cat = int(rng.integers(1, 6)), int(rng.integers(1, 4))
    gt, dt = Rows(int(rng.integers(0, 30)), n_img, n_cat), Rows(int(rng.integers(0, 60)), n_img, n_cat, True)
    saved = TUNING.csr_rows_per_part  # hypothesis runs many examples per test: no monkeypatch
    try:
        for use_cats in (True, False):
            TUNING.csr_rows_per_part = 1 << 62
            one = grp.group_by_image_category(gt, dt, use_cats=use_cats, max_det=max_det)
            TUNING.csr_rows_per_part = 1
            with using_threads(threads):
                parts = grp.group_by_image_category(gt, dt, use_cats=use_cats, max_det=max_det)
            for f in dataclasses.fields(one):
                assert np.array_equal(getattr(one, f.name), getattr(parts, f.name)), (use_cats, f.name)
    finally:
        TUNING.csr_rows_per_part = saved


def test_the_radix_threshold_is_read_at_call_time_and_changes_no_order(monkeypatch):
    rng = np.random.default_rng(1)
    score = np.round(rng.random(3000), 2)
    rows = rng.permutation(3000).astype(np.int64)
    offsets = np.array([0, 10, 700, 3000], np.int64)
    expected = rows.copy()
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        expected[lo:hi] = rows[lo:hi][np.argsort(-score[rows[lo:hi]], kind="stable")]
    for radix_min in (0, 1 << 40):  # every slice by the radix sort, then none
        monkeypatch.setattr(TUNING, "radix_min", radix_min)
        got = rows.copy()
        sort_slices_by_score_desc(got, offsets, score)
        assert np.array_equal(got, expected), radix_min
