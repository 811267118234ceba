"""The accumulation kernel compiled with numba's bounds checks, at the edges of its shapes: no area ranges
(pycocotools' ``areaRng=[]``, which the pycocotools shim passes on), one or several thresholds, rows in
match order or not. Compiled as shipped, an index past an array's end reads (or writes) whatever lies there
and nothing says so: before the fix, the kernel read a state column that did not exist, whose garbage could
raise a spurious "more true positives than positives"."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from deteval.accumulation import accumulate as acc


@cache
def _checked_kernel():
    numba = pytest.importorskip("numba")
    kernel = acc._accumulate_kernel
    return numba.njit(boundscheck=True, nogil=True)(getattr(kernel, "py_func", kernel))


def _rows(rng, n: int, n_cat: int, n_area: int, n_thr: int, in_order: bool) -> tuple:
    category = np.sort(rng.integers(0, n_cat, n)).astype(np.int32)
    image = np.zeros(n, np.int32)
    for k in range(n_cat):  # images ascending within each category, as match gives them
        rows = np.flatnonzero(category == k)
        image[rows] = np.sort(rng.integers(0, 5, len(rows)))
    rank = np.zeros(n, np.int32)
    for i in range(1, n):
        same = category[i] == category[i - 1] and image[i] == image[i - 1]
        rank[i] = rank[i - 1] + 1 if same else 0
    state = rng.choice(np.array([0, 1, 2], np.int8), (n, n_area, n_thr))
    npig = np.array([[max(1, (category == k).sum())] * n_area for k in range(n_cat)], np.int64).reshape(n_cat, n_area)
    score = rng.choice(np.array([0.9, 0.5, 0.25]), n)  # ties across images
    if not in_order:
        p = rng.permutation(n)
        category, image, rank, score, state = category[p], image[p], rank[p], score[p], state[p]
    return category, image, rank, score, state, npig


@pytest.mark.parametrize("in_order", [True, False], ids=["match-order", "shuffled"])
@pytest.mark.parametrize("n_thr", [1, 3])
@pytest.mark.parametrize("n_area", [0, 1, 4])
def test_accumulate_stays_inside_its_arrays(n_area, n_thr, in_order, monkeypatch):
    rows = _rows(np.random.default_rng(100 * n_area + 10 * n_thr + in_order), 80, 4, n_area, n_thr, in_order)
    max_dets, rec_thrs = np.array([1, 3, 100]), np.linspace(0, 1, 101)
    want = acc.accumulate(*rows, max_dets, rec_thrs)
    monkeypatch.setattr(acc, "_accumulate_kernel", _checked_kernel())
    got = acc.accumulate(*rows, max_dets, rec_thrs)  # raises IndexError on any index out of bounds
    assert got[0].shape == (n_thr, 101, 4, n_area, 3)
    for a, b in zip(want, got):
        assert np.array_equal(a, b)
