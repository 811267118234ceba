"""The loaders' fast paths (large files) give the containers the general path gives, field for field."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest
from conftest import COCO_PAIRS

from deteval.io import coco as coco_io
from deteval.io.scan import pieces
from deteval.rle import Masks
from deteval.tuning import TUNING


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
    monkeypatch.setattr(TUNING, "fast_path_bytes", 1 << 62)  # the general path, whatever the kernel cache holds
    general_gt = coco_io.load_coco_gt(pair.gt_path)
    dt_path = pair.preds_list_path(tmp_path)  # the fast path reads plain lists only
    general_dt = coco_io.load_coco_results(dt_path, general_gt)
    monkeypatch.setattr(TUNING, "fast_path_bytes", 0)
    taken = []
    for fn in ("gt_from_scan", "results_from_scan"):
        orig = getattr(coco_io, fn)

        def spy(*a, _o=orig, _n=fn):
            out = _o(*a)
            taken.append((_n, out is not None))
            return out

        monkeypatch.setattr(coco_io, fn, spy)
    fast_gt = coco_io.load_coco_gt(pair.gt_path)
    fast_dt = coco_io.load_coco_results(dt_path, fast_gt)
    # results with a box each go the fast way (box evaluation skips their masks and keypoints)
    boxed = all(r.get("bbox") for r in pair.load_preds())
    assert taken == [("gt_from_scan", True), ("results_from_scan", boxed)]
    _same(fast_gt, general_gt)
    _same(fast_dt, general_dt)


def _same_extra(a, b) -> None:
    """The geometry besides boxes (masks, mask areas, keypoints) equal, byte for byte."""
    for k in ("masks", "mask_area", "keypoints"):
        x, y = getattr(a, k), getattr(b, k)
        assert (x is None) == (y is None), k
        if x is None:
            continue
        fields = [f.name for f in dataclasses.fields(Masks)] if k == "masks" else [None]  # runs: decoded text too
        for f in fields:
            u, v = (x, y) if f is None else (getattr(x, f), getattr(y, f))
            assert u.dtype == v.dtype and np.array_equal(u.view(np.uint8), v.view(np.uint8)), (k, f)


# the data pairs' oddities warn (box results under segm, polygons on zero-height images); compared here: the loaders
@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")
@pytest.mark.parametrize("name", sorted(COCO_PAIRS))
def test_fast_path_equals_general_path_segm(name, monkeypatch, tmp_path):
    """Mask evaluation: results with compressed RLE masks go the fast way, the others the general one."""
    pair = COCO_PAIRS[name]
    preds = pair.load_preds()
    if not any("segmentation" in r for r in preds):
        pytest.skip("no masks")
    try:
        gt = coco_io.load_coco_gt(pair.gt_path, iou_type="segm")
    except coco_io.InputError:
        pytest.skip("ground truth without masks")
    dt_path = pair.preds_list_path(tmp_path)
    general_dt = coco_io.load_coco_results(dt_path, gt, iou_type="segm")
    monkeypatch.setattr(TUNING, "fast_path_bytes", 0)
    taken = []
    orig = coco_io.results_from_scan
    monkeypatch.setattr(coco_io, "results_from_scan", lambda *a: taken.append(orig(*a)) or taken[-1])
    fast_dt = coco_io.load_coco_results(dt_path, gt, iou_type="segm")
    rle = all(
        isinstance(r.get("segmentation"), dict) and isinstance(r["segmentation"].get("counts"), str) for r in preds
    )
    cats = set(gt.categories.ids.tolist())
    assert (taken[0] is not None) == (rle and all(r["category_id"] in cats for r in preds))
    _same(fast_dt, general_dt)
    _same_extra(fast_dt, general_dt)


# the data pairs' oddities warn (box results under segm, polygons on zero-height images); compared here: the loaders
@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")
@pytest.mark.parametrize("name", sorted(COCO_PAIRS))
@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_pair_loader_scans_results_on_threads_and_equals_the_two_loaders(name, iou_type, monkeypatch, tmp_path):
    pair = COCO_PAIRS[name]
    dt_path = pair.preds_list_path(tmp_path)
    try:
        gt = coco_io.load_coco_gt(pair.gt_path, iou_type=iou_type)
    except coco_io.InputError:
        pytest.skip("ground truth without masks")
    expected = coco_io.load_coco_results(dt_path, gt, iou_type=iou_type)
    monkeypatch.setattr(TUNING, "fast_path_bytes", 0)
    monkeypatch.setattr(TUNING, "piece_bytes", 1)
    monkeypatch.setenv("NUMBA_NUM_THREADS", "2")
    threads = []
    orig = pieces.scan_result_records
    caller, pool_took_one = threading.get_ident(), threading.Event()

    def scan(*args):
        # the calling thread waits (up to 5 s) for a pool thread to take a piece: on a loaded machine it could
        # otherwise scan them all first; a loader that never hands pieces to the pool still fails below
        if threading.get_ident() == caller:
            pool_took_one.wait(5)
        else:
            pool_took_one.set()
        threads.append(threading.get_ident())
        return orig(*args)

    monkeypatch.setattr(pieces, "scan_result_records", scan)
    dets, gt_pair = coco_io.load_coco_pair(dt_path, pair.gt_path, iou_type=iou_type)
    assert set(threads) - {threading.get_ident()}, "no piece was scanned on a pool thread"
    _same(gt_pair, gt)
    _same(dets, expected)
    if iou_type == "segm":
        _same_extra(dets, expected)


def test_pair_loader_reports_the_ground_truths_error_before_the_results(tmp_path, monkeypatch):
    monkeypatch.setattr(TUNING, "fast_path_bytes", 0)
    bad_gt = tmp_path / "gt.json"
    bad_gt.write_text('{"images": [}')
    for preds in (tmp_path / "missing.json", COCO_PAIRS[sorted(COCO_PAIRS)[0]].preds_list_path(tmp_path)):
        with pytest.raises(coco_io.InputError, match="gt.json"):
            coco_io.load_coco_pair(preds, bad_gt)
    good_gt = COCO_PAIRS[sorted(COCO_PAIRS)[0]].gt_path
    with pytest.raises(coco_io.InputError, match="missing.json: results file not found"):
        coco_io.load_coco_pair(tmp_path / "missing.json", good_gt)
    bad_dt = tmp_path / "dt.json"
    bad_dt.write_text('[{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": NaN}]' + " " * 64)
    with pytest.raises(coco_io.InputError) as general:
        coco_io.load_coco_results(bad_dt, coco_io.load_coco_gt(good_gt))
    with pytest.raises(coco_io.InputError) as paired:
        coco_io.load_coco_pair(bad_dt, good_gt)
    assert str(paired.value) == str(general.value)


def test_pair_loader_takes_loaded_containers_as_they_are(tmp_path):
    pair = COCO_PAIRS[sorted(COCO_PAIRS)[0]]
    dt_path = pair.preds_list_path(tmp_path)
    gt = coco_io.load_coco_gt(pair.gt_path)
    dets = coco_io.load_coco_results(dt_path, gt)
    got_dets, got_gt = coco_io.load_coco_pair(dt_path, gt)
    assert got_gt is gt
    _same(got_dets, dets)
    got_dets, got_gt = coco_io.load_coco_pair(dets, pair.gt_path)
    assert got_dets is dets
    _same(got_gt, gt)
    got_dets, got_gt = coco_io.load_coco_pair(dets, gt)
    assert got_dets is dets and got_gt is gt
