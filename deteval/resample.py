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
    is_tp: np.ndarray  # bool (N,): a true positive in some column
    pattern: np.ndarray  # int64 (N,): the row's (state row, m0) among the patterns (rows with no true positive)
    pattern_fp: np.ndarray  # int64 (P, A * T): 1 where the pattern is a false positive
    pattern_m0: np.ndarray  # int64 (P,)
    cat_off: np.ndarray  # int64 (K + 1,)
    gt_image: np.ndarray  # int64 (G,)
    gt_category: np.ndarray  # int64 (G,)
    gt_counted: np.ndarray  # bool (G, A): the ground truth counts as a positive in area range a
    n_images: int
    max_dets: np.ndarray  # int64 (M,)
    rec_thrs: np.ndarray  # float64 (R,)
    span: int = 1  # ranks are below it: (draw position, rank) orders as position * span + rank

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
    # rows with no true positive only add to false-positive counts: a replicate sums their weights per
    # distinct (state row, m0) pattern between true positives, and adds each pattern once
    is_tp = (ranked == 1).any(axis=1) if len(order) else np.zeros(0, np.bool_)
    pattern, first = _pattern_ids(ranked, m0)
    return ReplayIndex(
        is_tp=is_tp,
        pattern=pattern,
        pattern_fp=(ranked[first] == 0).astype(np.int64),
        pattern_m0=m0[first].astype(np.int64),
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
        span=int(rank.max()) + 1 if len(rank) else 1,
    )


def _pattern_ids(state: np.ndarray, m0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's pattern (its distinct (state row, m0) pair) and a row of each pattern: np.unique's rows,
    by a lexsort of base-3 codes of 20 columns at a time (states are 0, 1, 2)."""
    n, v = state.shape
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    keys = [np.asarray(m0, np.int64)]
    for lo in range(0, v, 20):
        chunk = state[:, lo : lo + 20].astype(np.int64)
        keys.append(chunk @ (3 ** np.arange(chunk.shape[1], dtype=np.int64)))
    keys_arr = np.stack(keys)
    order = np.lexsort(keys_arr)
    ordered = keys_arr[:, order]
    new = np.concatenate([[True], (ordered[:, 1:] != ordered[:, :-1]).any(axis=0)])
    pattern = np.empty(n, np.int64)
    pattern[order] = np.cumsum(new) - 1
    return pattern, order[new]


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
def _sort_pairs(keys, vals, n):  # pragma: no cover - numba
    """``keys[:n]`` ascending with ``vals[:n]`` alongside, in place: insertion sort for the few true
    positives a run of ties holds, numpy's sort beyond."""
    if n <= 32:
        for i in range(1, n):
            k, v = keys[i], vals[i]
            j = i - 1
            while j >= 0 and keys[j] > k:
                keys[j + 1] = keys[j]
                vals[j + 1] = vals[j]
                j -= 1
            keys[j + 1] = k
            vals[j + 1] = v
        return
    o = np.argsort(keys[:n])
    ks, vs = keys[:n][o].copy(), vals[:n][o].copy()
    keys[:n] = ks
    vals[:n] = vs


@njit(cache=True, nogil=True, inline="always")
def _flush(n_touched, touched, pw, seen, pattern_fp, pattern_m0, fp_by_m0, has):  # pragma: no cover - numba
    """Add the false positives of the patterns seen since the last flush; returns 0 (none pending)."""
    n_md = len(has)
    for x in range(n_touched):
        q_ = touched[x]
        seen[q_] = False
        wt = pw[q_]
        if wt == 0:
            continue
        pw[q_] = 0
        m = pattern_m0[q_]
        for mm in range(m, n_md):
            has[mm] = True
        frow = fp_by_m0[m]
        prow = pattern_fp[q_]
        for j in range(len(frow)):
            frow[j] += wt * prow[j]
    return 0


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
    is_tp,
    pattern,
    pattern_fp,
    pattern_m0,
    cat_off,
    gt_image,
    gt_category,
    gt_counted,
    n_md,
    rec_thrs,
    span,
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
    seg = np.empty(16, np.int64)
    seg_pat = np.empty(16, np.int64)
    by_seg = np.empty(16, np.int64)
    fill_s = np.empty(16, np.int64)
    counts = np.empty(16, np.int64)
    n_pat = len(pattern_m0)
    pw = np.zeros(n_pat, np.int64)  # weight per pattern since the last flush
    touched = np.empty(n_pat, np.int64)
    seen = np.zeros(n_pat, np.bool_)
    ok = True
    for k in range(n_cat):
        for m in range(n_md):
            has[m] = False
            for j in range(n_var):
                n_tp[m, j] = 0
                fp_by_m0[m, j] = 0
        n_touched = 0
        p, p1 = cat_off[k], cat_off[k + 1]
        while p < p1:
            e = tie_end[p]
            if not mixed[p]:  # one row, or ties whose order changes no count
                for r in range(p, e):
                    wt = w[image[r]]
                    if is_tp[r]:
                        if wt > 0:
                            n_touched = _flush(n_touched, touched, pw, seen, pattern_fp, pattern_m0, fp_by_m0, has)
                            ok &= _take(r, wt, st, m0, fp_by_m0, n_tp, tp_fp, has)
                    else:  # no branch on the weight: images drawn or not come in no predictable order
                        q_ = pattern[r]
                        pw[q_] += wt
                        if not seen[q_]:
                            seen[q_] = True
                            touched[n_touched] = q_
                            n_touched += 1
                p = e
                continue
            # equal scores mixing true and false positives: the copies stand in (draw position, rank) order.
            # The true positives' copies are sorted; every other copy only needs the count of true-positive
            # copies before it (its segment), and adds its pattern in that segment.
            n_touched = _flush(n_touched, touched, pw, seen, pattern_fp, pattern_m0, fp_by_m0, has)
            c_tp = 0
            c_all = 0
            for r in range(p, e):
                c_all += w[image[r]]
                if is_tp[r]:
                    c_tp += w[image[r]]
            if c_all + 2 > len(keys):
                keys = np.empty(2 * c_all + 2, np.int64)
                rows = np.empty(2 * c_all + 2, np.int64)
                seg = np.empty(2 * c_all + 2, np.int64)
                seg_pat = np.empty(2 * c_all + 2, np.int64)
                by_seg = np.empty(2 * c_all + 2, np.int64)
                fill_s = np.empty(2 * c_all + 2, np.int64)
            c = 0
            for r in range(p, e):
                if is_tp[r]:
                    i = image[r]
                    for x in range(pos_off[i], pos_off[i + 1]):
                        keys[c] = pos[x] * span + rank[r]
                        rows[c] = r
                        c += 1
            _sort_pairs(keys, rows, c_tp)  # by key; keys are distinct, so any sort gives this order
            # the other copies by segment (a counting sort): segment s lies before true-positive copy s
            n_seg = c_tp + 1
            if n_seg + 1 > len(counts):
                counts = np.empty(2 * n_seg + 2, np.int64)
            for sg in range(n_seg + 1):
                counts[sg] = 0
            c = 0
            for r in range(p, e):
                if not is_tp[r]:
                    i = image[r]
                    for x in range(pos_off[i], pos_off[i + 1]):
                        sg = np.searchsorted(keys[:c_tp], pos[x] * span + rank[r])
                        seg[c] = sg
                        seg_pat[c] = pattern[r]
                        counts[sg + 1] += 1
                        c += 1
            for sg in range(n_seg):
                counts[sg + 1] += counts[sg]
            for sg in range(n_seg):
                fill_s[sg] = counts[sg]
            for x in range(c):
                by_seg[fill_s[seg[x]]] = seg_pat[x]
                fill_s[seg[x]] += 1
            for sg in range(n_seg):
                for x in range(counts[sg], counts[sg + 1]):
                    q_ = by_seg[x]
                    if pw[q_] == 0:
                        touched[n_touched] = q_
                        n_touched += 1
                    pw[q_] += 1
                if sg < c_tp:
                    n_touched = _flush(n_touched, touched, pw, seen, pattern_fp, pattern_m0, fp_by_m0, has)
                    ok &= _take(rows[sg], 1, st, m0, fp_by_m0, n_tp, tp_fp, has)
            p = e
        # the patterns after the category's last true positive change no precision, but say it has detections
        n_touched = _flush(n_touched, touched, pw, seen, pattern_fp, pattern_m0, fp_by_m0, has)
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


KERNELS = (_take, _flush, _sort_pairs, _replicate_kernel)


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
        index.mixed, index.is_tp, index.pattern, index.pattern_fp, index.pattern_m0, index.cat_off,
        index.gt_image, index.gt_category, index.gt_counted, n_md, index.rec_thrs, index.span,
        need, precision, recall,
    )  # fmt: skip
    if not ok:
        raise ValueError("a category has more true positives than positives: matches and ground truth disagree")
    return precision, recall


def as_pycocotools(precision: np.ndarray, recall: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`replicate_arrays`' arrays as pycocotools lays them out: ``[T, R, K, A, M]`` and ``[T, K, A, M]``."""
    return precision.transpose(2, 3, 4, 0, 1), recall.transpose(2, 3, 0, 1)
