"""deteval.analysis.tide with iou_type="segm" against tidecv 1.0.1's mask mode (TIDE.MASK): the shared segm pairs and
generated datasets. Equality is exact (same Python, same summation), as in test_tide.py."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from conftest import DATA_DIR
from hypothesis import HealthCheck, given, settings
from support.examples import examples
from support.strategies_stats import stats_cases
from test_tide import _assert_same, _tidecv_data, _tidecv_run

from deteval.analysis.tide import tide_errors

tidecv = pytest.importorskip("tidecv")
from pycocotools import mask as mask_utils  # noqa: E402

FAKE100 = DATA_DIR / "coco_fake100"
SEGM_PAIRS = {
    "coco_fake100": (FAKE100 / "instances_val2014_fakesegm100_results.json", FAKE100 / "instances_val2014_100.json"),
    "polygons3": (DATA_DIR / "polygons3" / "dt_dataset.json", DATA_DIR / "polygons3" / "gt_dataset.json"),
}


def _rle(seg, h: int, w: int):
    """A segmentation as one RLE, as pycocotools' annToRLE (and tidecv's toRLE) make it."""
    if isinstance(seg, list):
        return mask_utils.merge(mask_utils.frPyObjects(seg, h, w))
    if isinstance(seg["counts"], list):
        return mask_utils.frPyObjects(seg, h, w)
    return seg


def _tidecv_mask_data(gt: dict, preds: list):
    """tidecv Data as its COCO loaders build them in mask mode; polygon results are turned into RLEs first
    (tidecv would hand the polygon lists to mask.iou as they are)."""
    size = {im["id"]: (im["height"], im["width"]) for im in gt["images"]}
    return _tidecv_data(gt, preds, mask=lambda r: _rle(r["segmentation"], *size[r["image_id"]]))


def _tidecv_mask_run(gd, pd):
    return _tidecv_run(gd, pd, masks=True)


@pytest.mark.parametrize("name", list(SEGM_PAIRS))
def test_segm_pairs_match_tidecv(name):
    dt_path, gt_path = SEGM_PAIRS[name]
    gt, preds = json.loads(gt_path.read_text()), json.loads(dt_path.read_text())
    gd, pd = _tidecv_mask_data(gt, preds)
    res = tide_errors(preds, gt, iou_type="segm")
    _assert_same(res, _tidecv_mask_run(gd, pd), gd, pd, len(preds), len(gt["annotations"]))


def test_coco_fake100_through_tidecv_loaders():
    """tidecv's own COCO loaders in mask mode: the same numbers and the same printout ("mask AP @ 50")."""
    dt_path, gt_path = SEGM_PAIRS["coco_fake100"]
    gt, dt = tidecv.datasets.COCO(str(gt_path)), tidecv.datasets.COCOResult(str(dt_path))
    tide = tidecv.TIDE()
    tide.evaluate_range(gt, dt, mode=tidecv.TIDE.MASK)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        tide.summarize()
    res = tide_errors(str(dt_path), str(gt_path), iou_type="segm", ap_thresholds=True)
    assert res.summary(counts=False) == out.getvalue()
    assert list(res.ap_by_threshold.values()) == [r.ap for r in tide.run_thresholds[dt.name]]
    assert res.to_dict()["mode"] == "mask"
    # the numbers of this pair (tidecv 1.0.1), differing from the box run's
    assert res.counts == {"Cls": 76, "Loc": 82, "Both": 7, "Dupe": 0, "Bkg": 4, "Miss": 109}
    assert f"{res.ap:.2f}" == "51.80"


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(stats_cases(segm=True))
def test_generated_masks_match_tidecv(case):
    gt, preds = case
    if all(p["score"] <= -1 for p in preds):  # tidecv raises (see deteval.analysis.tide, "No classes left")
        return
    gd, pd = _tidecv_mask_data(gt, preds)
    try:
        ref = _tidecv_mask_run(gd, pd)
    except (ZeroDivisionError, KeyError):  # tidecv's failures, documented in deteval.analysis.tide
        return
    res = tide_errors(preds, gt, iou_type="segm")
    _assert_same(res, ref, gd, pd, len(preds), len(gt["annotations"]))


def test_cli_tide_segm(tmp_path, capsys):
    from deteval.cli import main

    dt_path, gt_path = SEGM_PAIRS["coco_fake100"]
    out = tmp_path / "r.json"
    assert main([str(dt_path), str(gt_path), "--iou-type", "segm", "--tide", "--json", str(out)]) == 0
    assert "mask AP @ 50: 51.80" in capsys.readouterr().out
    expected = tide_errors(str(dt_path), str(gt_path), iou_type="segm").to_dict()
    assert json.loads(out.read_text())["tide"] == json.loads(json.dumps(expected))


def test_ignore_region_uses_the_crowd_overlap():
    """A detection covering half a crowd region: its IoU is 1/2, its overlap (intersection over its own area) 1,
    so the region ignores it; a detection straddling it is ignored or not by the same rule. As tidecv."""
    from support.strategies_stats import _as_masks

    gt = {
        "images": [{"id": 1, "width": 128, "height": 128}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 20, 20], "area": 400.0, "iscrowd": 1},
            {"id": 2, "image_id": 1, "category_id": 1, "bbox": [50, 50, 20, 20], "area": 400.0, "iscrowd": 0},
        ],
        "categories": [{"id": 1, "name": "a"}],
    }
    dets = [
        {"image_id": 1, "category_id": 1, "bbox": [0.0, 0.0, 10.0, 20.0], "score": 0.9},
        {"image_id": 1, "category_id": 1, "bbox": [10.0, 0.0, 20.0, 20.0], "score": 0.8},
        {"image_id": 1, "category_id": 1, "bbox": [50.0, 50.0, 20.0, 20.0], "score": 0.7},
    ]
    gt, dets = _as_masks(gt, dets)
    gd, pd = _tidecv_mask_data(gt, dets)
    res = tide_errors(dets, gt, iou_type="segm")
    _assert_same(res, _tidecv_mask_run(gd, pd), gd, pd, len(dets), len(gt["annotations"]))
    assert res.det_ignored.tolist() == [True, False, False]
