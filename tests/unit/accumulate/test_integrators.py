"""The four AP integrators: worked examples derived by hand, scikit-learn and pycocotools parity, properties."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from deteval.accumulation import integrators as integ
from deteval.accumulation.integrators import INTEGRATORS, average_precision, average_precision_segments

ALL = INTEGRATORS


def ap(flags, npos, integrator, **kw):
    return average_precision(np.array(flags, bool), None, npos, integrator, **kw)


# --------------------------------------------------------------------------------------
# seed 000: airplanes and geese. Ranking of 10 images, 5 airplanes:
#   rank       1    2    3    4    5    6    7    8    9    10
#   airplane   T    T    F    T    F    T    F    F    F    T
#   precision  1    1    2/3  3/4  3/5  2/3  4/7  1/2  4/9  1/2
#   recall     .2   .4   .4   .6   .6   .8   .8   .8   .8   1.0
AIRPLANES = [1, 1, 0, 1, 0, 1, 0, 0, 0, 1]


def test_airplanes_non_interpolated():
    # sum P(k) dr(k) over the TP ranks: .2 * (1 + 1 + 3/4 + 4/6 + 5/10) = 47/60 (the article rounds to 0.782)
    assert ap(AIRPLANES, 5, "non_interpolated") == pytest.approx(47 / 60, abs=1e-15)


def test_airplanes_all_points():
    # envelope at recall .2 .4 .6 .8 1: 1, 1, 3/4, 2/3, 1/2 -- each equals the precision at that TP,
    # so the area is again 47/60
    assert ap(AIRPLANES, 5, "all_points") == pytest.approx(47 / 60, abs=1e-15)


def test_airplanes_voc11_and_the_float_grid():
    # np.arange(0, 1.1, .1): t = 0 .1 .2 .3+ .4 -> 1 (rank 2 has recall .4, precision 1)
    #   t = .5 -> max P at recall >= .5 = 3/4;  t = .6000000000000001 > 3/5, so recall .6 misses it -> 2/3
    #   t = .7000000000000001, .8 -> 2/3;  t = .9, 1 -> 1/2
    # sum = 5 + 3/4 + 3 * 2/3 + 2 * 1/2 = 8.75
    assert ap(AIRPLANES, 5, "voc11") == pytest.approx(8.75 / 11, abs=1e-15)
    # MATLAB's 0:0.1:1 has t(7) = 0.6 exactly: recall 3/5 reaches it, that point reads 3/4 instead of 2/3
    assert ap(AIRPLANES, 5, "voc11", grid="matlab") == pytest.approx((8.75 + 3 / 4 - 2 / 3) / 11, abs=1e-15)


def test_airplanes_coco101():
    # thresholds i/100 read the envelope at the first rank with recall >= i/100:
    #   i = 0..20 -> rank 1 (1), 21..40 -> rank 2 (1), 41..60 -> rank 4 (3/4), 61..80 -> rank 6 (2/3),
    #   81..100 -> rank 10 (1/2);  (21 + 20 + 20 * 3/4 + 20 * 2/3 + 20 * 1/2) / 101 = 238/303
    assert ap(AIRPLANES, 5, "coco101") == pytest.approx(238 / 303, abs=1e-15)
    q, idx, rec = integ.coco101(np.array(AIRPLANES, bool), None, 5)
    assert idx[0] == 0 and idx[20] == 0 and idx[21] == 1 and idx[41] == 3 and idx[61] == 5 and idx[100] == 9
    assert rec == 1.0


# --------------------------------------------------------------------------------------
# seed 001: the ten-inference table (4 GT objects in the text, but recall reaches 1.0 at 5 TP: npos = 5)
#   H .99 T, B .88 T, E .72 F, A .70 F, J .54 F, D .54 T, I .38 T, C .2 F, F .2 F, G .1 T
TEN = [1, 1, 0, 0, 0, 1, 1, 0, 0, 1]
TEN_SCORES = [0.99, 0.88, 0.72, 0.70, 0.54, 0.54, 0.38, 0.2, 0.2, 0.1]
# the same with D ranked before J inside their tie
TEN_SWAPPED = [1, 1, 0, 0, 1, 0, 1, 0, 0, 1]


def test_ten_inferences_table():
    rec, prec, rows = integ.precision_recall(np.array(TEN, bool), None, 5)
    assert np.allclose(prec, [1, 1, 2 / 3, 1 / 2, 2 / 5, 1 / 2, 4 / 7, 1 / 2, 4 / 9, 1 / 2], atol=1e-15)
    assert np.allclose(rec, [0.2, 0.4, 0.4, 0.4, 0.4, 0.6, 0.8, 0.8, 0.8, 1.0], atol=1e-15)
    assert rows.tolist() == list(range(10))


def test_ten_inferences_item_ties():
    # non-interpolated: .2 * (1 + 1 + 3/6 + 4/7 + 5/10) = 5/7
    assert ap(TEN, 5, "non_interpolated") == pytest.approx(5 / 7, abs=1e-15)
    # envelope at recall .2 .4 .6 .8 1: 1, 1, 4/7, 4/7, 1/2 -> .2 * (2.5 + 8/7) = 51/70
    assert ap(TEN, 5, "all_points") == pytest.approx(51 / 70, abs=1e-15)
    # voc11: t <= .4 -> 1 (5 points); t = .5 .6+ .7+ .8 -> 4/7; t = .9, 1 -> 1/2: (5 + 16/7 + 1) / 11 = 58/77
    assert ap(TEN, 5, "voc11") == pytest.approx(58 / 77, abs=1e-15)
    # coco101: 21 * 1 + 20 * 1 + 20 * 4/7 + 20 * 4/7 + 20 * 1/2 = 517/7, over 101
    assert ap(TEN, 5, "coco101") == pytest.approx(517 / 707, abs=1e-15)
    # D before J inside the .54 tie: D's precision is 3/5, not 3/6
    # non-interpolated = .2 * (1 + 1 + 3/5 + 4/7 + 1/2) = 257/350; the envelope at .6 is then 3/5 too
    assert ap(TEN_SWAPPED, 5, "non_interpolated") == pytest.approx(257 / 350, abs=1e-15)
    assert ap(TEN_SWAPPED, 5, "all_points") == pytest.approx(257 / 350, abs=1e-15)
    # voc11: 5 * 1 + (t = .5: 3/5) + 3 * 4/7 + 2 * 1/2
    assert ap(TEN_SWAPPED, 5, "voc11") == pytest.approx((6.6 + 12 / 7) / 11, abs=1e-15)


def test_ten_inferences_group_ties_ignore_order_inside_ties():
    # tie-grouped, the .54 block enters at once: 3 TP, 3 FP -> precision 1/2 at recall .6, whatever the order
    for flags in (TEN, TEN_SWAPPED):
        assert ap(flags, 5, "non_interpolated", ties="group", scores=TEN_SCORES) == pytest.approx(5 / 7, abs=1e-15)
        assert ap(flags, 5, "all_points", ties="group", scores=TEN_SCORES) == pytest.approx(51 / 70, abs=1e-15)
        assert ap(flags, 5, "voc11", ties="group", scores=TEN_SCORES) == pytest.approx(58 / 77, abs=1e-15)
        assert ap(flags, 5, "coco101", ties="group", scores=TEN_SCORES) == pytest.approx(517 / 707, abs=1e-15)
    _, _, rows = integ.precision_recall(np.array(TEN, bool), None, 5, ties="group", scores=TEN_SCORES)
    assert rows.tolist() == [0, 1, 2, 3, 5, 6, 8, 9]  # J (4) and C (7) are inside ties


# --------------------------------------------------------------------------------------
# seed 004: relevant a, b, c; ranking x a y b c z
XAYBCZ = [0, 1, 0, 1, 1, 0]


def test_xaybcz():
    # P at the relevant ranks: a 1/2, b 2/4, c 3/5 (the seed's table misprints c as 3/4)
    assert ap(XAYBCZ, 3, "non_interpolated") == pytest.approx((1 / 2 + 2 / 4 + 3 / 5) / 3, abs=1e-15)
    # the envelope is 3/5 at every recall level (c's precision dominates everything before it)
    for name in ("all_points", "voc11", "coco101"):
        assert ap(XAYBCZ, 3, name) == pytest.approx(3 / 5, abs=1e-15)


# --------------------------------------------------------------------------------------
# precision rules and rows that are neither TP nor FP


def test_leading_ignored_rows_give_no_nan_and_move_nothing():
    tp = np.array([0, 0, 1, 0, 1], bool)
    fp = np.array([0, 0, 0, 1, 0], bool)  # two leading rows hit difficult objects
    for name in ALL:
        a = average_precision(tp, fp, 3, name)
        b = average_precision(tp[2:], fp[2:], 3, name)
        assert np.isfinite(a)
        assert a == b


def test_coco_precision_adds_eps():
    # pycocotools: tp / (fp + tp + eps); one TP out of one detection is 1/(1+eps) < 1, and npos = 1
    assert ap([1], 1, "coco101") == np.mean(np.full(101, 1 / (1 + np.spacing(1))))
    assert ap([1], 1, "coco101") < 1.0
    assert ap([1], 1, "coco101", precision="guard") == 1.0
    assert ap([1], 1, "all_points") == 1.0


def test_no_positives_is_nan():
    assert np.isnan(ap([0, 0], 0, "all_points"))


def test_validation():
    with pytest.raises(ValueError, match="integrator"):
        ap([1], 1, "voc12")
    with pytest.raises(ValueError, match="both"):
        average_precision(np.array([1], bool), np.array([1], bool), 1)
    with pytest.raises(ValueError, match="scores"):
        ap([1, 0], 1, "all_points", ties="group")
    with pytest.raises(ValueError, match="npos"):
        ap([1, 1], 1, "all_points")
    with pytest.raises(ValueError, match="rank order"):
        ap([1, 0], 1, "all_points", ties="group", scores=[0.1, 0.9])
    with pytest.raises(ValueError, match="grid"):
        ap([1], 1, "voc11", grid="octave")


# --------------------------------------------------------------------------------------
# scikit-learn parity (docs/protocols.md, "AP integrators"): AP_noninterp(group ties) = AP_sklearn * TP_total / npos


rankings = st.lists(
    st.tuples(st.booleans(), st.integers(0, 30)),  # (is TP, score on a coarse grid: ties are common)
    min_size=1,
    max_size=60,
)


@given(rankings, st.integers(0, 5))
def test_sklearn_parity(rows, missed):
    from sklearn.metrics import average_precision_score

    y = np.array([r[0] for r in rows], bool)
    s = np.array([r[1] for r in rows], float) / 7.0
    assume(y.any())
    order = np.argsort(-s, kind="stable")
    y, s = y[order], s[order]
    npos = int(y.sum()) + missed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk = average_precision_score(y, s)
    ours = average_precision(y, None, npos, "non_interpolated", ties="group", scores=s)
    assert ours == pytest.approx(sk * y.sum() / npos, abs=1e-12)
    if len(np.unique(s)) == len(s):  # without ties both policies agree
        assert average_precision(y, None, npos, "non_interpolated") == pytest.approx(ours, abs=1e-12)


def test_sklearn_parity_xaybcz():
    from sklearn.metrics import average_precision_score

    y = np.array(XAYBCZ, bool)
    s = np.array([6, 5, 4, 3, 2, 1], float)
    assert ap(XAYBCZ, 3, "non_interpolated") == pytest.approx(average_precision_score(y, s), abs=1e-15)


# --------------------------------------------------------------------------------------
# pycocotools parity of coco101: a ranking built as one COCO image whose detections either sit
# exactly on their own GT (TP), on no GT (FP), or on a crowd region (ignored)


def _coco_case(kinds, missed, scores):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    gts, dts = [], []
    crowd = {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 1000, 50, 50], "area": 2500, "iscrowd": 1}
    gts.append(crowd)
    for i, (kind, score) in enumerate(zip(kinds, scores)):
        x = 20.0 * i
        if kind == "tp":
            gts.append(
                {"id": len(gts) + 1, "image_id": 1, "category_id": 1, "bbox": [x, 0, 10, 10], "area": 100, "iscrowd": 0}
            )
            box = [x, 0, 10, 10]
        elif kind == "fp":
            box = [x, 500, 10, 10]
        else:
            box = [10, 1010, 10, 10]  # inside the crowd region: IoA 1
        dts.append({"image_id": 1, "category_id": 1, "bbox": box, "score": score})
    for j in range(missed):
        gts.append(
            {
                "id": len(gts) + 1,
                "image_id": 1,
                "category_id": 1,
                "bbox": [20.0 * j, 200, 10, 10],
                "area": 100,
                "iscrowd": 0,
            }
        )
    gt = COCO()
    gt.dataset = {"images": [{"id": 1}], "categories": [{"id": 1}], "annotations": gts}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()):
            gt.createIndex()
            dt = gt.loadRes(dts)
            ev = COCOeval(gt, dt, "bbox")
            ev.params.maxDets = [1, 10, 100]
            ev.evaluate()
            ev.accumulate()
    return ev


@given(
    st.lists(st.sampled_from(["tp", "fp", "ig"]), min_size=1, max_size=40),
    st.integers(0, 4),
    st.data(),
)
def test_coco101_equals_pycocotools(kinds, missed, data):
    assume("tp" in kinds or missed > 0)
    n = len(kinds)
    scores = data.draw(st.lists(st.integers(1, 8), min_size=n, max_size=n))  # coarse: ties, in input order
    scores = [s / 8.0 for s in scores]
    ev = _coco_case(kinds, missed, scores)
    order = np.argsort(-np.array(scores), kind="mergesort")
    k = np.array(kinds)[order]
    npos = kinds.count("tp") + missed
    q, idx, rec = integ.coco101(k == "tp", k == "fp", npos)
    ref = ev.eval["precision"][0, :, 0, 0, 2]
    assert np.array_equal(q, ref)  # bit for bit
    ref_scores = ev.eval["scores"][0, :, 0, 0, 2]
    ours_scores = np.where(idx >= 0, np.array(scores)[order][np.maximum(idx, 0)], 0.0)
    assert np.array_equal(ours_scores, ref_scores)
    assert rec == ev.eval["recall"][0, 0, 0, 2]
    # pycocotools' AP for one category and one threshold is the mean of those 101 values
    assert average_precision(k == "tp", k == "fp", npos, "coco101") == np.mean(ref)


# --------------------------------------------------------------------------------------
# properties

flag_lists = st.lists(st.sampled_from([1, 0, -1]), min_size=0, max_size=80)


def _split(flags):
    f = np.array(flags, dtype=np.int8)
    return f == 1, f == 0


@given(flag_lists, st.integers(0, 5))
def test_non_interpolated_never_exceeds_all_points(flags, missed):
    tp, fp = _split(flags)
    npos = int(tp.sum()) + missed
    assume(npos > 0)
    assert average_precision(tp, fp, npos, "non_interpolated") <= average_precision(tp, fp, npos, "all_points") + 1e-12


@given(st.integers(1, 60), st.integers(0, 30))
def test_perfect_ranking_is_one(npos, trailing_fp):
    tp = np.r_[np.ones(npos, bool), np.zeros(trailing_fp, bool)]
    for name in ALL:
        # 11 additions of 1/11 and COCO's 1/(1 + eps) leave at most a few ulps
        assert average_precision(tp, None, npos, name) == pytest.approx(1.0, abs=4 * np.spacing(1))


@given(
    st.lists(st.tuples(st.booleans(), st.integers(0, 20)), min_size=1, max_size=50),
    st.integers(-20, 20),
    st.sampled_from(ALL),
    st.sampled_from(["item", "group"]),
)
def test_invariant_to_score_scaling(rows, exp2, name, ties):
    y = np.array([r[0] for r in rows], bool)
    s = np.array([r[1] for r in rows], float) / 3.0
    npos = int(y.sum()) + 1
    order = np.argsort(-s, kind="stable")
    scaled = s * 2.0**exp2  # exact, so ties and order are kept
    order2 = np.argsort(-scaled, kind="stable")
    a = average_precision(y[order], None, npos, name, ties=ties, scores=s[order])
    b = average_precision(y[order2], None, npos, name, ties=ties, scores=scaled[order2])
    assert a == b


@given(st.lists(flag_lists, min_size=1, max_size=6), st.sampled_from(["item", "group"]))
def test_segments_equal_single_calls(segments, ties):
    rng = np.random.default_rng(len(segments))
    tps, fps, scores, offsets, npos = [], [], [], [0], []
    for flags in segments:
        tp, fp = _split(flags)
        s = np.sort(rng.integers(0, 5, len(tp)))[::-1].astype(float)
        tps.append(tp), fps.append(fp), scores.append(s)
        offsets.append(offsets[-1] + len(tp))
        npos.append(int(tp.sum()) + int(rng.integers(0, 2)))
    out = average_precision_segments(
        np.concatenate(tps), np.concatenate(fps), offsets, npos, ALL, ties=ties, scores=np.concatenate(scores)
    )
    for i in range(len(segments)):
        for j, name in enumerate(ALL):
            single = average_precision(tps[i], fps[i], npos[i], name, ties=ties, scores=scores[i]) if npos[i] else None
            if npos[i] == 0:
                assert np.isnan(out[i, j])
            else:
                assert out[i, j] == single


def test_np_sum_is_bit_identical():
    rng = np.random.default_rng(7)
    for n in [0, 1, 7, 8, 9, 127, 128, 129, 255, 256, 1000, 4099, 20000]:
        a = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)
        assert integ.np_sum(a) == np.sum(a)


# COCO's accumulation reads coco101 off the true positives alone; it must give the bits of the
# full-curve formulation above (itself pinned to pycocotools by test_coco101_equals_pycocotools).
@given(
    kinds=st.lists(st.sampled_from(["tp", "fp", "ig"]), min_size=0, max_size=60),
    missed=st.integers(min_value=0, max_value=5),
)
def test_coco101_from_true_positives_equals_full_curve(kinds, missed):
    k = np.array(kinds, dtype=object)
    tp, fp = k == "tp", k == "fp"
    npos = int(tp.sum()) + missed
    assume(npos > 0)
    tpc, fpc = np.cumsum(tp).astype(float), np.cumsum(fp).astype(float)
    rec, prec = tpc / npos, tpc / (fpc + tpc + np.spacing(1))
    q_full, idx_full = integ.coco101_points(rec, prec, integ.COCO_REC_THRS)

    ntp = int(tp.sum())
    tp_fp = fpc[tp].astype(np.int32)  # false positives before each true positive
    q, which = np.empty(101), np.empty(101, np.int64)
    env = np.empty(max(ntp, 1))
    need = np.empty(101, np.int64)
    integ.counts_reaching(integ.COCO_REC_THRS, npos, need)
    integ.coco101_from_true_positives(tp_fp, ntp, need, len(k) > 0, env, q, which)
    assert np.array_equal(q, q_full)
    # the point read: the same detection (which true positive, or the first detection, or none)
    tp_rows = np.flatnonzero(tp)
    rows = np.where(which >= 0, tp_rows[np.maximum(which, 0)] if ntp else -1, np.where(which == -1, 0, -1))
    assert np.array_equal(rows, idx_full)
