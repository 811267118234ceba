"""deteval.analysis.lrp.optimal_lrp against vernier 0.5.4's optimal_lrp: the shared pairs and generated datasets.

Every figure, per class and mean, and every class's score threshold ``s*`` equal to the bit: both
have pycocotools' IoUs (vernier computes its own, equal to the bit), sum ``1 - IoU`` in score order
and evaluate LRP with the same association (``test_exact_tie_falls_as_in_vernier`` shows why the
last matters)."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from conftest import COCO_PAIRS, DATA_DIR
from hypothesis import HealthCheck, given, settings
from support.examples import examples
from support.strategies_stats import stats_cases

from deteval.analysis.lrp import evaluate_with_ious, optimal_lrp

vernier = pytest.importorskip("vernier")
from vernier.instance import Segm  # noqa: E402
from vernier.instance import optimal_lrp as vernier_lrp  # noqa: E402

FAKE100_GT = DATA_DIR / "coco_fake100" / "instances_val2014_100.json"
FAKE100_SEGM = DATA_DIR / "coco_fake100" / "instances_val2014_fakesegm100_results.json"


def _with_boxes(results: list[dict]) -> list[dict]:
    """Mask results with the box pycocotools' loadRes gives them (vernier's reader wants one)."""
    from pycocotools import mask as mask_utils

    return [{**r, "bbox": [float(v) for v in mask_utils.toBbox(r["segmentation"])]} for r in results]


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _class_at(result, category_id, score_thr: float):
    """deteval's figures of one class read at one score threshold (a one-point grid)."""
    return next(c for c in optimal_lrp(result, score_grid=[score_thr]).per_class if c.category_id == category_id)


def assert_same_as_vernier(gt: dict, results: list[dict], iou_type: str = "bbox") -> None:
    ref = vernier_lrp(json.dumps(gt).encode(), json.dumps(results).encode(), iou=Segm() if iou_type == "segm" else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. results in categories without ground truth
        mine = optimal_lrp(evaluate_with_ious(results, gt, iou_type=iou_type))
    for name, a, b in (("olrp", mine.olrp, ref.olrp), ("loc", mine.loc, ref.loc), ("fp", mine.fp, ref.fp),
                       ("fn", mine.fn, ref.fn)):  # fmt: skip
        assert _same(a, b), (name, a, b)
    assert mine.n_empty_classes == ref.n_empty_classes
    ours = {c.category_id: c for c in mine.per_class}
    assert sorted(ours) == sorted(c.category_id for c in ref.per_class)
    for c in ref.per_class:
        m = ours[c.category_id]
        for name, a, b in (("olrp", m.olrp, c.olrp), ("loc", m.loc, c.olrp_loc), ("fp", m.fp, c.olrp_fp),
                           ("fn", m.fn, c.olrp_fn), ("s*", m.score_thr, c.tau)):  # fmt: skip
            assert _same(a, b), (c.category_id, name, a, b)


@pytest.mark.parametrize("name", list(COCO_PAIRS))
def test_pairs_bbox(name):
    pair = COCO_PAIRS[name]
    assert_same_as_vernier(pair.load_gt(), pair.load_preds())


def test_coco_fake100_segm():
    gt = json.loads(FAKE100_GT.read_text())
    assert_same_as_vernier(gt, _with_boxes(json.loads(FAKE100_SEGM.read_text())), "segm")


def test_polygons3_segm():
    """Polygon results (they carry their box)."""
    poly = DATA_DIR / "polygons3"
    assert_same_as_vernier(
        json.loads((poly / "gt_dataset.json").read_text()), json.loads((poly / "dt_dataset.json").read_text()), "segm"
    )


def test_coco_fake100_figures():
    """The figures of the one real pair, as vernier 0.5.4 gives them (a regression pin; the parity
    tests above run vernier itself)."""
    pair = COCO_PAIRS["coco_fake100"]
    res = optimal_lrp(evaluate_with_ious(str(pair.dt_path), str(pair.gt_path)))
    assert (round(res.olrp, 6), round(res.loc, 6), round(res.fp, 6), round(res.fn, 6)) == (
        0.501487, 0.265937, 0.123717, 0.231174,
    )  # fmt: skip
    assert res.n_empty_classes == 10


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(stats_cases())
def test_generated_bbox(case):
    assert_same_as_vernier(*case)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(stats_cases(segm=True))
def test_generated_segm(case):
    assert_same_as_vernier(*case, iou_type="segm")


def test_exact_tie_falls_as_in_vernier():
    """Found by test_generated_segm in CI: a true positive at IoU exactly 1/2 (image 2) leaves LRP unchanged,
    so the thresholds 0.5 and 0.9 tie in exact arithmetic and the last bit of the sums decides. deteval
    added the false negatives and positives to the float one at a time and took 0.5 (2 TPs), vernier adds
    their sum and takes 0.9 (1 TP), with other components; deteval now sums as vernier does."""

    def square(x, y, w, h):
        return {"bbox": [x, y, w, h], "area": float(w * h), "iscrowd": 0, "category_id": 1,
                "segmentation": [[x, y, x + w, y, x + w, y + h, x, y + h]]}  # fmt: skip

    boxes = [(1, (0, 1, 1, 1)), (1, (0, 0, 27, 15)), (1, (0, 1, 1, 1))] + [(2, (0, 0, 1, 2))] * 5
    gt = {
        "images": [{"id": i, "width": 128, "height": 128} for i in (1, 2)],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [{"id": k + 1, "image_id": i, **square(*b)} for k, (i, b) in enumerate(boxes)],
    }
    big = "2?a3" + "0" * 59 + "nS<"  # the rows 2-16 of columns 0-30
    masks = ((1, 0.9, big), (1, 0.9, "01oo?"), (2, 0.5, "01oo?"))
    results = _with_boxes(
        [
            {"image_id": i, "category_id": 1, "score": s, "segmentation": {"size": [128, 128], "counts": c}}
            for i, s, c in masks
        ]
    )
    res = evaluate_with_ious(results, gt, iou_type="segm")
    assert 0.5 in res.outcomes.match_iou[:, 0]
    at = [_class_at(res, 1, s) for s in (0.5, 0.9)]
    assert [(c.tp, c.fp_count) for c in at] == [(2, 1), (1, 1)] and abs(at[0].olrp - at[1].olrp) < 1e-15
    mine = optimal_lrp(res).per_class[0]
    ref = vernier_lrp(json.dumps(gt).encode(), json.dumps(results).encode(), iou=Segm()).per_class[0]
    assert (mine.score_thr, mine.olrp, mine.loc, mine.fp, mine.fn) == (ref.tau, ref.olrp, ref.olrp_loc,
                                                                       ref.olrp_fp, ref.olrp_fn)  # fmt: skip


def test_needs_match_ious():
    import deteval

    pair = COCO_PAIRS["tm4"]
    with pytest.raises(ValueError, match="evaluate_with_ious"):
        optimal_lrp(deteval.evaluate(pair.load_preds(), pair.load_gt()))
    with pytest.raises(ValueError, match="not one of"):
        optimal_lrp(evaluate_with_ious(pair.load_preds(), pair.load_gt()), iou_thr=0.42)


def test_max_dets_cut_per_image_and_class():
    """More than 100 results in an image: both cut per (image, class) to 100, as COCO does."""
    rng = np.random.default_rng(0)
    anns, dets = [], []
    for c in (1, 2):
        for j in range(30):
            anns.append({"id": len(anns) + 1, "image_id": 1, "category_id": c, "bbox": [j * 4.0, c * 40.0, 3.0, 3.0],
                         "area": 9.0, "iscrowd": 0})  # fmt: skip
        for j in range(80 if c == 1 else 160):
            dets.append({"image_id": 1, "category_id": c, "bbox": [(j % 30) * 4.0, c * 40.0, 3.0, 3.0],
                         "score": float(rng.uniform(0, 1))})  # fmt: skip
    gt = {"images": [{"id": 1, "width": 200, "height": 200}], "annotations": anns,
          "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]}  # fmt: skip
    assert_same_as_vernier(gt, dets)
