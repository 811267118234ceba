"""Slices (issue 20, item 4): every stat per slice equals evaluating the slice's images alone, by deteval
on the subset and by pycocotools with ``params.imgIds`` set."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
from support.fake100 import GT, PREDS
from support.oracle import load_json

import deteval
from deteval.analysis.slices import slices_by_field


def _pycocotools_on(preds, gt, img_ids, iou_type):
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = load_json(gt)
        coco_gt.createIndex()
        ev = COCOeval(coco_gt, coco_gt.loadRes(load_json(preds)), iouType=iou_type)
        ev.params.imgIds = list(img_ids)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return [float(v) for v in ev.stats]


def _subset(gt, preds, ids):
    keep = set(ids)
    gt_s = {**gt, "images": [im for im in gt["images"] if im["id"] in keep],
            "annotations": [a for a in gt["annotations"] if a["image_id"] in keep]}  # fmt: skip
    return gt_s, [d for d in preds if d["image_id"] in keep]


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_slices_equal_the_sliced_evaluations(iou_type):
    gt, preds = load_json(GT), load_json(PREDS[iou_type])
    ids = [im["id"] for im in gt["images"]]
    rng = np.random.default_rng(0)
    slices = {
        "first half": ids[: len(ids) // 2],
        "random 30": rng.choice(ids, 30, replace=False).tolist(),
        "one": ids[7:8],
        "shuffled, repeated": ids[40:60][::-1] + ids[40:45],
    }
    result = deteval.evaluate(preds, gt, iou_type=iou_type, slices=slices)
    assert list(result.slices) == list(slices)
    for name, members in slices.items():
        got = list(result.slices[name].values())
        gt_s, preds_s = _subset(gt, preds, members)
        alone = deteval.evaluate(preds_s, gt_s, iou_type=iou_type)
        assert got == list(alone.stats.values()), name
        assert got == _pycocotools_on(preds, gt, sorted(set(members)), iou_type), name


def test_slice_by_field_and_json_rows(tmp_path):
    gt, preds = load_json(GT), load_json(PREDS["bbox"])
    for i, im in enumerate(gt["images"]):
        im["weather"] = ["sun", "rain", "fog"][i % 3]
    slices = slices_by_field(gt, "weather")
    assert list(slices) == ["sun", "rain", "fog"]
    result = deteval.evaluate(preds, gt, slices=slices)
    rows = json.loads(result.to_json())["slices"]
    assert [r["slice"] for r in rows] == ["sun", "rain", "fog"]
    for row in rows:
        assert [row[k] for k in result.stats] == _pycocotools_on(preds, gt, slices[row["slice"]], "bbox")


def test_bad_slices():
    with pytest.raises(deteval.InputError, match="not in the ground truth"):
        deteval.evaluate(PREDS["bbox"], GT, slices={"x": [123456789]})
    with pytest.raises(deteval.InputError):
        deteval.evaluate(PREDS["bbox"], GT, slices=[1, 2])
    with pytest.raises(deteval.InputError, match="no image record"):
        slices_by_field(load_json(GT), "weather")
    empty = deteval.evaluate(PREDS["bbox"], GT, slices={"none": []})
    assert set(empty.slices["none"].values()) == {-1.0}
