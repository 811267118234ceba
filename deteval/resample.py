"""COCO's accumulation over a resampled or sliced set of images, from one matching pass.

A bootstrap replicate or a slice is a list of images, *draws*, each a dense image index (an image may
come more than once). Evaluating it means evaluating the dataset those images make when materialised:
draw ``j`` becomes the ``j``-th image, with its ground truth and detections copied. Matching is per
(image, category), so every copy of an image has its original detections' states; only accumulation
changes. This module re-accumulates without copying anything:

- each category's detections are ranked once, by descending score, ties by image then rank
  (:func:`build_index`): the order of the original evaluation;
- a replicate weighs each detection by its image's count of draws, and counts a true positive as
  that many true positives and a false positive as that many false positives, which is what the
  copies give when they stand next to each other in the ranking;
- they do unless scores tie: pycocotools breaks ties between images by image order, here the draw
  order, and within an image by rank. So a run of equal scores is expanded into its copies, sorted by
  (draw position, rank), and counted one by one.

The precision points come from :func:`deteval.integrators.coco101_from_true_positives`, the function
COCO's accumulation (:mod:`deteval.accumulate`) uses, on the same counts, so a replicate's arrays are
the same bits as evaluating the materialised dataset.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deteval.accumulate import group_order
from deteval.integrators import coco101_from_true_positives, counts_reaching
from deteval.jit import njit
from deteval.sorting import sort_slices_by_score_desc


@dataclass(frozen=True)
class ReplayIndex:
    """One evaluation's matched detections ranked per category, and its ground truth, for re-accumulation.

    Detections outside the largest max-dets cut are dropped. ``state`` is ``(N, A * T)``, column
    ``a * n_thr + t``; ``tie_end[p]`` is the end of the run of equal scores that starts at row ``p``
    (``p + 1`` when none ties with it). Only a run that is ``mixed`` needs its copies in draw order: in
    any other, each column's true positives see the same false-positive counts in every order.
    """

    state: np.ndarray  # int8 (N, A * T), rows in ranked order
    n_thr: int
    image: np.ndarray  # int64 (N,), dense image index
    m0: np.ndarray  # int64 (N,), the least max-dets index that keeps the row
    rank: np.ndarray  # int64 (N,), rank within the (image, category)
    tie_end: np.ndarray  # int64 (N,)
    mixed: np.ndarray  # bool (N,): the run starting at row p holds a true and a false positive of one column
    cat_off: np.ndarray  # int64 (K + 1,)
    gt_image: np.ndarray  # int64 (G,)
    gt_category: np.ndarray  # int64 (G,)
    gt_counted: np.ndarray  # bool (G, A): the ground truth counts as a positive in area range a
    n_images: int
    max_dets: np.ndarray  # int64 (M,)
    rec_thrs: np.ndarray  # float64 (R,)

    @property
    def shapes(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The shapes of ``precision`` (T, R, K, A, M) and ``recall`` (T, K, A, M)."""
        t, k, a, m = self.n_thr, len(self.cat_off) - 1, self.state.shape[1] // self.n_thr, len(self.max_dets)
        return (t, len(self.rec_thrs), k, a, m), (t, k, a, m)


def build_index(
    det_category: np.ndarray,
    det_image: np.ndarray,
    det_rank: np.ndarray,
    det_score: np.ndarray,
    state: np.ndarray,
    gt_image: np.ndarray,
    gt_category: np.ndarray,
    gt_counted: np.ndarray,
    n_cat: int,
    n_images: int,
    max_dets: np.ndarray,
    rec_thrs: np.ndarray,
) -> ReplayIndex:
    """Rank matched detections (as :func:`deteval.accumulate.accumulate` does) once, for many replicates.

    ``det_*`` and ``state`` are a matching's rows (``CocoMatches``), ``gt_counted`` each ground truth's
    "counts as a positive" flag per area range (what ``npig`` counts).
    """
    n, n_area, n_thr = state.shape
    order, cat_off, _ = group_order(det_category, det_image, det_rank, n_cat)
    score = np.ascontiguousarray(det_score, np.float64)
    if n:
        sort_slices_by_score_desc(order, cat_off, score)
    max_dets = np.ascontiguousarray(max_dets, np.int64)
    rank = np.asarray(det_rank, np.int64)[order]
    m0 = np.searchsorted(max_dets, rank, side="right")  # max dets m keep a row when rank < max_dets[m]
    keep = m0 < len(max_dets)
    order, rank, m0 = order[keep], rank[keep], m0[keep]
    category = np.asarray(det_category, np.int64)[order]
    cat_off = np.searchsorted(category, np.arange(n_cat + 1), side="left").astype(np.int64)
    s = score[order]
    # runs of equal scores within a category; -inf stands for NaN scores, and compares equal as NaN would sort
    starts = np.flatnonzero(np.concatenate([[True], (s[1:] != s[:-1]) | (category[1:] != category[:-1])]))
    ends = np.append(starts[1:], len(order)) if len(order) else starts
    ranked = np.ascontiguousarray(np.asarray(state, np.int8).reshape(n, n_area * n_thr)[order])
    mixed = np.zeros(len(order), np.bool_)
    if len(order):
        some_tp = np.logical_or.reduceat(ranked == 1, starts, axis=0)
        some_fp = np.logical_or.reduceat(ranked == 0, starts, axis=0)
        mixed[starts] = (some_tp & some_fp).any(axis=1) & (ends - starts > 1)
    return ReplayIndex(
        state=ranked,
        n_thr=n_thr,
        image=np.asarray(det_image, np.int64)[order],
        m0=m0.astype(np.int64),
        rank=rank,
        tie_end=np.repeat(ends, ends - starts).astype(np.int64),
        mixed=mixed,
        cat_off=cat_off,
        gt_image=np.asarray(gt_image, np.int64),
        gt_category=np.asarray(gt_category, np.int64),
        gt_counted=np.ascontiguousarray(gt_counted, np.bool_).reshape(len(gt_image), n_area),
        n_images=int(n_images),
        max_dets=max_dets,
        rec_thrs=np.ascontiguousarray(rec_thrs, np.float64),
    )


@njit(cache=True, nogil=True, inline="always")
def _take(row, wt, st, m0, fp_by_m0, n_tp, tp_fp, has):  # pragma: no cover - numba
    """Count ``wt`` copies of ranked row ``row``; False when a category has more true positives than
    positives (inconsistent input)."""
    n_md, n_var, cap = tp_fp.shape
    m = m0[row]
    for mm in range(m, n_md):
        has[mm] = True
    srow = st[row]
    frow = fp_by_m0[m]
    any_tp = False
    for j in range(n_var):  # branch-free (it vectorises): most rows are no true positive anywhere
        s = srow[j]
        frow[j] += wt if s == 0 else 0
        any_tp |= s == 1
    if not any_tp:
        return True
    ok = True
    for j in range(n_var):
        if srow[j] != 1:
            continue
        n_fp = 0
        for mm in range(m):
            n_fp += fp_by_m0[mm, j]
        for mm in range(m, n_md):
            n_fp += fp_by_m0[mm, j]
            v = n_tp[mm, j]
            if v + wt > cap:
                ok = False
                continue
            for c in range(wt):
                tp_fp[mm, j, v + c] = n_fp
            n_tp[mm, j] = v + wt
    return ok


@njit(cache=True, nogil=True)
def _replicate_kernel(
    draw,
    n_images,
    st,
    n_thr,
    image,
    m0,
    rank,
    tie_end,
    mixed,
    cat_off,
    gt_image,
    gt_category,
    gt_counted,
    n_md,
    rec_thrs,
    need_p,
    precision,
    recall,
):  # pragma: no cover - numba
    """One replicate's ``precision[A, M, T, R, K]`` (where ``need_p[a, m]``) and ``recall[A, M, T, K]``;
    False on inconsistent input."""
    n = len(draw)
    w = np.zeros(n_images, np.int64)
    for j in range(n):
        w[draw[j]] += 1
    # the draw positions of each image, ascending (a counting sort of the draws)
    pos_off = np.zeros(n_images + 1, np.int64)
    for i in range(n_images):
        pos_off[i + 1] = pos_off[i] + w[i]
    fill = pos_off[:-1].copy()
    pos = np.empty(n, np.int64)
    for j in range(n):
        pos[fill[draw[j]]] = j
        fill[draw[j]] += 1
    n_cat = len(cat_off) - 1
    n_var = st.shape[1]
    n_area = n_var // n_thr
    n_rec = len(rec_thrs)
    npig = np.zeros((n_cat, n_area), np.int64)
    for g in range(len(gt_image)):
        wg = w[gt_image[g]]
        if wg:
            for a in range(n_area):
                if gt_counted[g, a]:
                    npig[gt_category[g], a] += wg
    cap = 1
    for k in range(n_cat):
        for a in range(n_area):
            cap = max(cap, npig[k, a])
    span = 1
    for p in range(len(rank)):
        span = max(span, rank[p] + 1)
    n_tp = np.empty((n_md, n_var), np.int64)
    fp_by_m0 = np.empty((n_md, n_var), np.int64)
    tp_fp = np.empty((n_md, n_var, cap), np.int64)
    has = np.empty(n_md, np.bool_)
    env = np.empty(cap)
    q = np.empty(n_rec)
    which = np.empty(n_rec, np.int64)
    need = np.empty(n_rec, np.int64)
    keys = np.empty(16, np.int64)  # scratch for runs of ties, grown as needed
    rows = np.empty(16, np.int64)
    ok = True
    for k in range(n_cat):
        for m in range(n_md):
            has[m] = False
            for j in range(n_var):
                n_tp[m, j] = 0
                fp_by_m0[m, j] = 0
        p, p1 = cat_off[k], cat_off[k + 1]
        while p < p1:
            e = tie_end[p]
            if not mixed[p]:  # one row, or ties whose order changes no count
                for r in range(p, e):
                    wt = w[image[r]]
                    if wt > 0:
                        ok &= _take(r, wt, st, m0, fp_by_m0, n_tp, tp_fp, has)
            else:  # equal scores: the copies in (draw position, rank) order, one at a time
                c = 0
                for r in range(p, e):
                    c += w[image[r]]
                if c > len(keys):
                    keys = np.empty(2 * c, np.int64)
                    rows = np.empty(2 * c, np.int64)
                c = 0
                for r in range(p, e):
                    i = image[r]
                    for x in range(pos_off[i], pos_off[i + 1]):
                        keys[c] = pos[x] * span + rank[r]
                        rows[c] = r
                        c += 1
                for x in np.argsort(keys[:c]):  # keys are distinct: any sort gives this order
                    ok &= _take(rows[x], 1, st, m0, fp_by_m0, n_tp, tp_fp, has)
            p = e
        for a in range(n_area):
            npos = npig[k, a]
            if npos == 0:  # -1: a category without positives is never penalised
                for m in range(n_md):
                    for t in range(n_thr):
                        recall[a, m, t, k] = -1.0
                        if need_p[a, m]:
                            for r in range(n_rec):
                                precision[a, m, t, r, k] = -1.0
                continue
            counts_reaching(rec_thrs, npos, need)
            for m in range(n_md):
                for t in range(n_thr):
                    j = a * n_thr + t
                    ntp = n_tp[m, j]
                    recall[a, m, t, k] = ntp / npos if ntp > 0 else 0.0
                    if need_p[a, m]:
                        coco101_from_true_positives(tp_fp[m, j], ntp, need, has[m], env, q, which)
                        for r in range(n_rec):
                            precision[a, m, t, r, k] = q[r]
    return ok


KERNELS = (_take, _replicate_kernel)


def replicate_arrays(
    index: ReplayIndex, draw: np.ndarray, need_precision: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """COCO's ``precision`` and ``recall`` of the images ``draw`` (dense indices, in the order they stand,
    repeats allowed), as evaluating that materialised dataset gives them, laid out ``[A, M, T, R, K]``
    and ``[A, M, T, K]`` (``precision[a, m]`` is pycocotools' ``precision[:, :, :, a, m]``, contiguous).

    ``need_precision`` (bool ``(A, M)``) limits the precision to the (area range, max dets) pairs asked
    for (the others are left unwritten); None computes all. The kernel holds no GIL: replicates run
    side by side on threads.
    """
    (n_thr, n_rec, n_cat, n_area, n_md), _ = index.shapes
    need = np.ones((n_area, n_md), np.bool_) if need_precision is None else np.asarray(need_precision, np.bool_)
    precision = np.empty((n_area, n_md, n_thr, n_rec, n_cat))
    recall = np.empty((n_area, n_md, n_thr, n_cat))
    draw = np.ascontiguousarray(draw, np.int64)
    if len(draw) and (draw.min() < 0 or draw.max() >= index.n_images):
        raise ValueError(f"image indices must lie in [0, {index.n_images})")
    ok = _replicate_kernel(
        draw, index.n_images, index.state, index.n_thr, index.image, index.m0, index.rank, index.tie_end,
        index.mixed, index.cat_off, index.gt_image, index.gt_category, index.gt_counted, n_md, index.rec_thrs,
        need, precision, recall,
    )  # fmt: skip
    if not ok:
        raise ValueError("a category has more true positives than positives: matches and ground truth disagree")
    return precision, recall


def as_pycocotools(precision: np.ndarray, recall: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`replicate_arrays`' arrays as pycocotools lays them out: ``[T, R, K, A, M]`` and ``[T, K, A, M]``."""
    return precision.transpose(2, 3, 4, 0, 1), recall.transpose(2, 3, 0, 1)
