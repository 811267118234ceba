"""Per-category ranking and COCO's precision/recall arrays.

Each category's detections are ranked once (stable sort of -score over images
in ascending id order, then rank within image: pycocotools' concatenation
order); every (area range, max dets, IoU threshold) variant is a mask over
that one order.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from deteval.matching.groups import Groups

EPS = float(np.spacing(1))  # pycocotools adds it to precision's denominator


@njit(cache=True, parallel=True)
def _accumulate_kernel(state, score, rank, cat_off, has_rows, npig, max_dets, rec_thrs):  # pragma: no cover - numba
    n_thr, n_area = state.shape[2], state.shape[1]
    n_cat, n_md, n_rec = len(cat_off) - 1, len(max_dets), len(rec_thrs)
    precision = np.full((n_thr, n_rec, n_cat, n_area, n_md), -1.0)
    scores = np.full((n_thr, n_rec, n_cat, n_area, n_md), -1.0)
    recall = np.full((n_thr, n_cat, n_area, n_md), -1.0)
    for k in prange(n_cat):
        if not has_rows[k]:
            continue
        p0, p1 = cat_off[k], cat_off[k + 1]
        order = np.argsort(-score[p0:p1], kind="mergesort")
        sel = np.empty(p1 - p0, np.int64)
        rc = np.empty(p1 - p0)
        pr = np.empty(p1 - p0)
        for m in range(n_md):
            nd = 0
            for j in range(p1 - p0):
                p = p0 + order[j]
                if rank[p] < max_dets[m]:
                    sel[nd] = p
                    nd += 1
            for a in range(n_area):
                npos = npig[k, a]
                if npos == 0:
                    continue  # stays -1: a category without positives is never penalised
                for t in range(n_thr):
                    tp = 0.0
                    fp = 0.0
                    for j in range(nd):
                        s = state[sel[j], a, t]
                        if s == 1:
                            tp += 1.0
                        elif s == 0:
                            fp += 1.0
                        rc[j] = tp / npos
                        pr[j] = tp / (fp + tp + EPS)
                    recall[t, k, a, m] = rc[nd - 1] if nd > 0 else 0.0
                    for i in range(nd - 1, 0, -1):  # precision envelope, from the right
                        if pr[i] > pr[i - 1]:
                            pr[i - 1] = pr[i]
                    # searchsorted(rc, rec_thrs, side="left"); unreached recall points stay 0
                    j = 0
                    for r in range(n_rec):
                        while j < nd and rc[j] < rec_thrs[r]:
                            j += 1
                        if j < nd:
                            precision[t, r, k, a, m] = pr[j]
                            scores[t, r, k, a, m] = score[sel[j]]
                        else:
                            precision[t, r, k, a, m] = 0.0
                            scores[t, r, k, a, m] = 0.0
    return precision, recall, scores


def positives_per_category(
    gt_category: np.ndarray,
    gt_area: np.ndarray,
    gt_ignore: np.ndarray,
    area_ranges: np.ndarray,
    n_cat: int,
) -> np.ndarray:
    """Count of non-ignored ground truth per (category, area range), int64 (K, A).

    Pass ``gt_category`` all zeros and ``n_cat=1`` to pool categories.
    """
    area_ranges = np.asarray(area_ranges, np.float64).reshape(-1, 2)
    out = np.zeros((n_cat, len(area_ranges)), np.int64)
    for a, (lo, hi) in enumerate(area_ranges):
        counted = ~gt_ignore & (gt_area >= lo) & (gt_area <= hi)
        out[:, a] = np.bincount(gt_category[counted], minlength=n_cat)
    return out


def accumulate(
    groups: Groups,
    state: np.ndarray,
    dt_score: np.ndarray,
    npig: np.ndarray,
    max_dets: np.ndarray,
    rec_thrs: np.ndarray,
    n_cat: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """COCO's ``precision[T,R,K,A,M]``, ``recall[T,K,A,M]`` and ``scores[T,R,K,A,M]``.

    Parameters
    ----------
    groups : Groups
        The grouping the matches were made on (category-major).
    state : int8 array (len(groups.dt_rows), A, T)
        Outcome of each grouped detection, from :func:`deteval.matching.coco.match_groups`.
    dt_score : float64 array
        Scores of all detections, indexed by detection row.
    npig : int64 array (K, A)
        Non-ignored ground truth per category and area range.
    max_dets : int array (M,), ascending
    rec_thrs : float64 array (R,)
    n_cat : int
        Number of categories K (1 when categories are pooled).

    Returns
    -------
    precision, recall, scores : float64 arrays, -1 where a category has no
    ground truth or no rows, as pycocotools' ``COCOeval.eval``.
    """
    cat_of_group = np.maximum(groups.category, 0)  # pooled categories: one K slot
    cat_of_pos = np.repeat(cat_of_group, np.diff(groups.dt_offsets))
    cat_off = np.searchsorted(cat_of_pos, np.arange(n_cat + 1), side="left").astype(np.int64)
    has_rows = np.zeros(n_cat, np.bool_)
    has_rows[cat_of_group] = True
    return _accumulate_kernel(
        state,
        np.ascontiguousarray(dt_score[groups.dt_rows], np.float64),
        groups.dt_rank,
        cat_off,
        has_rows,
        np.ascontiguousarray(npig, np.int64),
        np.ascontiguousarray(max_dets, np.int64),
        np.ascontiguousarray(rec_thrs, np.float64),
    )
