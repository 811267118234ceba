"""``result.matches`` and ``result.per_image`` equal pycocotools' own ``evalImgs``, row by row.

pycocotools runs in the test (support.oracle); its ``evalImgs`` at area ``all`` are mapped back to result
rows by support.match_rows (results ids 1..N in file order). The data: cocoapi's fake100 boxes and masks,
the keypoints1 pair, and generated boxes, masks and keypoints (crowd regions, GT ids 0 and negative, tied
scores, detections on crowd regions, images without GT, categories without detections, pooled
categories, custom thresholds, area ranges and max dets). Each row equal, ``iou`` with ``==``.
"""

from __future__ import annotations

import copy
import json

import pytest
from conftest import DATA_DIR
from hypothesis import given, settings
from support.examples import examples
from support.match_rows import IMAGE_KEYS, KEYS, assert_rows_equal, expected_matches, expected_per_image
from support.oracle import run_pycocotools
from support.strategies import CocoCase, coco_cases
from support.strategies_masks import KeypointCase, keypoint_cases, run_pycocotools_sigmas, segm_cases
from support.warned import oddities_warned

import deteval

FAKE100 = DATA_DIR / "coco_fake100"
FAKE100_GT = FAKE100 / "instances_val2014_100.json"
FAKE100_DT = {"bbox": FAKE100 / "instances_val2014_fakebbox100_results.json",
              "segm": FAKE100 / "instances_val2014_fakesegm100_results.json"}  # fmt: skip
KPT1_GT, KPT1_DT = DATA_DIR / "keypoints1" / "gt_dataset.json", DATA_DIR / "keypoints1" / "dt_dataset.json"


def _json(path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))


def _check(preds, gt, iou_type: str = "bbox", oracle=run_pycocotools, **kwargs) -> deteval.EvalResult:
    typed = {} if oracle is run_pycocotools_sigmas else {"iou_type": iou_type}  # that one is keypoints' own
    ev = oracle(copy.deepcopy(preds), copy.deepcopy(gt), **typed, **kwargs)
    with oddities_warned():  # generated inputs meet the oddities pycocotools scores: warned, scored the same
        res = deteval.evaluate(preds, gt, protocol="coco", iou_type=iou_type, matches=True, **kwargs)
    assert_rows_equal(res.matches, expected_matches(ev), KEYS)
    assert_rows_equal(res.per_image, expected_per_image(ev), IMAGE_KEYS)
    return res


@pytest.mark.parametrize("use_cats", [True, False])
@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_fake100_matches_pycocotools(iou_type, use_cats):
    res = _check(_json(FAKE100_DT[iou_type]), _json(FAKE100_GT), iou_type, use_cats=use_cats)
    assert any(r["gt_id"] is not None for r in res.matches) and any(r["det_index"] is None for r in res.matches)


def test_keypoints1_matches_pycocotools():
    _check(_json(KPT1_DT), _json(KPT1_GT), "keypoints", oracle=run_pycocotools_sigmas)


def test_custom_params_and_skipped_results_keep_file_rows():
    """Results of a category the ground truth lacks are skipped (warned): det_index stays the file's row."""
    preds, gt = _json(FAKE100_DT["bbox"]), _json(FAKE100_GT)
    preds = [dict(preds[0], category_id=999_999)] + preds[:50] + [dict(preds[1], category_id=999_999)] + preds[50:]
    ev = run_pycocotools(copy.deepcopy(preds), copy.deepcopy(gt), iou_thrs=[0.3, 0.5], max_dets=[1, 5, 10])
    with pytest.warns(deteval.DetevalWarning, match="skipped 2 results"):
        res = deteval.evaluate(preds, gt, iou_thrs=[0.3, 0.5], max_dets=[1, 5, 10], matches=True)
    assert_rows_equal(res.matches, expected_matches(ev), KEYS)
    assert_rows_equal(res.per_image, expected_per_image(ev), IMAGE_KEYS)
    assert 0 not in {r["det_index"] for r in res.matches}


def _gt(anns, images=(1, 2, 3), cats=(1, 2, 3)):
    return {
        "images": [{"id": i, "height": 100, "width": 100} for i in images],
        "categories": [{"id": c, "name": f"c{c}"} for c in cats],
        "annotations": [
            {
                "id": a[0],
                "image_id": a[1],
                "category_id": a[2],
                "bbox": a[3],
                "area": a[3][2] * a[3][3],
                "iscrowd": a[4],
            }
            for a in anns
        ],
    }


def test_hand_made_quirks():
    """GT id 0 taken (a detection's gt_id null, the GT absent from the unmatched rows), a crowd region taken by
    two detections (IoA), tied scores, an image without GT, a category without detections."""
    gt = _gt([
        (0, 1, 1, [0, 0, 10, 10], 0),
        (7, 1, 1, [20, 20, 10, 10], 0),
        (8, 1, 2, [0, 0, 50, 50], 1),
        (9, 2, 3, [0, 0, 10, 10], 0),
    ])  # fmt: skip
    preds = [
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.5},
        {"image_id": 1, "category_id": 1, "bbox": [20, 20, 10, 10], "score": 0.5},
        {"image_id": 1, "category_id": 2, "bbox": [0, 0, 10, 10], "score": 0.9},
        {"image_id": 1, "category_id": 2, "bbox": [5, 5, 10, 10], "score": 0.9},
        {"image_id": 3, "category_id": 1, "bbox": [5, 5, 10, 10], "score": 0.1},
    ]
    res = _check(preds, gt)
    at50 = [r for r in res.matches if r["iou_thr"] == 0.5]
    assert at50[0] == {"iou_thr": 0.5, "det_index": 0, "image_id": 1, "category_id": 1, "score": 0.5,
                       "gt_id": None, "iou": None, "ignored": False}  # fmt: skip
    assert [r["iou"] for r in at50 if r["category_id"] == 2] == [1.0, 1.0]  # the crowd region: IoA
    assert not [r for r in at50 if r["gt_id"] == 0]  # GT id 0 was taken: no unmatched row
    assert res.per_image[0] == {"image_id": 1, "num_gt": 2, "num_dt": 4, "tp": 1, "fp": 1, "fn": 1}
    assert res.per_image[2] == {"image_id": 3, "num_gt": 0, "num_dt": 1, "tp": 0, "fp": 1, "fn": 0}


@settings(max_examples=examples(150))
@given(coco_cases())
def test_generated_boxes_match_pycocotools(case: CocoCase):
    _check(case.preds, case.gt, **case.kwargs())


@settings(max_examples=examples(60))
@given(segm_cases(zero_runs=False))
def test_generated_masks_match_pycocotools(case: CocoCase):
    _check(case.preds, case.gt, "segm", **case.kwargs())


@settings(max_examples=examples(60))
@given(keypoint_cases())
def test_generated_keypoints_match_pycocotools(case: KeypointCase):
    _check(case.preds, case.gt, "keypoints", oracle=run_pycocotools_sigmas, **case.kwargs())


def test_results_without_tables_say_how_to_get_them():
    res = deteval.evaluate(_json(FAKE100_DT["bbox"]), _json(FAKE100_GT))
    with pytest.raises(AttributeError, match="matches=True"):
        _ = res.matches
    with pytest.raises(AttributeError, match="matches=True"):
        _ = res.per_image
    assert getattr(res, "matches", None) is None  # what the HTML report reads


def test_protocols_without_tables_refuse_them():
    with pytest.raises(deteval.InputError, match="per-detection matches"):
        deteval.evaluate(DATA_DIR / "voc100", DATA_DIR / "voc100", protocol="voc07", matches=True)


def test_obb_rows_agree_with_the_counts():
    """Oriented boxes (no pycocotools reference): every detection and ground truth appears at each threshold,
    and the per-image counts are the match rows' at IoU .50."""
    res = deteval.evaluate(DATA_DIR / "obb" / "dets.json", DATA_DIR / "obb" / "gt.json", iou_type="obb", matches=True)
    at50 = [r for r in res.matches if r["iou_thr"] == 0.5]
    per_image = {r["image_id"]: r for r in res.per_image}
    for image_id, row in per_image.items():
        rows = [r for r in at50 if r["image_id"] == image_id]
        dets = [r for r in rows if r["det_index"] is not None]
        assert row["num_dt"] == len(dets)
        assert row["tp"] == sum(r["gt_id"] is not None and not r["ignored"] for r in dets)
        assert row["fp"] == sum(r["gt_id"] is None and not r["ignored"] for r in dets)
    assert sum(r["tp"] for r in res.per_image) > 0
    taken = {r["gt_id"] for r in at50 if r["det_index"] is not None and r["gt_id"] is not None}
    left = {r["gt_id"] for r in at50 if r["det_index"] is None}
    assert not taken & left
    assert all(r["iou"] is None or 0.5 <= r["iou"] <= 1 for r in at50)
