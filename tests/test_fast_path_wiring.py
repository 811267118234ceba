"""The loaders' fast paths (large files) give the containers the general path gives, field for field."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import COCO_PAIRS

from deteval.io import coco as coco_io


def _same(a, b) -> None:
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x.view(np.uint8), y.view(np.uint8)), f.name
        elif isinstance(x, coco_io.IdTable):
            assert np.array_equal(x.ids, y.ids) and x.names == y.names, f.name
            for attr in ("height", "width"):
                assert np.array_equal(getattr(x, attr), getattr(y, attr)), f"{f.name}.{attr}"


@pytest.mark.parametrize("name", sorted(COCO_PAIRS))
def test_fast_path_equals_general_path(name, monkeypatch, tmp_path):
    pair = COCO_PAIRS[name]
    general_gt = coco_io.load_coco_gt(pair.gt_path)
    dt_path = pair.preds_list_path(tmp_path)  # the fast path reads plain lists only
    general_dt = coco_io.load_coco_results(dt_path, general_gt)
    monkeypatch.setattr(coco_io, "FAST_PATH_BYTES", 0)
    taken = []
    for fn in ("_gt_fast", "_results_fast"):
        orig = getattr(coco_io, fn)
        def spy(*a, _o=orig, _n=fn):
            out = _o(*a)
            taken.append((_n, out is not None))
            return out

        monkeypatch.setattr(coco_io, fn, spy)
    fast_gt = coco_io.load_coco_gt(pair.gt_path)
    fast_dt = coco_io.load_coco_results(dt_path, fast_gt)
    # box-only results go the fast way; results carrying masks or keypoints are the general path's
    plain = not any("segmentation" in r or "keypoints" in r for r in pair.load_preds())
    assert taken == [("_gt_fast", True), ("_results_fast", plain)]
    _same(fast_gt, general_gt)
    _same(fast_dt, general_dt)
