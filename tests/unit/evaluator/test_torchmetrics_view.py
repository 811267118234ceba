"""What torchmetrics users bring (issue 16, item 6), without torch: whole float labels, recall thresholds,
and ``CocoResult.to_torchmetrics`` in its NumPy form, checked against pycocotools run here.

The comparison with torchmetrics itself is tests/parity/test_torchmetrics.py (it needs torch).
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from conftest import COCO_PAIRS
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
from support.oracle import assert_same, run_pycocotools
from test_evaluator import assert_identical, categories_of, feed, load_pair, per_image

import deteval
from deteval.errors import InputError
from deteval.evaluator import Evaluator

KEYS = ["map", "map_50", "map_75", "map_small", "map_medium", "map_large", "mar_1", "mar_10", "mar_100",
        "mar_small", "mar_medium", "mar_large", "map_per_class", "mar_100_per_class", "classes"]  # fmt: skip


# --------------------------------------------------------------------------------------
# float labels


def test_whole_float_labels_equal_integer_labels():
    gt, dets = load_pair("coco_fake100")
    items = per_image(gt, dets)
    ref = feed(Evaluator(box_format="xywh"), items).compute()
    for dtype in (np.float64, np.float32):
        floats = [
            ({**p, "labels": p["labels"].astype(dtype)}, {**t, "labels": t["labels"].astype(dtype)}) for p, t in items
        ]
        assert_identical(feed(Evaluator(box_format="xywh"), floats), ref)
    lists = [({**p, "labels": [float(v) for v in p["labels"]]}, t) for p, t in items]  # Python floats
    assert_identical(feed(Evaluator(box_format="xywh"), lists), ref)


@pytest.mark.parametrize(
    "labels, message",
    [
        ([1.0, 2.5], r"preds: update 1, preds\[0\] \(image_id=7\): labels\[1\] = 2.5 is not a whole number"),
        ([np.nan, 1.0], r"labels\[0\] = nan is not a whole number"),
        ([1.0, np.inf], r"labels\[1\] = inf is not a whole number"),
        ([1.0, 2.0**70], r"labels\[1\] = 1.1805916207174113e\+21 is not a whole number"),  # beyond int64
    ],
)
def test_non_whole_float_labels_are_an_error(labels, message):
    pred = {"boxes": [[0.0, 0.0, 10.0, 10.0], [5.0, 5.0, 20.0, 20.0]], "scores": [0.9, 0.8], "labels": labels}
    tgt = {"boxes": [[0.0, 0.0, 10.0, 10.0]], "labels": [1], "image_id": 7}
    with pytest.raises(InputError, match=message):
        Evaluator().update([pred], [tgt])


def test_whole_float_categories():
    ev = Evaluator(categories=np.array([1.0, 2.0]))
    assert ev.categories.ids.tolist() == [1, 2]
    with pytest.raises(InputError, match=r"categories: category 1.5 is not a whole number"):
        Evaluator(categories=[1.0, 1.5])


# --------------------------------------------------------------------------------------
# recall thresholds


def test_custom_recall_thresholds_equal_pycocotools():
    """``rec_thrs`` (Evaluator) and ``config={"rec_thrs": ...}`` (evaluate) as pycocotools' ``params.recThrs``."""
    pair = COCO_PAIRS["coco_fake100"]
    rec = np.linspace(0.0, 1.0, 101).astype(np.float32).astype(np.float64)  # a float32 grid, as torchmetrics'
    gt_data, preds = pair.load_gt(), pair.load_preds()
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = gt_data
        coco_gt.createIndex()
        ce = COCOeval(coco_gt, coco_gt.loadRes(pair.load_preds()), "bbox")
        ce.params.recThrs = rec
        ce.evaluate()
        ce.accumulate()
        ce.summarize()
    assert_same(deteval.evaluate(preds, gt_data, config={"rec_thrs": rec.tolist()}), ce)
    gt, dets = load_pair("coco_fake100")
    ev = feed(Evaluator(box_format="xywh", rec_thrs=rec.tolist(), categories=categories_of(gt)), per_image(gt, dets))
    assert_same(ev.compute(), ce)


@pytest.mark.parametrize("rec", [[], [0.5, 0.2], [0.0, 1.5], [-0.1, 1.0], [0.0, float("nan")], ["a"]])
def test_bad_recall_thresholds_are_an_error(rec):
    with pytest.raises(InputError, match=r"rec_thrs: recall thresholds must be"):
        Evaluator(rec_thrs=rec)


# --------------------------------------------------------------------------------------
# to_torchmetrics, NumPy form


@pytest.mark.parametrize("pair_name", ["tm4", "coco_fake100"])
def test_numpy_form_against_pycocotools(pair_name):
    """The 12 stats are pycocotools' ``stats`` as float32; each class's map and mar_100 are pycocotools'
    ``stats[0]`` and ``stats[8]`` with ``params.catIds = [k]`` (what torchmetrics' class_metrics runs)."""
    pair = COCO_PAIRS[pair_name]
    gt_data = pair.load_gt()
    res = deteval.evaluate(pair.load_preds(), gt_data)
    tm = res.to_torchmetrics(tensors=False)
    assert list(tm) == KEYS
    ce = run_pycocotools(pair.load_preds(), gt_data)
    for key, value in zip(KEYS[:12], ce.stats):
        assert isinstance(tm[key], np.float32) and tm[key] == np.float32(value), key
    cat_ids = sorted(c["id"] for c in gt_data["categories"])
    assert tm["classes"].dtype == np.int32 and tm["classes"].tolist() == cat_ids
    assert tm["map_per_class"].dtype == np.float32 and tm["map_per_class"].shape == (len(cat_ids),)
    with contextlib.redirect_stdout(io.StringIO()):
        for i, k in enumerate(cat_ids[:12]):
            ce.params.catIds = [k]
            ce.evaluate()
            ce.accumulate()
            ce.summarize()
            assert tm["map_per_class"][i] == np.float32(ce.stats[0]), k
            assert tm["mar_100_per_class"][i] == np.float32(ce.stats[8]), k


def test_without_class_metrics_gives_torchmetrics_placeholders():
    res = deteval.evaluate(COCO_PAIRS["tm4"].load_preds(), COCO_PAIRS["tm4"].load_gt())
    tm = res.to_torchmetrics(class_metrics=False, tensors=False)
    assert tm["map_per_class"] == np.float32(-1) and isinstance(tm["map_per_class"], np.float32)
    assert tm["mar_100_per_class"] == np.float32(-1)
    assert tm["classes"].tolist() == [0, 1, 2, 3, 4, 49]


def test_keys_follow_max_dets_and_string_labels_stay_strings():
    ev = Evaluator(box_format="xywh", max_dets=[1, 5, 50])
    ev.update(
        [{"boxes": [[0.0, 0.0, 10.0, 10.0]], "scores": [0.9], "labels": ["cat"]}],
        [{"boxes": [[0.0, 0.0, 10.0, 10.0]], "labels": ["cat"]}],
    )
    tm = ev.compute().to_torchmetrics(tensors=False)
    assert [k for k in tm if k.startswith("mar_")][:3] == ["mar_1", "mar_5", "mar_50"]
    assert "mar_50_per_class" in tm and tm["map_50"] == np.float32(1.0)
    assert tm["map"] == np.float32(-1.0)  # pycocotools' stats[0] reads max dets 100, hard-coded; so does torchmetrics
    assert tm["classes"] == "cat"


def test_other_results_are_refused():
    kp = COCO_PAIRS["keypoints1"]
    with pytest.raises(ValueError, match=r"to_torchmetrics\(\) reads bbox or segm results"):
        deteval.evaluate(kp.load_preds(), kp.load_gt(), iou_type="keypoints").to_torchmetrics()
    with pytest.raises(ValueError, match=r"to_torchmetrics\(\) reads bbox or segm results"):
        deteval.evaluate(kp.load_preds(), kp.load_gt(), compat=False, max_dets=[10, 100]).to_torchmetrics()
