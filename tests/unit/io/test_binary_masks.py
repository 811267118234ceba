"""Binary masks to runs (``deteval.rle.masks_from_binary``, the batch API's encoder) against
``pycocotools.mask.encode``: runs, areas and extents equal, for any shape (empty ones too), dtype and
memory layout.

pycocotools is asked only for masks far below 2**24 pixels a run: its string encoder writes a byte past
its buffer when every run takes six characters (see test_mask_extents.py); the one test of such runs
checks them by arithmetic.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pycocotools import mask as mask_utils

from deteval import Evaluator, InputError
from deteval.io.masks import decode_rle_strings
from deteval.rle import concat_masks, masks_from_binary


@st.composite
def _binary(draw):
    n, h, w = draw(st.integers(0, 4)), draw(st.integers(0, 12)), draw(st.integers(0, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["noise", "boxes", "full", "empty"]))
    if kind == "noise":
        m = rng.random((n, h, w)) < draw(st.sampled_from([0.05, 0.5, 0.95]))
    else:
        m = np.full((n, h, w), kind == "full")
        if kind == "boxes":
            for i in range(n):
                y0, y1 = sorted(rng.integers(0, h + 1, 2))
                x0, x1 = sorted(rng.integers(0, w + 1, 2))
                m[i, y0:y1, x0:x1] = True
    dtype = draw(st.sampled_from([bool, np.uint8, np.int32, np.float64]))
    arr = m.astype(dtype)
    if dtype is np.float64:  # nonzero is inside, whatever its value
        arr *= rng.choice([-0.5, 3.0, np.nan], (n, h, w))
    layout = draw(st.sampled_from(["C", "F", "strided", "read-only"]))
    if layout == "F":
        arr = np.asfortranarray(arr)
    elif layout == "strided":  # a view every other column of a wider array
        wide = np.zeros((n, h, 2 * w), arr.dtype)
        wide[:, :, ::2] = arr
        arr = wide[:, :, ::2]
    elif layout == "read-only":
        arr.flags.writeable = False
    return arr


def _pycocotools(arr: np.ndarray):
    """(runs, runs per mask, areas, boxes) of pycocotools' encoding of ``arr`` (n, h, w)."""
    enc = mask_utils.encode(np.asfortranarray((arr != 0).transpose(1, 2, 0).astype(np.uint8)))
    runs, n_runs = decode_rle_strings([e["counts"] for e in enc])
    return runs, n_runs, mask_utils.area(enc), mask_utils.toBbox(enc).reshape(-1, 4)


@given(_binary())
def test_runs_equal_pycocotools_encode(arr):
    before = arr.copy()
    m = masks_from_binary(arr)
    assert np.array_equal(arr, before, equal_nan=arr.dtype.kind == "f")  # the user's array untouched
    n, h, w = arr.shape
    assert m.counts.dtype == np.uint32 and len(m) == n
    assert (m.height == h).all() and (m.width == w).all()
    if n == 0:
        assert m.offsets.tolist() == [0] and len(m.counts) == 0
        return
    runs, n_runs, area, boxes = _pycocotools(arr)
    assert np.array_equal(m.counts, runs) and np.array_equal(np.diff(m.offsets), n_runs)
    assert np.array_equal(m.area, area)
    assert np.array_equal(m.extents(), boxes)


def test_runs_of_2_24_pixels_and_more():
    """Four runs of 2**24 pixels or more: the runs where pycocotools' string encoder overruns its buffer."""
    h, w = 4096, 16385
    m = np.zeros((h, w), bool, order="F")
    flat = m.reshape(-1, order="F")  # a view: pixels in column-major order
    flat[2**24 : 2**25] = True
    flat[3 * 2**24 :] = True
    got = masks_from_binary(m[None])
    assert got.counts.tolist() == [2**24, 2**24, 2**24, h * w - 3 * 2**24]
    assert got.area.tolist() == [float(h * w - 2**24 * 2)]


def test_concat_masks():
    rng = np.random.default_rng(1)
    parts = [rng.random((n, 7, 5)) < 0.3 for n in (2, 0, 3)]
    whole = masks_from_binary(np.concatenate(parts))
    joined = concat_masks([masks_from_binary(p) for p in parts])
    for field in ("counts", "offsets", "height", "width", "area"):
        assert np.array_equal(getattr(joined, field), getattr(whole, field)), field
    assert len(concat_masks([])) == 0 and concat_masks([]).offsets.tolist() == [0]


def test_refused():
    with pytest.raises(ValueError, match="shape"):
        masks_from_binary(np.zeros((4, 4), bool))
    huge = np.broadcast_to(np.zeros((1, 1, 1), bool), (1, 65536, 65536))  # no memory behind it
    with pytest.raises(ValueError, match="2\\*\\*32 - 1"):
        masks_from_binary(huge)
    assert len(masks_from_binary(huge[:0])) == 0  # no masks: nothing to hold
    ev = Evaluator(iou_type="segm")
    with pytest.raises(InputError, match=r"update 1, preds\[0\].*2\*\*32 - 1"):
        ev.update([{"masks": huge, "scores": np.ones(1), "labels": np.ones(1, int)}],
                  [{"masks": np.zeros((0, 4, 4), bool), "labels": np.zeros(0, int)}])  # fmt: skip
