"""compat=False corrects pycocotools' quirks, and only them.

Each oracle is pycocotools itself: run on input where the quirk cannot fire (ids renumbered), or
with the one line the quirk lives in corrected (the unmerged cocoapi fix for ``ignore``).
"""

from __future__ import annotations

import contextlib
import copy
import io

import numpy as np
import pytest
from conftest import DATA_DIR
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
from support.oracle import assert_same, load_json, run_pycocotools

import deteval

TM4 = (DATA_DIR / "tm4" / "tm_inputs_dets.json", DATA_DIR / "tm4" / "tm_inputs_gt.json")
FAKE100 = (
    DATA_DIR / "coco_fake100" / "instances_val2014_fakebbox100_results.json",
    DATA_DIR / "coco_fake100" / "instances_val2014_100.json",
)


def _arrays_equal(a, b) -> bool:
    return all(np.array_equal(getattr(a, n), getattr(b, n)) for n in ("precision", "recall", "scores"))


def _mean_valid(s: np.ndarray) -> float:
    return float(np.mean(s[s > -1])) if (s > -1).any() else -1.0


@pytest.mark.parametrize("pair", [TM4, FAKE100], ids=["tm4", "coco_fake100"])
def test_fixed_equals_compat_where_no_quirk_applies(pair):
    # no `ignore` fields, no annotation id 0, default max dets, default thresholds
    compat = deteval.evaluate(*pair)
    fixed = deteval.evaluate(*pair, compat=False)
    assert _arrays_equal(compat, fixed)
    assert compat.stats == fixed.stats


class _IgnoreHonouringCOCOeval(COCOeval):
    """pycocotools with cocoapi PR #307's fix: ``ignore = iscrowd or ignore``."""

    def __init__(self, *args, user_ignore: dict, **kwargs):
        super().__init__(*args, **kwargs)
        self._user_ignore = user_ignore

    def _prepare(self):
        super()._prepare()
        for gts in self._gts.values():
            for g in gts:
                g["ignore"] = int(bool(g["iscrowd"]) or self._user_ignore.get(g["id"], 0))


def _ignore_oracle(preds, gt) -> COCOeval:
    gt, preds = copy.deepcopy(gt), copy.deepcopy(preds)
    user_ignore = {a["id"]: a.get("ignore", 0) for a in gt["annotations"]}
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = gt
        coco_gt.createIndex()
        ev = _IgnoreHonouringCOCOeval(coco_gt, coco_gt.loadRes(preds), "bbox", user_ignore=user_ignore)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev


def test_fixed_honours_ignore():
    preds, gt = load_json(TM4[0]), load_json(TM4[1])
    for i, ann in enumerate(gt["annotations"]):
        ann["ignore"] = int(i % 3 == 0)
    compat = deteval.evaluate(preds, gt)
    fixed = deteval.evaluate(preds, gt, compat=False)
    assert_same(compat, run_pycocotools(preds, gt))  # compat: the flag has no effect
    assert_same(fixed, _ignore_oracle(preds, gt))
    assert not _arrays_equal(compat, fixed)  # the flags above do change the numbers


def test_fixed_treats_annotation_id_zero_as_an_ordinary_match():
    preds, gt = load_json(TM4[0]), load_json(TM4[1])
    matched_id = gt["annotations"][0]["id"]
    fresh = max(a["id"] for a in gt["annotations"]) + 1
    assert all(a["id"] != 0 for a in gt["annotations"])
    gt_zero = copy.deepcopy(gt)
    gt_zero["annotations"][0]["id"] = 0
    compat = deteval.evaluate(preds, gt_zero)
    fixed = deteval.evaluate(preds, gt_zero, compat=False)
    assert_same(compat, run_pycocotools(preds, gt_zero))  # the quirk: the match reads as a FP
    renumbered = copy.deepcopy(gt)
    renumbered["annotations"][0]["id"] = fresh
    assert_same(fixed, run_pycocotools(preds, renumbered))
    assert matched_id != 0 and compat.stats["AP"] < fixed.stats["AP"]


def test_fixed_reads_ap_at_the_largest_max_dets():
    preds, gt = load_json(FAKE100[0]), load_json(FAKE100[1])
    max_dets = [1, 10, 1000]
    oracle = run_pycocotools(preds, gt, max_dets=max_dets)
    compat = deteval.evaluate(preds, gt, max_dets=max_dets)
    fixed = deteval.evaluate(preds, gt, max_dets=max_dets, compat=False)
    assert_same(compat, oracle)
    assert compat.stats["AP"] == -1.0  # pycocotools reads maxDets=100, which is absent
    assert fixed.stats["AP"] == _mean_valid(oracle.eval["precision"][:, :, :, 0, 2])
    assert list(fixed.stats.values())[1:] == list(compat.stats.values())[1:]


def test_fixed_finds_thresholds_that_differ_by_rounding():
    preds, gt = load_json(TM4[0]), load_json(TM4[1])
    thrs = [0.5, 0.7500000000000001, 0.9]  # 0.75 as arithmetic often produces it
    oracle = run_pycocotools(preds, gt, iou_thrs=thrs)
    compat = deteval.evaluate(preds, gt, iou_thrs=thrs)
    fixed = deteval.evaluate(preds, gt, iou_thrs=thrs, compat=False)
    assert_same(compat, oracle)
    assert compat.stats["AP75"] == -1.0
    assert fixed.stats["AP75"] == _mean_valid(oracle.eval["precision"][1, :, :, 0, 2])
    assert fixed.stats["AP50"] == compat.stats["AP50"]
