"""deteval.analysis.calibration against hotcoco 1.3.0's COCOeval.calibration(): the shared pairs and generated datasets.

Tolerance: none on the shared pairs and the generated data: deteval sums in hotcoco's order
(images by id, categories, score order) and the two evaluations agree on every match, so ECE, MCE,
every bin and every category's ECE are equal to the bit (``==``).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from conftest import COCO_PAIRS, DATA_DIR
from hypothesis import HealthCheck, given, settings
from support.examples import examples
from support.strategies_stats import stats_cases

import deteval
from deteval.analysis.calibration import calibration

hotcoco = pytest.importorskip("hotcoco")

FAKE100_GT = DATA_DIR / "coco_fake100" / "instances_val2014_100.json"
FAKE100_SEGM = DATA_DIR / "coco_fake100" / "instances_val2014_fakesegm100_results.json"
SETTINGS = ((10, 0.5), (7, 0.75), (1, 0.95), (20, 0.5))


def _hotcoco_eval(gt: dict, results: list, iou_type: str = "bbox"):
    # hotcoco type-checks the image records' optional fields (toy7 has an int date_captured): keep the used ones
    images = [{k: v for k, v in im.items() if k in ("id", "width", "height", "file_name")} for im in gt["images"]]
    coco = hotcoco.COCO({**gt, "images": images})
    ev = hotcoco.COCOeval(coco, coco.loadRes(results), iou_type)
    ev.evaluate()
    return ev


def assert_same_as_hotcoco(gt: dict, results: list, iou_type: str = "bbox", settings_=SETTINGS) -> None:
    ev = _hotcoco_eval(gt, results, iou_type)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = deteval.evaluate(results, gt, iou_type=iou_type)
    for n_bins, thr in settings_:
        try:
            ref = ev.calibration(n_bins=n_bins, iou_threshold=thr)
        except ValueError as exc:  # counted scores outside [0, 1]: both refuse
            assert "scores in [0, 1]" in str(exc)
            with pytest.raises(ValueError, match=r"scores in \[0, 1\]"):
                calibration(res, n_bins, thr)
            continue
        assert calibration(res, n_bins, thr).to_dict() == ref, (n_bins, thr)


@pytest.mark.parametrize("name", list(COCO_PAIRS))
def test_pairs_bbox(name):
    pair = COCO_PAIRS[name]
    assert_same_as_hotcoco(pair.load_gt(), pair.load_preds())


@pytest.mark.parametrize(
    "gt_path, dt_path",
    [
        (FAKE100_GT, FAKE100_SEGM),
        (DATA_DIR / "polygons3" / "gt_dataset.json", DATA_DIR / "polygons3" / "dt_dataset.json"),
    ],
    ids=["coco_fake100", "polygons3"],
)
def test_segm_pairs(gt_path, dt_path):
    assert_same_as_hotcoco(json.loads(gt_path.read_text()), json.loads(dt_path.read_text()), "segm")


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(stats_cases())
def test_generated_bbox(case):
    assert_same_as_hotcoco(*case, settings_=((10, 0.5), (3, 0.75)))


def test_definition_on_a_crafted_case():
    """Scores on bin edges (0, 1), an ignored (crowd-matched) detection with a score above 1: hand-checked figures."""
    gt = {
        "images": [{"id": 1, "width": 100, "height": 100}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0},
            {"id": 2, "image_id": 1, "category_id": 1, "bbox": [50, 50, 20, 20], "area": 400, "iscrowd": 1},
        ],
        "categories": [{"id": 1, "name": "a"}],
    }
    res = [
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.2},  # TP, bin 2 (0.2 * 10 = 2)
        {"image_id": 1, "category_id": 1, "bbox": [20, 20, 5, 5], "score": 1.0},  # FP, last bin
        {"image_id": 1, "category_id": 1, "bbox": [20, 20, 5, 5], "score": 0.0},  # FP, first bin
        {"image_id": 1, "category_id": 1, "bbox": [55, 55, 5, 5], "score": 1.5},  # on the crowd region: left out
    ]
    cal = calibration(deteval.evaluate(res, gt), n_bins=10)
    assert cal.num_detections == 3
    assert cal.count.tolist() == [1, 0, 1, 0, 0, 0, 0, 0, 0, 1]
    assert cal.ece == pytest.approx((abs(0 - 0.0) + abs(1 - 0.2) + abs(0 - 1.0)) / 3)
    assert cal.mce == 1.0
    assert_same_as_hotcoco(gt, res)


def test_errors():
    pair = COCO_PAIRS["tm4"]
    res = deteval.evaluate(pair.load_preds(), pair.load_gt())
    with pytest.raises(ValueError, match="not one of"):
        calibration(res, iou_thr=0.42)
    with pytest.raises(ValueError, match="n_bins"):
        calibration(res, n_bins=0)
    assert np.isfinite(calibration(res).ece)


def test_no_counted_detection():
    """Every detection on a crowd region: no detection counts, ECE and MCE 0, empty bins (as hotcoco)."""
    gt = {
        "images": [{"id": 1, "width": 128, "height": 128}],
        "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 5, 10], "area": 50.0, "iscrowd": 1}],
        "categories": [{"id": 1, "name": "a"}],
    }
    res = [{"image_id": 1, "category_id": 1, "bbox": [0.0, 0.0, 10.0, 10.0], "score": 0.5}]
    assert_same_as_hotcoco(gt, res)
    cal = calibration(deteval.evaluate(res, gt))
    assert (cal.ece, cal.mce, cal.num_detections, cal.per_category) == (0.0, 0.0, 0, {})
