"""AP integrators: one ranked list of outcomes + the positive count -> one number.

Every protocol reduces its matches with one of these four rules (docs/protocols.md, "AP integrators"),
so "AP" is always a named choice:

``coco101``
    COCO / LVIS / TIDE: the precision envelope (max from the right) read at the
    101 recall points ``np.linspace(.0, 1.00, 101)`` with ``searchsorted(side="left")``;
    recall points the ranking never reaches count 0; AP is their mean.
    Precision is ``tp / (fp + tp + np.spacing(1))``, as in pycocotools.
``voc11``
    PASCAL VOC 2007: mean over the 11 recall points ``np.arange(0., 1.1, 0.1)``
    (``grid="numpy"``; ``grid="matlab"`` gives the devkit's ``0:0.1:1``) of the
    largest precision at recall >= the point, 0 when none.
``all_points``
    PASCAL VOC 2010-2012: area under the envelope, summed at every recall change
    with sentinels (0, 0) and (1, 0).
``non_interpolated``
    Information retrieval: ``sum_k P(k) * (R(k) - R(k-1))``, ``R(0) = 0``, no envelope.

For the three VOC/IR rules precision is ``tp / max(tp + fp, eps)``: a ranking
that opens with detections that are neither TP nor FP (VOC's difficult hits)
gets precision 0 there, never NaN.

Input is a ranking of detections in rank order (best first) as two boolean
flag arrays, ``tp`` and ``fp``. A row with neither flag (a detection matched to
a difficult or ignored ground truth) stays in the ranking as a repeated point,
exactly as voc_eval.py and pycocotools keep it; it moves no integral.

Tie policies (``ties``):

``"item"``
    Every row is a point of the curve, in the given (stable) order.
``"group"``
    Only the last row of each run of equal scores is a point, as scikit-learn's
    ``precision_recall_curve`` does: a tie block enters the curve all at once,
    which makes AP independent of the order inside ties.
``"argsort"``
    Every row is a point, as ``"item"``: here the rows come ranked, and this policy names the ranking
    (``np.argsort(-score)`` under numpy < 1.25, :func:`deteval.accumulation.accumulate.rank_by_category`).

Sums are numpy's pairwise summation where the reference tools call ``np.sum``
or ``np.mean``, so results are bit-identical to them, not merely close.
"""

from __future__ import annotations

import numpy as np

from deteval.accumulation.cumulative import cumulative_counts
from deteval.jit import njit
from deteval.numeric import np_sum
from deteval.vocabulary import INTEGRATORS, TIE_POLICIES, VOC11_GRIDS

_CODE = {name: i for i, name in enumerate(INTEGRATORS)}
EPS = float(np.finfo(np.float64).eps)  # == np.spacing(1)

# pycocotools' recall thresholds, built with its own expression
COCO_REC_THRS = np.linspace(0.0, 1.00, int(np.round((1.00 - 0.0) / 0.01)) + 1, endpoint=True)


def voc11_grid(grid: str = "numpy") -> np.ndarray:
    """The 11 recall points of VOC2007 AP.

    ``"numpy"`` is ``np.arange(0., 1.1, 0.1)`` (py-faster-rcnn, detectron2, mmdet,
    DOTA): its 0.3, 0.6 and 0.7 lie one ulp above the decimal, so a recall of
    exactly 3/10, 6/10 or 7/10 does not reach them. ``"matlab"`` follows MATLAB's
    colon ``0:0.1:1``, which builds the first half as ``k*0.1``, the second half
    as ``1 - (10-k)*0.1`` and the middle as ``(0+1)/2`` (from MATLAB's documented
    colon algorithm; not run against MATLAB here).
    """
    if grid == "numpy":
        return np.arange(0.0, 1.1, 0.1)
    if grid == "matlab":
        k = np.arange(11)
        t = np.where(k < 5, k * 0.1, 1.0 - (10 - k) * 0.1)
        t[5] = 0.5
        return t
    raise ValueError(f"grid must be one of {VOC11_GRIDS}, got {grid!r}")


# --------------------------------------------------------------------------------------
# kernels


@njit(cache=True)
def _voc11(rec, prec, grid):  # pragma: no cover - numba
    ap = 0.0
    for t in grid:
        p = 0.0
        found = False
        for i in range(len(rec)):
            if rec[i] >= t and (not found or prec[i] > p):
                p = prec[i]
                found = True
        ap = ap + p / 11.0
    return ap


@njit(cache=True)
def _all_points(rec, prec):  # pragma: no cover - numba
    n = len(rec)
    mrec = np.empty(n + 2)
    mpre = np.empty(n + 2)
    mrec[0] = 0.0
    mpre[0] = 0.0
    for i in range(n):  # an element loop: numba's array-to-array slice assignment costs 3 s to compile
        mrec[i + 1] = rec[i]
        mpre[i + 1] = prec[i]
    mrec[n + 1] = 1.0
    mpre[n + 1] = 0.0
    for i in range(n + 1, 0, -1):  # envelope, from the right
        if mpre[i] > mpre[i - 1]:
            mpre[i - 1] = mpre[i]
    terms = np.empty(n + 1)
    m = 0
    for i in range(n + 1):
        if mrec[i + 1] != mrec[i]:
            terms[m] = (mrec[i + 1] - mrec[i]) * mpre[i + 1]
            m += 1
    return np_sum(terms[:m])


@njit(cache=True)
def _non_interpolated(rec, prec):  # pragma: no cover - numba
    ap = 0.0
    prev = 0.0
    for i in range(len(rec)):
        ap += (rec[i] - prev) * prec[i]
        prev = rec[i]
    return ap


@njit(cache=True)
def coco101_points(rec, prec, rec_thrs):  # pragma: no cover - numba
    """pycocotools' per-(t, k, a, m) step: ``q`` at ``rec_thrs`` and the point index read (-1: unreached).

    The reference formulation over a whole curve; COCO's accumulation uses the
    equivalent :func:`coco101_from_true_positives`, which reads only true positives.

    ``prec`` must be COCO's ``tp / (fp + tp + eps)``; it is not modified.
    """
    n = len(rec)
    pr = prec.copy()
    for i in range(n - 1, 0, -1):  # envelope, from the right
        if pr[i] > pr[i - 1]:
            pr[i - 1] = pr[i]
    q = np.zeros(len(rec_thrs))
    idx = np.full(len(rec_thrs), -1, np.int64)
    j = 0
    for r in range(len(rec_thrs)):
        # searchsorted(rec, thr, side="left"): the first point with rec >= thr
        while j < n and rec[j] < rec_thrs[r]:
            j += 1
        if j < n:
            q[r] = pr[j]
            idx[r] = j
    return q, idx


@njit(cache=True)
def first_reaching(thr, npos):  # pragma: no cover - numba
    """The least TP count ``v`` with ``v / npos >= thr`` in float64, as pycocotools' searchsorted compares."""
    v = max(0, int(thr * npos) - 2)
    while v / npos < thr:
        v += 1
    return v


@njit(cache=True)
def counts_reaching(rec_thrs, npos, need):  # pragma: no cover - numba
    """``need[r] = first_reaching(rec_thrs[r], npos)``: the same for every IoU threshold and max dets of
    a (category, area range), so computed once for them all (its divisions were a third of the reading)."""
    for r in range(len(rec_thrs)):
        need[r] = first_reaching(rec_thrs[r], npos)


@njit(cache=True)
def coco101_from_true_positives(tp_fp, ntp, need, has_dets, env, q, which):  # pragma: no cover - numba
    """``coco101`` from the true positives alone: the same bits as :func:`coco101_points` on the full curve.

    Recall first reaches a threshold at a true positive (or at the first
    detection, for recall 0), and the envelope's maximum over a suffix is
    attained at a true positive, so the ``ntp`` true positives' preceding
    false-positive counts ``tp_fp`` say everything. ``need`` holds the true
    positives each recall threshold needs (:func:`counts_reaching`). Writes
    ``q`` (precision at each recall threshold) and ``which``: the true
    positive read (0-based), -1 for the first detection, -2 where the recall
    is never reached (q 0). ``env`` is scratch space of at least ``ntp`` floats.
    """
    best = 0.0
    for v in range(ntp - 1, -1, -1):  # precision at each true positive, then its envelope from the right
        tp = v + 1.0
        pr = tp / (tp_fp[v] + tp + EPS)
        if pr > best:
            best = pr
        env[v] = best
    for r in range(len(need)):
        if not has_dets or need[r] > ntp:
            q[r] = 0.0
            which[r] = -2
        elif need[r] == 0:
            q[r] = env[0] if ntp > 0 else 0.0
            which[r] = -1
        else:
            q[r] = env[need[r] - 1]
            which[r] = need[r] - 1


@njit(cache=True)
def _ap_one(tp, fp, scores, npos, code, group_ties, guard, grid, rec_thrs):  # pragma: no cover - numba
    if npos <= 0:
        return np.nan
    tpc, fpc, _ = cumulative_counts(tp, fp, scores, group_ties)
    n = len(tpc)
    rec = np.empty(n)
    prec = np.empty(n)
    for i in range(n):
        t = float(tpc[i])  # exact: the float counts pycocotools and voc_eval divide
        f = float(fpc[i])
        rec[i] = t / npos
        if guard:
            prec[i] = t / max(t + f, EPS)
        else:
            prec[i] = t / (f + t + EPS)
    if code == 0:
        q, _ = coco101_points(rec, prec, rec_thrs)
        return np_sum(q) / len(q)  # np.mean
    if code == 1:
        return _voc11(rec, prec, grid)
    if code == 2:
        return _all_points(rec, prec)
    return _non_interpolated(rec, prec)


@njit(cache=True)
def _ap_segments(tp, fp, scores, offsets, npos, codes, group_ties, guard, grid, rec_thrs):  # pragma: no cover
    # every (segment, integrator) pair; segments are independent rankings (classes)
    out = np.empty((len(offsets) - 1, len(codes)))
    for s in range(len(offsets) - 1):
        a, b = offsets[s], offsets[s + 1]
        for c in range(len(codes)):
            out[s, c] = _ap_one(tp[a:b], fp[a:b], scores[a:b], npos[s], codes[c], group_ties, guard[c], grid, rec_thrs)
    return out


# --------------------------------------------------------------------------------------
# Python API


def _check_integrator(name: str) -> int:
    if name not in _CODE:
        raise ValueError(f"integrator must be one of {INTEGRATORS}, got {name!r}")
    return _CODE[name]


def _check_ties(ties: str) -> bool:
    if ties not in TIE_POLICIES:
        raise ValueError(f"ties must be one of {TIE_POLICIES}, got {ties!r}")
    return ties == "group"


def _guard_for(name: str, precision: str | None) -> bool:
    """True for ``tp / max(tp + fp, eps)``, False for COCO's ``tp / (fp + tp + eps)``."""
    if precision is None:
        return name != "coco101"
    if precision not in ("guard", "coco"):
        raise ValueError(f"precision must be 'guard', 'coco' or None, got {precision!r}")
    return precision == "guard"


def _flags(tp, fp, scores, group, offsets=None):
    tp = np.ascontiguousarray(tp, dtype=np.bool_)
    if tp.ndim != 1:
        raise ValueError(f"tp must be one-dimensional, got shape {tp.shape}")
    fp = ~tp if fp is None else np.ascontiguousarray(fp, dtype=np.bool_)
    if fp.shape != tp.shape:
        raise ValueError(f"tp and fp must have the same shape, got {tp.shape} and {fp.shape}")
    if np.any(tp & fp):
        raise ValueError("a row cannot be both a true and a false positive")
    if scores is None:
        if group:
            raise ValueError("ties='group' needs the scores of the ranking")
        scores = np.zeros(len(tp))
    else:
        scores = np.ascontiguousarray(scores, dtype=np.float64)
        if scores.shape != tp.shape:
            raise ValueError(f"scores must have the shape of tp, got {scores.shape} and {tp.shape}")
        if group:
            # tie blocks are runs of equal scores: the ranking must be sorted (within each segment)
            rising = np.diff(scores) > 0
            if offsets is not None and len(rising):
                starts = np.asarray(offsets[1:-1], np.int64)
                rising[starts[(starts > 0) & (starts < len(scores))] - 1] = False
            if rising.any() or np.isnan(scores).any():
                raise ValueError("ties='group' needs the scores in rank order (non-increasing, no NaN)")
    return tp, fp, scores


def average_precision(
    tp,
    fp=None,
    npos: int | None = None,
    integrator: str = "all_points",
    *,
    ties: str = "item",
    scores=None,
    precision: str | None = None,
    grid: str = "numpy",
) -> float:
    """AP of one ranking under one integrator.

    Parameters
    ----------
    tp, fp : bool arrays (N,), in rank order (best first)
        True and false positives. ``fp=None`` means every non-TP row is a FP.
        Rows with neither flag are kept as points that move nothing.
    npos : int
        Number of positives (the recall denominator); default ``tp.sum()``.
        NaN is returned when it is 0.
    integrator : one of :data:`INTEGRATORS`
    ties : ``"item"`` or ``"group"`` (needs ``scores``, in rank order)
    precision : ``None`` (the integrator's own rule), ``"guard"`` or ``"coco"``
    grid : the 11-point grid of ``voc11``, ``"numpy"`` or ``"matlab"``
    """
    code = _check_integrator(integrator)
    group = _check_ties(ties)
    tp, fp, scores = _flags(tp, fp, scores, group)
    if npos is None:
        npos = int(tp.sum())
    if npos < tp.sum():
        raise ValueError(f"npos ({npos}) is smaller than the number of true positives ({int(tp.sum())})")
    return float(
        _ap_one(
            tp, fp, scores, float(npos), code, group, _guard_for(integrator, precision), voc11_grid(grid), COCO_REC_THRS
        )
    )


def average_precision_segments(
    tp,
    fp,
    offsets,
    npos,
    integrators=("all_points",),
    *,
    ties: str = "item",
    scores=None,
    precision: str | None = None,
    grid: str = "numpy",
) -> np.ndarray:
    """AP of several rankings stored back to back, under several integrators, in one kernel call.

    ``offsets`` (S + 1,) delimit the S rankings in ``tp``/``fp``/``scores``;
    ``npos`` (S,) are their positive counts. Returns float64 (S, len(integrators)),
    NaN where ``npos`` is 0.
    """
    codes = np.array([_check_integrator(n) for n in integrators], dtype=np.int64)
    guard = np.array([_guard_for(n, precision) for n in integrators], dtype=np.bool_)
    group = _check_ties(ties)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    tp, fp, scores = _flags(tp, fp, scores, group, offsets)
    npos = np.ascontiguousarray(npos, dtype=np.float64)
    if (
        offsets.ndim != 1
        or len(offsets) < 1
        or offsets[0] != 0
        or offsets[-1] != len(tp)
        or np.any(np.diff(offsets) < 0)
    ):
        raise ValueError("offsets must rise from 0 to len(tp)")
    if npos.shape != (len(offsets) - 1,):
        raise ValueError(f"npos must have one entry per segment ({len(offsets) - 1}), got shape {npos.shape}")
    return _ap_segments(tp, fp, scores, offsets, npos, codes, group, guard, voc11_grid(grid), COCO_REC_THRS)


def precision_recall(
    tp,
    fp=None,
    npos: int | None = None,
    *,
    ties: str = "item",
    scores=None,
    precision: str = "guard",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The curve every integrator reads: ``(recall, precision, rows)`` at each point.

    ``rows`` gives the rank of the row each point was taken at (the last row of
    its tie block with ``ties="group"``).
    """
    group = _check_ties(ties)
    tp, fp, scores = _flags(tp, fp, scores, group)
    if npos is None:
        npos = int(tp.sum())
    tpc, fpc, rows = cumulative_counts(tp, fp, scores, group)
    tpc, fpc = tpc.astype(np.float64), fpc.astype(np.float64)  # exact: the float counts the references divide
    rec = tpc / npos if npos > 0 else np.full(len(tpc), np.nan)
    if precision == "guard":
        prec = tpc / np.maximum(tpc + fpc, EPS)
    elif precision == "coco":
        prec = tpc / (fpc + tpc + EPS)
    else:
        raise ValueError(f"precision must be 'guard' or 'coco', got {precision!r}")
    return rec, prec, rows


def coco101(tp, fp, npos: int, rec_thrs=None) -> tuple[np.ndarray, np.ndarray, float]:
    """pycocotools' per-(t, k, a, m) accumulation: ``(q, idx, recall)``.

    ``q`` (R,) is the precision envelope at ``rec_thrs`` (COCO's 101 points by
    default) with 0 where recall never reaches the point, ``idx`` the rank read
    for each point (-1 where unreached; pycocotools reads ``scores`` there), and
    ``recall`` the final recall (0 for an empty ranking). ``npos`` must be > 0:
    pycocotools skips (t, k, a, m) without positives.
    """
    tp, fp, _ = _flags(tp, fp, None, False)
    if npos <= 0:
        raise ValueError("npos must be positive (pycocotools skips categories without positives)")
    rec_thrs = COCO_REC_THRS if rec_thrs is None else np.ascontiguousarray(rec_thrs, dtype=np.float64)
    rec, prec, _ = precision_recall(tp, fp, npos, precision="coco")
    q, idx = coco101_points(rec, prec, rec_thrs)
    return q, idx, float(rec[-1]) if len(rec) else 0.0


# --------------------------------------------------------------------------------------
# weighted true positives (Open Images' group-of boxes count group_of_weight each)


@njit(cache=True)
def _all_points_weighted(tp_weight, fp, offsets, npos):  # pragma: no cover - numba
    out = np.full(len(offsets) - 1, np.nan)
    for s in range(len(offsets) - 1):
        if npos[s] <= 0:
            continue
        a, b = offsets[s], offsets[s + 1]
        rec = np.empty(b - a)
        prec = np.empty(b - a)
        t = 0.0
        f = 0.0
        for i in range(b - a):  # running sums: np.cumsum's order
            t += tp_weight[a + i]
            if fp[a + i]:
                f += 1.0
            rec[i] = t / npos[s]
            prec[i] = t / (t + f)
        out[s] = _all_points(rec, prec)
    return out


def all_points_weighted_segments(tp_weight, fp, offsets, npos) -> np.ndarray:
    """All-point AP of rankings stored back to back whose true positives carry weights (TF's
    ``metrics.compute_precision_recall`` + ``compute_average_precision``).

    ``tp_weight`` (N,) float: each row's weight as a true positive (0 for a false positive); ``fp`` (N,)
    bool; every row must be one or the other with a positive weight (precision ``t / (t + f)`` has no
    guard). ``offsets`` (S + 1,), ``npos`` (S,) float (weighted counts). Returns (S,), NaN where ``npos`` is 0.
    """
    tp_weight = np.ascontiguousarray(tp_weight, np.float64)
    fp = np.ascontiguousarray(fp, np.bool_)
    offsets = np.ascontiguousarray(offsets, np.int64)
    npos = np.ascontiguousarray(npos, np.float64)
    if tp_weight.shape != fp.shape or tp_weight.ndim != 1:
        raise ValueError("tp_weight and fp must be one-dimensional and of one shape")
    if np.any(fp == (tp_weight > 0)):
        raise ValueError("each row must be a false positive or a true positive of positive weight")
    if len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != len(fp) or np.any(np.diff(offsets) < 0):
        raise ValueError("offsets must rise from 0 to len(fp)")
    if npos.shape != (len(offsets) - 1,):
        raise ValueError(f"npos must have one entry per segment ({len(offsets) - 1}), got shape {npos.shape}")
    return _all_points_weighted(tp_weight, fp, offsets, npos)
