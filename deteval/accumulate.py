"""Per-category ranking and COCO's precision/recall arrays.

Each category's detections are ranked once (stable sort of -score over images
in ascending id order, then rank within image: pycocotools' concatenation
order); every (area range, max dets, IoU threshold) variant is a mask over
that one order.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

EPS = float(np.spacing(1))  # pycocotools adds it to precision's denominator


@njit(cache=True, parallel=True)
def _accumulate_kernel(state, score, rank, cat_off, npig, max_dets, rec_thrs):  # pragma: no cover - numba
    n_thr, n_area = state.shape[2], state.shape[1]
    n_cat, n_md, n_rec = len(cat_off) - 1, len(max_dets), len(rec_thrs)
    precision = np.full((n_thr, n_rec, n_cat, n_area, n_md), -1.0)
    scores = np.full((n_thr, n_rec, n_cat, n_area, n_md), -1.0)
    recall = np.full((n_thr, n_cat, n_area, n_md), -1.0)
    for k in prange(n_cat):
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
    det_category: np.ndarray,
    det_image: np.ndarray,
    det_rank: np.ndarray,
    det_score: np.ndarray,
    state: np.ndarray,
    npig: np.ndarray,
    max_dets: np.ndarray,
    rec_thrs: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """COCO's ``precision[T,R,K,A,M]``, ``recall[T,K,A,M]`` and ``scores[T,R,K,A,M]``.

    Rows may come in any order (shards concatenated, say): they are ranked
    here by (category, image, rank), then by score within each category.

    Parameters
    ----------
    det_category : int array (N,)
        Category index of each matched detection (0 for all when pooled).
    det_image : int array (N,)
        Image index, ascending with the image id (the tie order across images).
    det_rank : int array (N,)
        Rank of the detection within its (image, category) group, by score.
    det_score : float64 array (N,)
    state : int8 array (N, A, T)
        Outcome of each detection, from :func:`deteval.matching.coco.match_groups`.
    npig : int64 array (K, A)
        Non-ignored ground truth per category and area range.
    max_dets : int array (M,), ascending
    rec_thrs : float64 array (R,)

    Returns
    -------
    precision, recall, scores : float64 arrays, -1 where a category has no
    positives, as pycocotools' ``COCOeval.eval``.
    """
    n_cat = npig.shape[0]
    order = np.lexsort((det_rank, det_image, det_category))
    category = np.asarray(det_category)[order]
    cat_off = np.searchsorted(category, np.arange(n_cat + 1), side="left").astype(np.int64)
    return _accumulate_kernel(
        np.ascontiguousarray(state[order]),
        np.ascontiguousarray(det_score[order], np.float64),
        np.ascontiguousarray(det_rank[order], np.int64),
        cat_off,
        np.ascontiguousarray(npig, np.int64),
        np.ascontiguousarray(max_dets, np.int64),
        np.ascontiguousarray(rec_thrs, np.float64),
    )
