"""COCO with ``iou_type="obb"`` (oriented boxes) against hotcoco 1.3.0's ``COCOeval(..., "obb")``.

The stored fixture (tests/data/obb, seeded generator) and hypothesis-generated datasets: the 12 stats within
1e-12 of hotcoco's. Both compute the IoU of two rotated rectangles exactly up to rounding, by different
methods, so an IoU that is exactly a threshold (0.5 between axis-aligned boxes on integer coordinates, say)
can land on either side in either tool: a differing case is accepted only where some IoU lies within 1e-9
of a threshold, and counted (``FLIPS``): in runs of 3,000 generated datasets at the time of writing, 10 (before
negative sizes were drawn), 0 and 1 differed, each with an IoU within 1e-9 of a threshold. Degenerate ground
truth is the one known divergence (``test_degenerate_ground_truth``).
"""

from __future__ import annotations

import json
import pathlib
import sys
import warnings

import pytest
from hypothesis import given, settings
from support.strategies_obb import near_threshold, obb_datasets

import deteval
from deteval.errors import InputError

hotcoco = pytest.importorskip("hotcoco")

DATA = pathlib.Path(__file__).parent.parent / "data" / "obb"
KEYS = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")
FLIPS = {"cases": 0, "flipped": 0}


def hotcoco_stats(preds: list, gt: dict) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "oriented-box evaluation has no reference implementation"
        coco = hotcoco.COCO(gt)
        ev = hotcoco.COCOeval(coco, coco.loadRes(preds), "obb")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev.get_results()


def deteval_stats(preds: list, gt: dict) -> dict:
    return deteval.evaluate(preds, gt, iou_type="obb").stats


def differing(got: dict, want: dict) -> list[str]:
    assert set(got) == set(KEYS) == set(want)
    return [k for k in KEYS if not abs(got[k] - want[k]) <= 1e-12]


def test_fixture_is_its_generator():
    sys.path.insert(0, str(DATA))
    try:
        import make_obb
    finally:
        sys.path.remove(str(DATA))
    gt_text, dets_text = make_obb.texts()
    assert (DATA / "gt.json").read_text() == gt_text and (DATA / "dets.json").read_text() == dets_text


def test_fixture_against_hotcoco():
    gt, preds = json.loads((DATA / "gt.json").read_text()), json.loads((DATA / "dets.json").read_text())
    got, want = deteval_stats(preds, gt), hotcoco_stats(preds, gt)
    assert differing(got, want) == []
    # the fixture reaches every area range, crowd regions and given areas
    assert all(got[k] > 0 for k in KEYS)
    anns = gt["annotations"]
    assert any(a["iscrowd"] for a in anns) and any("area" in a for a in anns)


def _gt(anns: list, n_images: int = 1) -> dict:
    return {
        "images": [{"id": i, "width": 100, "height": 100} for i in range(1, n_images + 1)],
        "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
        "annotations": [{"id": i + 1, "image_id": 1, "category_id": 1, "iscrowd": 0, **a} for i, a in enumerate(anns)],
    }


def test_area_rule():
    """A ground truth's area is its ``area`` when given, else the oriented box's w*h (not its bbox's); a
    detection's is always w*h: a 40 x 20 box is small, its given area 5000 medium, a 100 x 100 bbox ignored."""
    box = [50.0, 50.0, 40.0, 20.0, 0.3]
    preds = [{"image_id": 1, "category_id": 1, "obb": box, "score": 0.9}]
    for extra, small in (({}, True), ({"bbox": [0, 0, 100, 100]}, True), ({"area": 5000.0}, False)):
        gt = _gt([{"obb": box, **extra}])
        got, want = deteval_stats(preds, gt), hotcoco_stats(preds, gt)
        assert differing(got, want) == []
        assert (got["APs"] > 0.99, got["APm"] > 0.99) == (small, not small)
    # the detection's area is its own w*h: a large detection on a small GT is not in the small range
    preds = [{"image_id": 1, "category_id": 1, "obb": [50.0, 50.0, 40.0, 20.0, 0.3], "score": 0.9},
             {"image_id": 1, "category_id": 1, "obb": [10.0, 10.0, 200.0, 100.0, 0.0], "score": 0.8}]  # fmt: skip
    gt = _gt([{"obb": box}])
    assert differing(deteval_stats(preds, gt), hotcoco_stats(preds, gt)) == []


def test_result_with_a_bbox_is_refused():
    """hotcoco takes such a result's area from its bbox; deteval refuses it, naming the record."""
    preds = [
        {"image_id": 1, "category_id": 1, "obb": [50.0, 50.0, 40.0, 20.0, 0.3], "score": 0.9},
        {"image_id": 1, "category_id": 1, "obb": [5.0, 5, 4, 2, 0], "score": 0.8, "bbox": [3, 4, 4, 2]},
    ]
    with pytest.raises(InputError, match=r"results\[1\].*both 'obb' and 'bbox'"):
        deteval.evaluate(preds, _gt([{"obb": [50.0, 50.0, 40.0, 20.0, 0.3]}]), iou_type="obb")


def test_crowd_ground_truth():
    """A crowd GT is matched by intersection over the detection's area, and its matches are ignored."""
    gt = _gt([{"obb": [50.0, 50.0, 60.0, 60.0, 0.4], "iscrowd": 1}, {"obb": [20.0, 20.0, 10.0, 12.0, 0.0]}])
    preds = [{"image_id": 1, "category_id": 1, "obb": [50.0, 52.0, 10.0, 10.0, 1.0], "score": 0.9},
             {"image_id": 1, "category_id": 1, "obb": [50.0, 50.0, 20.0, 80.0, -0.2], "score": 0.85},
             {"image_id": 1, "category_id": 1, "obb": [21.0, 20.0, 10.0, 12.0, 0.1], "score": 0.7}]  # fmt: skip
    got = deteval_stats(preds, gt)
    assert differing(got, hotcoco_stats(preds, gt)) == []
    assert got["AP50"] > 0.99  # the detections inside the crowd region are not false positives


@pytest.mark.parametrize(
    "obb, rule",
    [([1.0, 2.0, 3.0, 4.0], r"obb must be a list of 5 numbers"), ([1.0, 2.0, 3.0, 4.0, float("nan")], "not finite"),
     ([1.0, 2.0, "3", 4.0, 0.0], "obb must be numeric"), (None, "obb must be a list of 5 numbers")],
)  # fmt: skip
def test_bad_obb(tmp_path, obb, rule):
    good = [50.0, 50.0, 40.0, 20.0, 0.3]
    gt_path, dt_path = tmp_path / "gt.json", tmp_path / "dt.json"
    gt_path.write_text(json.dumps(_gt([{"obb": good}, {"obb": obb}])))
    dt_path.write_text(json.dumps([{"image_id": 1, "category_id": 1, "obb": good, "score": 0.5}]))
    with pytest.raises(InputError, match=rf"gt\.json.*annotations\[1\] \(id=2\).*{rule}"):
        deteval.evaluate(str(dt_path), str(gt_path), iou_type="obb")
    gt_path.write_text(json.dumps(_gt([{"obb": good}])))
    dt_path.write_text(json.dumps([{"image_id": 1, "category_id": 1, "obb": good, "score": 0.5},
                                   {"image_id": 1, "category_id": 1, "obb": obb, "score": 0.5}]))  # fmt: skip
    with pytest.raises(InputError, match=rf"dt\.json.*results\[1\].*{rule}"):
        deteval.evaluate(str(dt_path), str(gt_path), iou_type="obb")
    dt_path.write_text(json.dumps([{"image_id": 1, "category_id": 1, "score": 0.5}]))
    with pytest.raises(InputError, match=r"results\[0\].*missing key 'obb'"):
        deteval.evaluate(str(dt_path), str(gt_path), iou_type="obb")


def test_cli(tmp_path):
    from deteval.cli import main

    out = tmp_path / "out.json"
    assert main(["--iou-type", "obb", "--json", str(out), str(DATA / "dets.json"), str(DATA / "gt.json")]) == 0
    gt, preds = json.loads((DATA / "gt.json").read_text()), json.loads((DATA / "dets.json").read_text())
    assert differing(json.loads(out.read_text())["stats"], hotcoco_stats(preds, gt)) == []


def test_degenerate_ground_truth():
    """Where deteval and hotcoco differ: a ground truth of nonzero area whose sides are both below about 1e-14
    is matched by any detection in hotcoco 1.3.0, wherever it lies (not one of 1e-10 x 1e-20, nor of zero area);
    its IoU is 0 in deteval (exactly: the boxes are apart)."""
    preds = [{"image_id": 1, "category_id": 1, "obb": [0.0, 0.0, 10.0, 0.5, -1.0], "score": 0.5}]
    gt = _gt([{"obb": [30.0, 30.0, 1e-15, 1e-15, 0.0]}])
    assert deteval_stats(preds, gt)["AR100"] == 0.0
    assert hotcoco_stats(preds, gt)["AR100"] == 1.0
    gt = _gt([{"obb": [30.0, 30.0, 1e-10, 1e-20, 0.0]}])
    assert deteval_stats(preds, gt)["AR100"] == hotcoco_stats(preds, gt)["AR100"] == 0.0


# ------------------------------------------------------------------------------------------------
# generated datasets
# ------------------------------------------------------------------------------------------------


@settings(max_examples=max(1, settings().max_examples // 2), deadline=None)
@given(obb_datasets(negative_sizes=True))
def test_generated_against_hotcoco(case):
    preds, gt = case
    got, want = deteval_stats(preds, gt), hotcoco_stats(preds, gt)
    FLIPS["cases"] += 1
    if differing(got, want):
        assert near_threshold(preds, gt), (differing(got, want), got, want, json.dumps([preds, gt]))
        FLIPS["flipped"] += 1
