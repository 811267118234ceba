"""COCO segm and keypoints parity on generated adversarial datasets: deteval == pycocotools, bit for bit.

The datasets come from `strategies_masks` (polygons of every shape, crowd regions as
uncompressed RLE, compressed RLE, masks at the image borders, empty and full masks, results
whose RLE size is not the image's, every loadRes branch; keypoints with 17 or a custom number
of points and sigmas, invisible GT, crowd GT, detections far away, areas on range
boundaries, tied scores). Each test runs half the examples of the hypothesis profile
(conftest.py: "ci" runs 300, so 150 here).

On failure hypothesis prints the shrunk case as `CocoCase.from_json('...')` or
`KeypointCase.from_json('...')`; `_check_segm` / `_check_keypoints` replay it.
"""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st
from pycocotools import mask as mask_utils
from support.oracle import assert_same, run_pycocotools
from support.strategies import CocoCase
from support.strategies_masks import KeypointCase, keypoint_cases, run_pycocotools_sigmas, segm_cases
from support.warned import oddities_warned

import deteval
from deteval.geometry import keypoints
from deteval.jit import using_threads

HALF = settings(max_examples=max(1, settings().max_examples // 2))


def _check_segm(case: CocoCase) -> None:
    gt_before, preds_before = copy.deepcopy(case.gt), copy.deepcopy(case.preds)
    expected = run_pycocotools(case.preds, case.gt, iou_type="segm", **case.kwargs())
    with oddities_warned():  # generated mask results may lack a segmentation: scored as pycocotools scores them
        res = deteval.evaluate(case.preds, case.gt, protocol="coco", iou_type="segm", compat=True, **case.kwargs())
    assert case.gt == gt_before and case.preds == preds_before, "inputs were modified"
    assert_same(res, expected)


def _check_keypoints(case: KeypointCase) -> None:
    gt_before, preds_before = copy.deepcopy(case.gt), copy.deepcopy(case.preds)
    kwargs = case.kwargs()
    expected = run_pycocotools_sigmas(case.preds, case.gt, **kwargs)
    res = deteval.evaluate(case.preds, case.gt, protocol="coco", iou_type="keypoints", compat=True, **kwargs)
    assert case.gt == gt_before and case.preds == preds_before, "inputs were modified"
    assert_same(res, expected)


@HALF
@given(segm_cases(zero_runs=False))
def test_coco_segm_parity_generated(case):
    _check_segm(case)


# Non-canonical RLE with zero-length runs: pycocotools' rleIou advances one run per side per step
# and stops as soon as both current runs are 0, so a zero-length run met by both masks at the same
# pixel ends the count early (GT and result both {"size": [2, 3], "counts": [2, 0, 1, 3]}: IoU 0).
# deteval's rle_overlap walks the runs the same way.
@HALF
@given(segm_cases(zero_runs=True))
def test_coco_segm_parity_generated_zero_length_runs(case):
    _check_segm(case)


def test_coco_segm_zero_length_runs_minimal():
    """GT and result both {"size": [2, 3], "counts": [2, 0, 1, 3]}: a zero-length run right after the first run.

    pycocotools' rleIou: both first runs (2) end together, both next runs are 0, so the walk
    stops with no pixel counted: IoU 0, AP 0 (not 1).
    """
    seg = {"size": [2, 3], "counts": [2, 0, 1, 3]}
    gt = {
        "images": [{"id": 1, "height": 2, "width": 3}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {
                "id": 1,
                "image_id": 1,
                "category_id": 1,
                "iscrowd": 0,
                "area": 3,
                "bbox": [0, 0, 3, 2],
                "segmentation": seg,
            }
        ],
    }
    preds = [{"image_id": 1, "category_id": 1, "score": 0.9, "bbox": [0, 0, 3, 2], "segmentation": copy.deepcopy(seg)}]
    expected = run_pycocotools(preds, gt, iou_type="segm")
    assert float(expected.stats[0]) == 0.0
    assert_same(deteval.evaluate(preds, gt, iou_type="segm"), expected)
    # the same masks as compressed strings (frPyObjects keeps the zero-length runs), segm branch
    preds = [{"image_id": 1, "category_id": 1, "score": 0.9, "segmentation": {"size": [2, 3], "counts": "2013"}}]
    assert_same(deteval.evaluate(preds, gt, iou_type="segm"), run_pycocotools(preds, gt, iou_type="segm"))


def _check_bbox_of_masks(case: CocoCase) -> None:
    """The segm case evaluated as bbox: results without a bbox get toBbox(mask) (rleToBbox) as box."""
    expected = run_pycocotools(case.preds, case.gt, iou_type="bbox", **case.kwargs())
    res = deteval.evaluate(case.preds, case.gt, protocol="coco", iou_type="bbox", compat=True, **case.kwargs())
    assert_same(res, expected)


@settings(max_examples=max(1, settings().max_examples // 4))
@given(segm_cases(zero_runs=False))
def test_coco_bbox_of_mask_results_generated(case):
    _check_bbox_of_masks(case)


# pycocotools 2.0.11 (ppwwyyxx/cocoapi common/maskApi.c) has a rewritten rleToBbox: it skips
# background runs and zero-length foreground runs and takes each foreground run's first and last
# pixel (when every foreground run is empty it returns the sentinel [w, h, 2**32 + 1 - w, ...]).
# deteval's rle_extents follows that routine; canonical RLE gives the same boxes either way.
@settings(max_examples=max(1, settings().max_examples // 4))
@given(segm_cases(zero_runs=True))
def test_coco_bbox_of_mask_results_generated_zero_length_runs(case):
    _check_bbox_of_masks(case)


def test_coco_mask_extent_zero_length_run_minimal():
    """A result {"size": [4, 5], "counts": [2, 1, 0, 0, 17]}: one pixel (x 0, y 2), then a zero-length run.

    pycocotools' toBbox: [0, 2, 1, 1] (IoU 1 with the GT box, AP 1 as bbox). deteval: [0, 2, 1, 2]
    (the empty run at y 3 counted: IoU 0.5, AP 0.1).
    """
    counts = mask_utils.frPyObjects({"size": [4, 5], "counts": [2, 1, 0, 0, 17]}, 4, 5)["counts"].decode("ascii")
    gt = {
        "images": [{"id": 1, "height": 4, "width": 5}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {
                "id": 1,
                "image_id": 1,
                "category_id": 1,
                "iscrowd": 0,
                "area": 1,
                "bbox": [0, 2, 1, 1],
                "segmentation": [[0, 2, 1, 2, 1, 3, 0, 3]],
            }
        ],
    }
    preds = [{"image_id": 1, "category_id": 1, "score": 0.9, "segmentation": {"size": [4, 5], "counts": counts}}]
    expected = run_pycocotools(preds, gt, iou_type="bbox")
    assert float(expected.stats[1]) > 0.99
    assert_same(deteval.evaluate(preds, gt, iou_type="bbox"), expected)


@HALF
@given(keypoint_cases())
def test_coco_keypoints_parity_generated(case):
    _check_keypoints(case)


@HALF
@given(keypoint_cases(), st.sampled_from([1, 23]))
def test_coco_keypoints_parity_small_scratch(case, scratch_terms):
    """OKS streamed through a scratch of a few terms: several fills per range of groups (one thread: one range),
    groups wider than a fill."""
    saved = keypoints.SCRATCH_TERMS
    keypoints.SCRATCH_TERMS = scratch_terms
    try:
        with using_threads(1):
            _check_keypoints(case)
    finally:
        keypoints.SCRATCH_TERMS = saved
