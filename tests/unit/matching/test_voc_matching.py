"""VOC matching rules: argmax without fallback, difficult objects, +1 pixels, the IoU test, stable ties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import deteval
from deteval.geometry.pixel_boxes import iou_matrix
from deteval.matching.groups import group_by_image_category
from deteval.matching.voc import match_voc
from deteval.types import Detections, GroundTruth, IdTable


def evaluate(dets, gt, protocol=None, **options):
    """The VOC protocols through the public API (``protocol`` is required: it has no VOC default)."""
    return deteval.evaluate(dets, gt, protocol=protocol, **options)


def make(gt_rows, dt_rows, n_images=1, classes=("a",)):
    """gt_rows: (image, class, x1, y1, x2, y2, difficult); dt_rows: (image, class, score, x1, y1, x2, y2)."""
    g = np.array(gt_rows, float).reshape(-1, 7)
    d = np.array(dt_rows, float).reshape(-1, 7)
    images = IdTable(np.array([f"im{i}" for i in range(n_images)]))
    cats = IdTable(np.arange(len(classes), dtype=np.int64), names=list(classes))
    gt = GroundTruth(
        image=g[:, 0].astype(np.int32),
        category=g[:, 1].astype(np.int32),
        boxes=g[:, 2:6].copy(),
        area=np.zeros(len(g)),
        crowd=np.zeros(len(g), bool),
        ignore=np.zeros(len(g), bool),
        difficult=g[:, 6].astype(bool),
        ann_id=np.arange(1, len(g) + 1),
        images=images,
        categories=cats,
        box_format="xyxy",
    )
    dt = Detections(
        image=d[:, 0].astype(np.int32),
        category=d[:, 1].astype(np.int32),
        boxes=d[:, 3:7].copy(),
        score=d[:, 2].copy(),
        area=np.zeros(len(d)),
        box_format="xyxy",
    )
    return dt, gt


def outcomes(dt, gt, thrs=(0.5,), **kw):
    groups = group_by_image_category(gt, dt)
    out, matched, best, best_iou = match_voc(gt.boxes, gt.difficult, dt.boxes, groups, thrs, **kw)
    return out, matched, best, best_iou


def test_plus_one_iou_values():
    # [0,0,4,4] vs [2,0,6,4]: with +1 each box is 5x5 = 25, overlap 3x5 = 15, union 35 -> 15/35;
    # without +1: 4x4 = 16 each, overlap 2x4 = 8, union 24 -> 8/24
    a, b = [[0, 0, 4, 4]], [[2, 0, 6, 4]]
    assert iou_matrix(a, b)[0, 0] == 15 / 35
    assert iou_matrix(a, b, plus_one=False)[0, 0] == 8 / 24
    # touching corners overlap by one pixel with +1: [0,0,4,4] vs [4,4,8,8] -> 1 / (25 + 25 - 1)
    assert iou_matrix(a, [[4, 4, 8, 8]])[0, 0] == 1 / 49
    assert iou_matrix(a, [[4, 4, 8, 8]], plus_one=False)[0, 0] == 0.0


def test_argmax_without_fallback():
    # GT0 [0,0,9,9], GT1 [1,0,10,9] overlap each other; both detections' best GT is GT0
    # (det [0,0,9,9] has IoU 1 with GT0 and 90/110 with GT1). The second detection is a FP
    # even though GT1 is free and overlaps it by 90/110 > .5: VOC never falls back.
    dt, gt = make(
        [(0, 0, 0, 0, 9, 9, 0), (0, 0, 1, 0, 10, 9, 0)],
        [(0, 0, 0.9, 0, 0, 9, 9), (0, 0, 0.8, 0, 0, 9, 9)],
    )
    out, matched, best, best_iou = outcomes(dt, gt)
    assert out[0].tolist() == [1, 0]
    assert matched[0].tolist() == [0, -1]
    assert best.tolist() == [0, 0]
    assert best_iou[0] == 1.0


def test_first_maximum_wins_argmax_ties():
    # two identical GT boxes: the first in file order takes the first detection, the second is never
    # anyone's argmax, so the second detection is a duplicate FP
    dt, gt = make(
        [(0, 0, 0, 0, 9, 9, 0), (0, 0, 0, 0, 9, 9, 0)],
        [(0, 0, 0.9, 0, 0, 9, 9), (0, 0, 0.8, 0, 0, 9, 9)],
    )
    out, matched, best, _ = outcomes(dt, gt)
    assert out[0].tolist() == [1, 0] and best.tolist() == [0, 0]


def test_difficult_absorbs_without_being_consumed():
    # one difficult GT: three detections on it are all ignored; a normal GT elsewhere is matched
    dt, gt = make(
        [(0, 0, 0, 0, 9, 9, 1), (0, 0, 50, 50, 59, 59, 0)],
        [(0, 0, 0.9, 0, 0, 9, 9), (0, 0, 0.8, 0, 0, 9, 9), (0, 0, 0.7, 1, 1, 9, 9), (0, 0, 0.6, 50, 50, 59, 59)],
    )
    out, matched, _, _ = outcomes(dt, gt)
    assert out[0].tolist() == [-1, -1, -1, 1]
    res = evaluate(dt, gt, protocol="voc10")
    # npos = 1 (the difficult object is not a positive); the only counted detection is a TP
    assert res.per_class[0]["npos"] == 1
    assert res.stats["mAP"] == 1.0


def test_top_detection_on_difficult_gives_no_nan():
    dt, gt = make(
        [(0, 0, 0, 0, 9, 9, 1), (0, 0, 50, 50, 59, 59, 0), (0, 0, 80, 80, 89, 89, 0)],
        [(0, 0, 0.9, 0, 0, 9, 9), (0, 0, 0.8, 50, 50, 59, 59), (0, 0, 0.7, 30, 30, 35, 35)],
    )
    for protocol in ("voc07", "voc10"):
        res = evaluate(dt, gt, protocol=protocol, integrator=["voc11", "all_points", "coco101", "non_interpolated"])
        assert all(np.isfinite(v) for v in res.stats.values())
    # ranking after dropping the ignored row: TP, FP with npos 2 -> all-point AP = .5 * 1
    assert evaluate(dt, gt, protocol="voc10").stats["mAP"] == 0.5


def test_iou_test_at_exactly_half():
    # [0,0,9,9] (10x10 = 100 px with +1) vs [0,0,9,4] (10x5 = 50 px): IoU = 50/100 = .5 exactly
    dt, gt = make([(0, 0, 0, 0, 9, 9, 0)], [(0, 0, 0.9, 0, 0, 9, 4)])
    assert outcomes(dt, gt, iou_test="gt")[0][0].tolist() == [0]  # voc_eval.py / detectron2: IoU > .5
    assert outcomes(dt, gt, iou_test="ge")[0][0].tolist() == [1]  # MATLAB devkit: IoU >= .5
    # without +1: 9x9 = 81 vs 9x4 = 36 -> 36/81 < .5
    assert outcomes(dt, gt, iou_test="ge", plus_one=False)[0][0].tolist() == [0]


def test_several_thresholds_in_one_pass():
    # IoU of the detection with its GT: [0,0,9,9] vs [0,0,9,6]: 70/100 = .7
    dt, gt = make([(0, 0, 0, 0, 9, 9, 0)], [(0, 0, 0.9, 0, 0, 9, 6)])
    out = outcomes(dt, gt, thrs=(0.5, 0.69, 0.7, 0.75))[0]
    assert out[:, 0].tolist() == [1, 1, 0, 0]


def test_stable_ties_and_global_ranking():
    # two images, equal scores: the ranking keeps input order. Input order FP (image 1) then TP (image 0):
    # precision at the TP is 1/2, so all-point AP = 1/2; reversing the input order gives 1.
    gt_rows = [(0, 0, 0, 0, 9, 9, 0)]
    fp = (1, 0, 0.5, 0, 0, 9, 9)
    tp = (0, 0, 0.5, 0, 0, 9, 9)
    dt, gt = make(gt_rows, [fp, tp], n_images=2)
    assert evaluate(dt, gt, protocol="voc10").stats["mAP"] == 0.5
    dt, gt = make(gt_rows, [tp, fp], n_images=2)
    assert evaluate(dt, gt, protocol="voc10").stats["mAP"] == 1.0
    # the tie-grouped policy does not depend on the order inside the tie: 1 TP, 1 FP at once -> 1/2
    for rows in ([fp, tp], [tp, fp]):
        dt, gt = make(gt_rows, rows, n_images=2)
        assert evaluate(dt, gt, protocol="voc10", ties="group").stats["mAP"] == 0.5


def test_classes_are_matched_separately_and_classes_without_positives_are_excluded():
    dt, gt = make(
        [(0, 0, 0, 0, 9, 9, 0)],
        [(0, 1, 0.9, 0, 0, 9, 9), (0, 0, 0.8, 0, 0, 9, 9), (0, 2, 0.7, 0, 0, 9, 9)],
        classes=("a", "b", "c"),
    )
    res = evaluate(dt, gt, protocol="voc10")
    assert [r["no_positives"] for r in res.per_class] == [False, True, True]
    assert res.per_class[1]["AP"] is None and res.per_class[1]["ndet"] == 1
    assert res.stats["mAP"] == 1.0  # only class a counts
    assert "(no positives)" in res.summary()


# --------------------------------------------------------------------------------------
# the kernel against a direct transcription of the rules (docs/protocols.md, "VOC matching"), on random scenes


def _rules(gt_rows, dt_rows, thr, ge, plus_one):
    off = 1.0 if plus_one else 0.0
    order = sorted(range(len(dt_rows)), key=lambda i: -dt_rows[i][2])  # Python's sort is stable
    taken = set()
    out = [0] * len(dt_rows)
    for d in order:
        im, c, _, *db = dt_rows[d]
        best, jbest = -1.0, None
        for j, (gim, gc, *gb, _diff) in enumerate(gt_rows):
            if (gim, gc) != (im, c):
                continue
            iw = max(min(db[2], gb[2]) - max(db[0], gb[0]) + off, 0.0)
            ih = max(min(db[3], gb[3]) - max(db[1], gb[1]) + off, 0.0)
            inter = iw * ih
            union = (
                (db[2] - db[0] + off) * (db[3] - db[1] + off) + (gb[2] - gb[0] + off) * (gb[3] - gb[1] + off) - inter
            )
            ov = inter / union if union > 0 else 0.0
            if ov > best:
                best, jbest = ov, j
        if jbest is not None and (best >= thr if ge else best > thr):
            if gt_rows[jbest][6]:
                out[d] = -1
            elif jbest in taken:
                out[d] = 0
            else:
                out[d] = 1
                taken.add(jbest)
    return out


box = st.tuples(st.integers(0, 12), st.integers(0, 12), st.integers(0, 8), st.integers(0, 8)).map(
    lambda b: (b[0], b[1], b[0] + b[2], b[1] + b[3])
)


@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1), box, st.booleans()), max_size=12),
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1), st.integers(0, 5), box), max_size=20),
    st.sampled_from([0.3, 0.5, 0.7]),
    st.booleans(),
    st.booleans(),
)
def test_kernel_equals_rules(gts, dts, thr, ge, plus_one):
    gt_rows = [(im, c, *b, int(diff)) for im, c, b, diff in gts]
    dt_rows = [(im, c, s / 5.0, *b) for im, c, s, b in dts]
    dt, gt = make(gt_rows, dt_rows, n_images=3, classes=("a", "b"))
    out = outcomes(dt, gt, (thr,), iou_test="ge" if ge else "gt", plus_one=plus_one)[0][0]
    assert out.tolist() == _rules(gt_rows, dt_rows, thr, ge, plus_one)


def test_validation():
    dt, gt = make([(0, 0, 0, 0, 9, 9, 0)], [(0, 0, 0.9, 0, 0, 9, 9)])
    with pytest.raises(ValueError, match="iou_test"):
        outcomes(dt, gt, iou_test=">")
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        outcomes(dt, gt, thrs=(0.0,))
    with pytest.raises(ValueError, match="protocol"):
        evaluate(dt, gt)


def test_nan_overlap_is_voc_evals_max_and_argmax():
    """Overflowing boxes give a NaN IoU; voc_eval's np.max is then NaN and np.argmax its first index: a FP."""
    gt_rows = [(0, 0, 0, 0, 2, 2, 0), (0, 0, 0, 0, 1e200, 1e200, 0)]
    dt_rows = [(0, 0, 0.9, 0, 0, 1e200, 1e200)]
    dt, gt = make(gt_rows, dt_rows)
    overlaps = []
    for g in gt.boxes:  # voc_eval's arithmetic, vectorised over one ground truth at a time
        b = dt.boxes[0]
        with np.errstate(over="ignore", invalid="ignore"):
            iw = np.maximum(np.minimum(g[2], b[2]) - np.maximum(g[0], b[0]) + 1.0, 0.0)
            ih = np.maximum(np.minimum(g[3], b[3]) - np.maximum(g[1], b[1]) + 1.0, 0.0)
            inters = iw * ih
            uni = (b[2] - b[0] + 1.0) * (b[3] - b[1] + 1.0) + (g[2] - g[0] + 1.0) * (g[3] - g[1] + 1.0) - inters
            overlaps.append(inters / uni)
    assert np.isnan(overlaps[1]) and not np.isnan(overlaps[0])
    with np.errstate(invalid="ignore"):
        out, _, best, best_iou = outcomes(dt, gt)
    assert best.tolist() == [int(np.argmax(overlaps))] and np.isnan(best_iou[0]) == np.isnan(np.max(overlaps))
    assert out[0].tolist() == [0]
