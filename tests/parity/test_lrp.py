"""deteval.lrp.optimal_lrp against vernier 0.5.4's optimal_lrp: the shared pairs and generated datasets.

Tolerance 1e-12 on every figure: vernier computes IoU in its own code and sums ``1 - IoU`` in
its own order, so the localisation sums can differ in the last bits (on the shared pairs they are
equal to the bit). The score threshold ``s*`` is compared exactly, except where two grid points'
LRP values are within that tolerance of each other (then either is the minimum up to rounding).
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from conftest import COCO_PAIRS, DATA_DIR
from hypothesis import HealthCheck, given, settings
from strategies_stats import stats_cases

from deteval.lrp import default_score_grid, evaluate_with_ious, optimal_lrp

vernier = pytest.importorskip("vernier")
from vernier.instance import Segm  # noqa: E402
from vernier.instance import optimal_lrp as vernier_lrp  # noqa: E402

TOL = 1e-12
FAKE100_GT = DATA_DIR / "coco_fake100" / "instances_val2014_100.json"
FAKE100_SEGM = DATA_DIR / "coco_fake100" / "instances_val2014_fakesegm100_results.json"


def _with_boxes(results: list[dict]) -> list[dict]:
    """Mask results with the box pycocotools' loadRes gives them (vernier's reader wants one)."""
    from pycocotools import mask as mask_utils

    return [{**r, "bbox": [float(v) for v in mask_utils.toBbox(r["segmentation"])]} for r in results]


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= TOL


def _lrp_curve(result, category_id) -> np.ndarray:
    """LRP of one class at every grid point, from deteval's outcomes (for near-tie checks)."""
    out = result.outcomes
    k = int(np.flatnonzero(out.category_ids == category_id)[0])
    t = int(np.flatnonzero(np.isclose(out.iou_thrs, 0.5))[0])
    st = out.state[:, 0, t]
    sel = (out.category == k) & (st != 2)
    score, tp, iou = out.score[sel], st[sel] == 1, out.match_iou[sel, t]
    npos = int(out.npos[k, 0])
    vals = []
    for s in default_score_grid():
        on = score >= s
        ntp = int((on & tp).sum())
        nfp = int(on.sum()) - ntp
        vals.append(((1 - iou[on & tp]).sum() / 0.5 + nfp + npos - ntp) / (npos + nfp))
    return np.array(vals)


def assert_same_as_vernier(gt: dict, results: list[dict], iou_type: str = "bbox") -> None:
    ref = vernier_lrp(json.dumps(gt).encode(), json.dumps(results).encode(), iou=Segm() if iou_type == "segm" else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. results in categories without ground truth
        res = evaluate_with_ious(results, gt, iou_type=iou_type)
    mine = optimal_lrp(res)
    for name, a, b in (("olrp", mine.olrp, ref.olrp), ("loc", mine.loc, ref.loc), ("fp", mine.fp, ref.fp),
                       ("fn", mine.fn, ref.fn)):  # fmt: skip
        assert _close(a, b), (name, a, b)
    assert mine.n_empty_classes == ref.n_empty_classes
    ours = {c.category_id: c for c in mine.per_class}
    assert sorted(ours) == sorted(c.category_id for c in ref.per_class)
    for c in ref.per_class:
        m = ours[c.category_id]
        for name, a, b in (("olrp", m.olrp, c.olrp), ("loc", m.loc, c.olrp_loc), ("fp", m.fp, c.olrp_fp),
                           ("fn", m.fn, c.olrp_fn)):  # fmt: skip
            assert _close(a, b), (c.category_id, name, a, b)
        if not (math.isnan(m.score_thr) and math.isnan(c.tau)) and m.score_thr != c.tau:
            curve = _lrp_curve(res, c.category_id)
            grid = default_score_grid()
            assert abs(curve[grid == c.tau][0] - curve.min()) <= TOL, (c.category_id, m.score_thr, c.tau)


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


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(stats_cases())
def test_generated_bbox(case):
    assert_same_as_vernier(*case)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(stats_cases(segm=True))
def test_generated_segm(case):
    assert_same_as_vernier(*case, iou_type="segm")


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
