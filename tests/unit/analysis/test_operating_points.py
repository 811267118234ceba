"""Score-threshold curves and operating points (deteval.analysis.operating_points) read from EvalResult.outcomes.

Expected values are derived by hand (tiny example, derivation in comments), by brute force
(recounting TP/FP with a Python loop at every threshold) or from pycocotools-exact arrays
of the same evaluation (recall and the 101-point precision).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from conftest import COCO_PAIRS

import deteval
from deteval.analysis.operating_points import (
    best_operating_points,
    default_iou,
    operating_points_at,
    score_curves,
)
from deteval.result import Outcomes

# --------------------------------------------------------------------------------------
# a hand-derived example


def _outcomes(category, score, state, npos, names=None, image=None, iou_thrs=(0.5,)) -> Outcomes:
    n, k = len(score), len(npos)
    st = np.asarray(state, np.int8)
    st = (st[:, None] if st.ndim == 1 else st).reshape(n, 1, -1 if n else len(iou_thrs))
    return Outcomes(
        category=np.asarray(category, np.int32),
        image=np.zeros(n, np.int32) if image is None else np.asarray(image, np.int32),
        score=np.asarray(score, np.float64),
        state=np.repeat(st, len(iou_thrs), axis=2) if st.shape[2] == 1 else st,
        npos=np.asarray(npos, np.int64).reshape(k, 1),
        iou_thrs=np.asarray(iou_thrs, np.float64),
        area_labels=("all",),
        category_ids=np.arange(1, k + 1),
        category_names=tuple(names or [f"c{i}" for i in range(k)]),
    )


# class A (index 0), 3 ground truth; class B (1), none; class C (2), 2 ground truth and no detection.
# A's detections: 0.9 TP, 0.8 FP, 0.8 TP, 0.7 ignored, 0.6 TP, 0.5 FP; B's: 0.95 FP.
HAND = _outcomes(
    category=[0, 0, 0, 0, 0, 0, 1],
    score=[0.9, 0.8, 0.8, 0.7, 0.6, 0.5, 0.95],
    state=[1, 0, 1, 2, 1, 0, 0],
    npos=[3, 0, 2],
    names=["A", "B", "C"],
)


def test_hand_example_class_curve():
    c = score_curves(HAND).classes[0]
    # A without the ignored 0.7: thresholds 0.9, 0.8 (the tie enters together), 0.6, 0.5
    #   0.9: TP 1 FP 0 -> P 1,   R 1/3, F1 = 2*(1/3)/(4/3) = 1/2
    #   0.8: TP 2 FP 1 -> P 2/3, R 2/3, F1 = 2/3
    #   0.6: TP 3 FP 1 -> P 3/4, R 1,   F1 = 1.5/1.75 = 6/7
    #   0.5: TP 3 FP 2 -> P 3/5, R 1,   F1 = 1.2/1.6 = 3/4
    assert c.thresholds.tolist() == [0.9, 0.8, 0.6, 0.5]
    assert c.tp.tolist() == [1, 2, 3, 3]
    assert c.fp.tolist() == [0, 1, 1, 2]
    np.testing.assert_allclose(c.precision, [1, 2 / 3, 3 / 4, 3 / 5], rtol=1e-15)
    np.testing.assert_allclose(c.recall, [1 / 3, 2 / 3, 1, 1], rtol=1e-15)
    np.testing.assert_allclose(c.fbeta, [1 / 2, 2 / 3, 6 / 7, 3 / 4], rtol=1e-15)
    # raw curve in rank order (the tied 0.8 pair keeps row order: FP first)
    #   TP so far 1,1,2,3,3 over 1..5 detections; envelope = max from the right
    assert c.raw_tp.tolist() == [1, 1, 2, 3, 3]
    np.testing.assert_allclose(c.raw_precision, [1, 1 / 2, 2 / 3, 3 / 4, 3 / 5], rtol=1e-15)
    np.testing.assert_allclose(c.raw_recall, [1 / 3, 1 / 3, 2 / 3, 1, 1], rtol=1e-15)
    np.testing.assert_allclose(c.envelope, [1, 3 / 4, 3 / 4, 3 / 4, 3 / 5], rtol=1e-15)
    assert c.max_recall == 1.0
    best = c.best()
    assert (best.threshold, best.tp, best.fp) == (0.6, 3, 1)
    assert best.fbeta == pytest.approx(6 / 7, rel=1e-15)


def test_hand_example_class_without_gt_and_without_detections():
    curves = score_curves(HAND)
    b, c = curves.classes[1], curves.classes[2]
    # B: one FP at 0.95, no ground truth: precision 0, recall and F undefined
    assert b.tp.tolist() == [0] and b.fp.tolist() == [1]
    assert b.precision.tolist() == [0.0]
    assert math.isnan(b.recall[0]) and math.isnan(b.fbeta[0]) and math.isnan(b.max_recall)
    pb = b.best()  # no best point without ground truth
    assert math.isnan(pb.threshold) and (pb.tp, pb.fp) == (0, 0) and math.isnan(pb.fbeta)
    # C: 2 ground truth, nothing detected: empty curve, best point keeps nothing, F 0, R 0, P undefined
    assert len(c.thresholds) == 0 and c.max_recall == 0.0
    pc = c.best()
    assert (pc.tp, pc.fp, pc.recall, pc.fbeta) == (0, 0, 0.0, 0.0)
    assert math.isnan(pc.precision) and math.isnan(pc.threshold)


def test_hand_example_micro_and_macro():
    pts = best_operating_points(HAND)
    # pooled, npos 5: 0.95 F(B), 0.9 T, 0.8 F, 0.8 T, 0.6 T, 0.5 F
    #   0.95: TP0 FP1 F 0; 0.9: TP1 FP1 P .5 R .2 F 2/7; 0.8: TP2 FP2 P .5 R .4 F 4/9
    #   0.6: TP3 FP2 P .6 R .6 F .6 (best); 0.5: TP3 FP3 P .5 R .6 F 6/11
    m = pts.micro
    assert (m.name, m.threshold, m.tp, m.fp, m.npos) == ("micro", 0.6, 3, 2, 5)
    assert m.fbeta == pytest.approx(0.6, rel=1e-15)
    # macro over A and C (B has no ground truth): A's best (P 3/4, R 1, F 6/7), C's (P undefined -> 0, R 0, F 0)
    M = pts.macro
    assert M.precision == pytest.approx(3 / 8, rel=1e-15)
    assert M.recall == pytest.approx(1 / 2, rel=1e-15)
    assert M.fbeta == pytest.approx(3 / 7, rel=1e-15)
    assert (M.tp, M.fp, M.npos) == (3, 1, 5)
    assert math.isnan(M.threshold)


def test_hand_example_at_threshold():
    pts = operating_points_at(HAND, 0.85)
    a, b, c = pts.classes
    # keep score >= 0.85: A 0.9 TP; B 0.95 FP; C nothing
    assert (a.tp, a.fp, a.precision, a.fbeta) == (1, 0, 1.0, pytest.approx(0.5, rel=1e-15))
    assert a.recall == pytest.approx(1 / 3, rel=1e-15)
    assert (b.tp, b.fp, b.precision) == (0, 1, 0.0) and math.isnan(b.recall)
    assert (c.tp, c.fp, c.recall, c.fbeta) == (0, 0, 0.0, 0.0) and math.isnan(c.precision)
    # micro: TP 1, FP 1, npos 5 -> P .5, R .2, F 2*.1/.7 = 2/7
    assert (pts.micro.tp, pts.micro.fp) == (1, 1)
    assert pts.micro.fbeta == pytest.approx(2 / 7, rel=1e-15)
    # macro over A and C: P (1 + 0)/2, R (1/3 + 0)/2, F (1/2 + 0)/2
    assert pts.macro.precision == pytest.approx(1 / 2, rel=1e-15)
    assert pts.macro.recall == pytest.approx(1 / 6, rel=1e-15)
    assert pts.macro.fbeta == pytest.approx(1 / 4, rel=1e-15)
    # a threshold between scores equals the next score up; exactly at a score keeps the tie
    assert operating_points_at(HAND, 0.8).classes[0].tp == 2
    assert operating_points_at(HAND, 0.80001).classes[0].tp == 1
    assert operating_points_at(HAND, 2.0).classes[0].tp == 0


def test_beta_weights_recall():
    # A at 0.6 with beta 2: 5 * .75 * 1 / (4 * .75 + 1) = 3.75 / 4; at 0.5: 5 * .6 / 3.4
    c = score_curves(HAND, beta=2.0).classes[0]
    assert c.fbeta[2] == pytest.approx(3.75 / 4, rel=1e-15)
    assert c.fbeta[3] == pytest.approx(3.0 / 3.4, rel=1e-15)
    assert best_operating_points(HAND, beta=2.0).f_name == "F2"
    assert best_operating_points(HAND, beta=0.5).f_name == "F0.5"


# --------------------------------------------------------------------------------------
# brute force on random outcomes


def _random_outcomes(seed: int) -> Outcomes:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 5))
    n = int(rng.integers(0, 60))
    cat = rng.integers(0, k, n)
    score = rng.choice(np.round(rng.random(8), 2), n)  # few distinct values: many ties
    state = rng.choice([0, 1, 2], size=(n, 1, 2), p=[0.45, 0.4, 0.15])
    npos = np.array([[(state[cat == c, 0, t] == 1).sum() for t in range(2)] for c in range(k)]).max(axis=1)
    npos = npos + rng.integers(0, 3, k) * (rng.random(k) < 0.8)
    out = _outcomes(cat, score, state[:, 0, :], npos, image=rng.integers(0, 5, n), iou_thrs=(0.5, 0.75))
    return out


def _brute(score, state, thr):
    tp = sum(1 for s, st in zip(score, state) if s >= thr and st == 1)
    fp = sum(1 for s, st in zip(score, state) if s >= thr and st == 0)
    return tp, fp


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("beta", [1.0, 0.5, 3.0])
def test_brute_force_counts(seed, beta):
    out = _random_outcomes(seed)
    for t, iou in enumerate((0.5, 0.75)):
        curves = score_curves(out, iou_thr=iou, beta=beta)
        for k, c in enumerate(curves.classes):
            sel = [i for i in range(len(out.score)) if out.category[i] == k and out.state[i, 0, t] != 2]
            sc = [float(out.score[i]) for i in sel]
            st = [int(out.state[i, 0, t]) for i in sel]
            assert c.thresholds.tolist() == sorted(set(sc), reverse=True)
            npos = int(out.npos[k, 0])
            for j, thr in enumerate(c.thresholds):
                tp, fp = _brute(sc, st, thr)
                assert (c.tp[j], c.fp[j]) == (tp, fp)
                p = tp / (tp + fp)
                assert c.precision[j] == p
                if npos == 0:
                    assert math.isnan(c.recall[j]) and math.isnan(c.fbeta[j])
                else:
                    r = tp / npos
                    f = 0.0 if tp == 0 else (1 + beta**2) * p * r / (beta**2 * p + r)
                    assert c.recall[j] == r
                    assert c.fbeta[j] == pytest.approx(f, rel=1e-14, abs=0)
            # at arbitrary thresholds, between and beyond the scores
            for thr in [-1.0, 0.0, 0.33, 0.5, 0.999, 5.0, *sc[:3]]:
                pt = c.at(thr)
                assert (pt.tp, pt.fp) == _brute(sc, st, thr)
            if npos > 0 and len(c.thresholds):
                best = c.best()
                assert all(best.fbeta >= f for f in c.fbeta)
                # ties go to the highest threshold
                assert best.threshold == c.thresholds[int(np.argmax(c.fbeta))]
            # raw curve: counts in rank order, descending scores, envelope is the suffix max
            assert np.all(np.diff(c.raw_score) <= 0)
            assert c.raw_tp.tolist() == np.cumsum([s == 1 for s in sorted_states(sc, st)]).tolist()
            for i in range(len(c.envelope)):
                assert c.envelope[i] == max(c.raw_precision[i:])
        # micro: pooled counts over every class
        m = curves.micro
        sel = [i for i in range(len(out.score)) if out.state[i, 0, t] != 2]
        sc = [float(out.score[i]) for i in sel]
        st = [int(out.state[i, 0, t]) for i in sel]
        for j, thr in enumerate(m.thresholds):
            assert (m.tp[j], m.fp[j]) == _brute(sc, st, thr)
        assert m.npos == int(out.npos[:, 0].sum())


def sorted_states(sc, st):
    """States in descending score order, ties in row order (a stable sort)."""
    return [s for _, s in sorted(zip(sc, st), key=lambda p: -p[0])]


@pytest.mark.parametrize("seed", range(15))
def test_macro_and_micro_from_per_class(seed):
    out = _random_outcomes(seed)
    for thr in (0.0, 0.4, 0.8):
        pts = operating_points_at(out, thr)
        with_gt = [p for p in pts.classes if p.npos > 0]
        assert pts.micro.tp == sum(p.tp for p in pts.classes)
        assert pts.micro.fp == sum(p.fp for p in pts.classes)
        if with_gt:
            assert pts.macro.fbeta == pytest.approx(np.mean([p.fbeta for p in with_gt]), rel=1e-14)
            prec = [0.0 if math.isnan(p.precision) else p.precision for p in with_gt]
            assert pts.macro.precision == pytest.approx(np.mean(prec), rel=1e-14)
            assert pts.macro.recall == pytest.approx(np.mean([p.recall for p in with_gt]), rel=1e-14)


# --------------------------------------------------------------------------------------
# validation


def test_input_validation():
    with pytest.raises(ValueError, match="beta"):
        score_curves(HAND, beta=0)
    for bad in (-1.0, math.nan, math.inf, True, "1"):
        with pytest.raises(ValueError, match="beta"):
            best_operating_points(HAND, beta=bad)
    for bad in (math.nan, math.inf, -math.inf, None, "0.5"):
        with pytest.raises(ValueError, match="score_thr"):
            operating_points_at(HAND, bad)
    with pytest.raises(ValueError, match=r"choose one of \[0\.5\]"):
        score_curves(HAND, iou_thr=0.42)
    with pytest.raises(ValueError, match=r"choose one of \['all'\]"):
        score_curves(HAND, area="small")
    with pytest.raises(TypeError):
        score_curves({"not": "a result"})
    res = deteval.evaluate(*_sample())
    with pytest.raises(ValueError, match="outcomes"):
        score_curves(dataclasses.replace(res, outcomes=None))


def _sample():
    from deteval.cli import sample_pair

    return sample_pair()


# --------------------------------------------------------------------------------------
# consistency with COCO's own arrays (pycocotools-exact) on the bundled data


@pytest.fixture(scope="module", params=list(COCO_PAIRS), ids=list(COCO_PAIRS))
def coco_result(request):
    pair = COCO_PAIRS[request.param]
    return deteval.evaluate(pair.load_preds(), pair.load_gt())


def test_coco_consistency(coco_result):
    res = coco_result
    iou = default_iou(res)
    assert iou == 0.5
    t = int(np.flatnonzero(np.isclose(res.arrays["iou_thrs"], iou))[0])
    a = list(res.arrays["area_labels"]).index("all")
    curves = score_curves(res, iou_thr=iou, area="all")
    out = res.outcomes
    eps = np.spacing(1)
    rec_thrs = res.arrays["rec_thrs"]
    checked = 0
    for k, c in enumerate(curves.classes):
        in_k = out.category == k
        # at the lowest threshold every non-ignored detection is kept: TP = COCO's TP count
        n_tp = int((out.state[in_k, a, t] == 1).sum())
        n_fp = int((out.state[in_k, a, t] == 0).sum())
        if len(c.thresholds):
            assert (c.tp[-1], c.fp[-1]) == (n_tp, n_fp)
            assert c.at(float(c.thresholds[-1])).tp == n_tp
        if c.npos == 0:
            assert res.recall[t, k, a, -1] == -1
            continue
        # max recall of the score curve = pycocotools' recall, exactly (same division of the same integers)
        assert c.max_recall == res.recall[t, k, a, -1]
        # the envelope at the 101 recall points. pycocotools divides by tp + fp + eps: the same
        # float as tp + fp for tp + fp >= 2, but 1 + eps for the first detection, so where that
        # one is a TP it stores 1/(1 + eps) = 0.9999999999999998 instead of 1.0 (when no later
        # point has precision exactly 1). With its formula the envelope matches bit for bit;
        # ours differs only there.
        coco = res.precision[t, :, k, a, -1]
        seen = np.arange(1, len(c.raw_tp) + 1)
        pr = c.raw_tp / (seen + eps)
        env = np.maximum.accumulate(pr[::-1])[::-1] if len(pr) else pr
        idx = np.searchsorted(c.raw_recall, rec_thrs, side="left")
        theirs = np.array([env[i] if i < len(env) else 0.0 for i in idx])
        assert np.array_equal(theirs, coco)
        ours = c.interpolated_precision(rec_thrs)
        differ = ours != coco
        assert np.all(ours[differ] == 1.0) and np.all(coco[differ] == 1 / (1 + eps))
        checked += 1
    assert checked > 0


def test_coco_ignored_detections_are_dropped():
    # voc100_difficult_as_crowd: detections on crowd ground truth are ignored, not false positives
    pair = COCO_PAIRS["voc100_difficult_as_crowd"]
    res = deteval.evaluate(pair.load_preds(), pair.load_gt())
    t, a = 0, 0
    n_ignored = int((res.outcomes.state[:, a, t] == 2).sum())
    assert n_ignored > 0
    curves = score_curves(res)
    kept = sum(len(c.raw_score) for c in curves.classes)
    assert kept == len(res.outcomes.score) - n_ignored
    assert len(curves.micro.raw_score) == kept


def test_voc_result_curves_give_its_all_point_ap():
    pair = COCO_PAIRS["voc100_difficult_as_crowd"]
    res = deteval.evaluate(pair.load_preds(), pair.load_gt(), protocol="voc10", iou_thrs="0.5:0.95")
    curves = score_curves(res)  # default: IoU 0.5
    assert curves.iou == 0.5 and curves.area == "all"
    t = 0
    for k, c in enumerate(curves.classes):
        n_tp = int(c.tp[-1]) if len(c.tp) else 0
        assert n_tp == int((res.arrays["outcome"][t][res.outcomes.category == k] == 1).sum())
        if c.npos == 0:
            continue
        # VOC all-point AP from the raw curve: sum over recall steps of the envelope (voc_eval.py's formula)
        mrec = np.concatenate([[0.0], c.raw_recall, [1.0]])
        mpre = np.concatenate([[0.0], c.raw_precision, [0.0]])
        mpre = np.maximum.accumulate(mpre[::-1])[::-1]
        i = np.flatnonzero(mrec[1:] != mrec[:-1])
        ap = float(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1]))
        assert ap == pytest.approx(res.per_class[k]["AP50"], rel=1e-12, abs=1e-15)
    with pytest.raises(ValueError, match="choose one of"):
        score_curves(res, iou_thr=0.52)
    assert score_curves(res, iou_thr=0.75).iou == 0.75


def test_no_detections_at_all():
    out = _outcomes([], [], np.zeros((0, 1), np.int8), npos=[3, 0])
    curves = score_curves(out)
    assert all(len(c.thresholds) == 0 for c in curves.classes) and len(curves.micro.thresholds) == 0
    best = curves.best_points()
    # class 0: 3 ground truth, nothing found: R 0, F 0, P undefined; class 1 has no ground truth
    assert (best.classes[0].recall, best.classes[0].fbeta) == (0.0, 0.0)
    assert math.isnan(best.classes[0].precision) and math.isnan(best.classes[1].fbeta)
    assert (best.micro.tp, best.micro.fp, best.micro.npos) == (0, 0, 3)
    assert (best.macro.precision, best.macro.recall, best.macro.fbeta) == (0.0, 0.0, 0.0)
    assert "micro" in best.format_table() and "nan" not in best.format_table()


def test_area_none_takes_all_else_the_first():
    res = deteval.evaluate(*_sample(), area_ranges={"small": (0, 1024), "big": (1024, 1e10)})
    assert score_curves(res, area=None).area == "small"
    assert score_curves(HAND, area=None).area == "all"
