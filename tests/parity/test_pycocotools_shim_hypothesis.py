"""deteval's pycocotools shim against pycocotools on the generated adversarial datasets (bbox, segm, keypoints).

The cases of ``strategies.coco_cases``, ``strategies_masks.segm_cases`` and ``keypoint_cases`` (ties,
crowds, ids 0, boundary areas and IoUs, string image ids, custom params, pooled categories ...),
each driven the same way through both: the case's parameters set on ``params``, then ``evaluate()``,
``accumulate()``, ``summarize()``, everything compared (``tests/support/shim_twins.py``), ``evalImgs`` and
``ious`` included. Each test runs a sixth of the hypothesis profile's examples.
"""

from __future__ import annotations

import copy

import numpy as np
from hypothesis import given, settings
from support.shim_twins import compare_drivers
from support.strategies import coco_cases
from support.strategies_masks import keypoint_cases, segm_cases

# a sixth of the profile: each example drives pycocotools and the shim through every step, and the kernels
# under the shim have run the profile's full count against pycocotools in test_coco_parity_* already
SIXTH = settings(max_examples=max(1, settings().max_examples // 6))


def _drive(case, iou_type: str):
    kw = case.kwargs()

    def drive(coco, cocoeval, log):
        gt = coco()
        gt.dataset = copy.deepcopy(case.gt)
        gt.createIndex()
        ev = cocoeval(gt, gt.loadRes(copy.deepcopy(case.preds)), iou_type)
        p = ev.params
        if kw["iou_thrs"] is not None:
            p.iouThrs = np.array(kw["iou_thrs"], np.float64)
        if kw["area_ranges"] is not None:
            p.areaRng = [[lo, hi] for lo, hi in kw["area_ranges"].values()]
            p.areaRngLbl = list(kw["area_ranges"])
        if kw["max_dets"] is not None:
            p.maxDets = list(kw["max_dets"])
        p.useCats = int(kw["use_cats"])
        if kw.get("kpt_sigmas") is not None:
            p.kpt_oks_sigmas = np.array(kw["kpt_sigmas"], np.float64)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
        return ev

    return drive


@SIXTH
@given(coco_cases())
def test_bbox_generated(case):
    compare_drivers(_drive(case, "bbox"), records=True)


@SIXTH
@given(segm_cases(zero_runs=False))
def test_segm_generated(case):
    compare_drivers(_drive(case, "segm"), records=True)


@SIXTH
@given(keypoint_cases())
def test_keypoints_generated(case):
    compare_drivers(_drive(case, "keypoints"), records=True)
