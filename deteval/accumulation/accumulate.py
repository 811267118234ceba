"""Per-category ranking and COCO's precision/recall arrays.

Each category's detections are ranked once: by descending score, ties by
image (ascending id) then by rank within the image, which is the order
pycocotools' stable sort leaves them in. Every (area range, IoU threshold,
max dets) variant is then read off that one order in a single pass.

Only true positives matter after that pass: recall first reaches a
threshold at a true positive (or at the first detection, for recall 0), and
the precision envelope's maximum over any suffix is attained at a true
positive (a false positive or an ignored detection never raises precision).
So the pass records, per variant, each true positive's false-positive count,
and :func:`deteval.accumulation.integrators.coco101_from_true_positives` reads the 101
points off those short lists with pycocotools' own arithmetic, the same bits.

This is the cumulative TP/FP curve of :mod:`deteval.accumulation.cumulative`, fused: the one pass counts
false positives for every (area range, IoU threshold, max dets) variant at once, reading each
detection's state row once. Calling ``cumulative_counts`` per variant instead gives the same bits
but walks each category's rows once per variant (120 on COCO) through strided state columns:
2.6x the kernel's time on 400,000 detections x 80 categories (one thread; 0.36 s vs 0.14 s).
"""

from __future__ import annotations

import numpy as np

from deteval.accumulation.integrators import coco101_from_true_positives, counts_reaching
from deteval.jit import njit, run_chunks
from deteval.matching.argsort_classic import classic_rank_slices
from deteval.matching.sorting import (
    counting_sort,
    sort_by_score_desc,
    sort_slices_by_score_desc,
    sort_slices_range,
)
from deteval.tuning import TUNING
from deteval.vocabulary import TIE_POLICIES


@njit(cache=True, nogil=True)
def _accumulate_kernel(
    lo, hi, flat, n_thr, score, rank, order, ranked, contiguous, cat_off, npig, max_dets, rec_thrs, precision,
    recall, scores, overflow,
):  # pragma: no cover - numba
    """Categories ``lo..hi-1``. ``order`` holds each category's rows in (image, rank) order; each slice is
    ranked by score here, in place, unless ``ranked`` (done already). ``flat`` is the state ``(N, A * T)``,
    column ``a * n_thr + t``. ``contiguous``: category ``k``'s rows are ``cat_off[k]..cat_off[k+1]-1``."""
    n_var = flat.shape[1]
    n_area = n_var // n_thr
    n_md, n_rec = len(max_dets), len(rec_thrs)
    for k in range(lo, hi):
        p0, p1 = cat_off[k], cat_off[k + 1]
        if not ranked:
            sort_by_score_desc(order[p0:p1], score)
        if contiguous and n_var > 0:  # (no area ranges: rows of no columns, nothing to read)
            # the pass below reads the category's state rows in score order, which no hardware prefetch
            # foresees: read once in memory order first, they are then in cache (3x faster on coco)
            touched = 0
            for row in range(p0, p1):
                touched += flat[row, 0]
            if touched < 0:  # never (states are 0, 1, 2): keeps the reads from being optimised away
                overflow[k] = True
        cap = 1
        for a in range(n_area):
            cap = max(cap, npig[k, a])
        # per (max dets, area x threshold): false positives before each true positive, and its score (read
        # at the recall points: kept here, not looked up through its position and row there)
        n_tp = np.empty((n_md, n_var), np.int64)
        tp_fp = np.empty((n_md, n_var, cap), np.int32)
        tp_score = np.empty((n_md, n_var, cap))
        first = np.empty(n_md, np.int64)  # first detection kept at each max dets
        for m in range(n_md):
            first[m] = -1
        # a detection counts at every max dets from the least that keeps it (m0) on, so false positives
        # are counted once, under m0, and summed over m' <= m when a true positive needs the count at m
        fp_by_m0 = np.empty((n_md, n_var), np.int64)
        for m in range(n_md):  # zeroed by loops: np.zeros and np.full add compile time on every cold start
            for j in range(n_var):
                n_tp[m, j] = 0
                fp_by_m0[m, j] = 0
        for p in range(p0, p1):
            row = order[p]
            m0 = 0
            while m0 < n_md and rank[row] >= max_dets[m0]:
                m0 += 1
            if m0 == n_md:
                continue
            for m in range(m0, n_md):
                if first[m] < 0:
                    first[m] = p
            # branch-free count first (it vectorises); most detections are no true positive anywhere
            any_tp = False
            for j in range(n_var):
                s = flat[row, j]
                fp_by_m0[m0, j] += s == 0
                any_tp |= s == 1
            if not any_tp:
                continue
            row_score = score[row]
            for j in range(n_var):
                if flat[row, j] != 1:
                    continue
                n_fp = 0
                for m in range(m0):
                    n_fp += fp_by_m0[m, j]
                for m in range(m0, n_md):
                    n_fp += fp_by_m0[m, j]
                    v = n_tp[m, j]
                    if v >= cap:  # more true positives than positives: inconsistent input
                        overflow[k] = True
                        continue
                    tp_fp[m, j, v] = n_fp
                    tp_score[m, j, v] = row_score
                    n_tp[m, j] = v + 1
        env = np.empty(cap)
        q = np.empty(n_rec)
        which = np.empty(n_rec, np.int64)
        need = np.empty(n_rec, np.int64)
        for a in range(n_area):
            npos = npig[k, a]
            if npos == 0:
                continue  # stays -1: a category without positives is never penalised
            counts_reaching(rec_thrs, npos, need)
            for m in range(n_md):
                for t in range(n_thr):
                    j = a * n_thr + t
                    ntp = n_tp[m, j]
                    recall[t, k, a, m] = ntp / npos if ntp > 0 else 0.0
                    coco101_from_true_positives(tp_fp[m, j], ntp, need, first[m] >= 0, env, q, which)
                    for r in range(n_rec):
                        precision[t, r, k, a, m] = q[r]
                        if which[r] == -2:
                            scores[t, r, k, a, m] = 0.0  # recall never reached: 0, as pycocotools
                        elif which[r] == -1:  # recall 0 is reached at the first detection, whatever it is
                            scores[t, r, k, a, m] = score[order[first[m]]]
                        else:
                            scores[t, r, k, a, m] = tp_score[m, j, which[r]]


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
        # pycocotools' test (outside: below or above): a NaN area is in every range
        counted = ~gt_ignore & ~((gt_area < lo) | (gt_area > hi))
        out[:, a] = np.bincount(gt_category[counted], minlength=n_cat)
    return out


@njit(cache=True)
def _in_group_order(category, image, rank):  # pragma: no cover - numba
    for i in range(1, len(category)):
        if category[i] != category[i - 1]:
            if category[i] < category[i - 1]:
                return False
        elif image[i] != image[i - 1]:
            if image[i] < image[i - 1]:
                return False
        elif rank[i] < rank[i - 1]:
            return False
    return True


def _rows_in_group_order(category: np.ndarray, image: np.ndarray, rank: np.ndarray) -> bool:
    """Whether the rows are in (category, image, rank) order: a kernel for large inputs, numpy below
    50,000 rows (a small evaluation does not compile the kernel)."""
    if len(category) >= TUNING.kernel_sort_rows:
        return bool(_in_group_order(category, image, rank))
    dc, di, dr = np.diff(category), np.diff(image), np.diff(rank)
    return bool(np.all((dc > 0) | ((dc == 0) & ((di > 0) | ((di == 0) & (dr >= 0))))))


def group_order(
    det_category: np.ndarray, det_image: np.ndarray, det_rank: np.ndarray, n_cat: int
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Rows in (category, image, rank) order, each category's offsets in it, and whether the rows came
    in that order (the order is then ``arange``: each category's rows are contiguous).

    A stable sort of -score over each category's slice then ranks the
    category as pycocotools does (detections concatenated image by image,
    each image's in rank order). Rows from one ``match`` already come in this
    order; shards concatenated in any order are put in it by counting sorts.
    """
    # indices below 2**31: int32, the dtype matching gives them (no copies)
    category = np.ascontiguousarray(det_category, np.int32)
    image = np.ascontiguousarray(det_image, np.int32)
    rank = np.ascontiguousarray(det_rank, np.int32)
    order = np.arange(len(category), dtype=np.int64)
    ordered = category
    in_order = not len(order) or _rows_in_group_order(category, image, rank)
    if not in_order:
        order = counting_sort(rank, None, int(rank.max()) + 1)
        order = counting_sort(image, order, int(image.max()) + 1)
        order = counting_sort(category, order, n_cat)
        ordered = category[order]
    cat_off = np.searchsorted(ordered, np.arange(n_cat + 1, dtype=np.int32), side="left").astype(np.int64)
    return order, cat_off, in_order


KERNELS = (_in_group_order, sort_slices_range, _accumulate_kernel)  # what accumulate calls (deteval.jit.preload)


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
    here by category, then by descending score, ties by image then rank.

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
    rec_thrs : float64 array (R,), ascending

    Returns
    -------
    precision, recall, scores : float64 arrays, -1 where a category has no
    positives, as pycocotools' ``COCOeval.eval``.
    """
    n_cat = npig.shape[0]
    order, cat_off, contiguous = group_order(det_category, det_image, det_rank, n_cat)
    n, n_area, n_thr = state.shape
    shape = (n_thr, len(rec_thrs), n_cat, n_area, len(max_dets))
    precision, scores = np.full(shape, -1.0), np.full(shape, -1.0)
    recall = np.full((n_thr, n_cat, n_area, len(max_dets)), -1.0)
    overflow = np.zeros(n_cat, np.bool_)
    score = np.ascontiguousarray(det_score, np.float64)
    ranked = n >= TUNING.radix_rows  # the radix sort's 1 s compile is worth it from here
    if ranked:
        sort_slices_by_score_desc(order, cat_off, score)
    run_chunks(
        _accumulate_kernel, n_cat, np.diff(cat_off),
        np.ascontiguousarray(state, np.int8).reshape(n, n_area * n_thr), n_thr,
        score, np.ascontiguousarray(det_rank, np.int32),
        order, ranked, contiguous, cat_off, np.ascontiguousarray(npig, np.int64),
        np.ascontiguousarray(max_dets, np.int64), np.ascontiguousarray(rec_thrs, np.float64),
        precision, recall, scores, overflow,
    )  # fmt: skip
    if overflow.any():
        k = int(np.argmax(overflow))
        raise ValueError(f"category index {k} has more true positives than positives: matches and npig disagree")
    return precision, recall, scores


def rank_by_category(
    category: np.ndarray, score: np.ndarray, n_cat: int, ties: str = "item"
) -> tuple[np.ndarray, np.ndarray]:
    """Each category's rows by descending score: ``(order, offsets)``.

    ``order[offsets[k]:offsets[k + 1]]`` are category ``k``'s rows, best first: the ranking VOC's
    integrators and the score-threshold analyses read. (COCO's accumulation ranks inside its kernel,
    with the same rule over rows in image order.) Equal scores stand by ``ties``:

    * ``"item"`` and ``"group"``: in row order (a stable sort); ``"group"`` makes each run one step later,
      in the integrators;
    * ``"argsort"``: where ``np.argsort(-score[rows])`` put them under numpy < 1.25, ``rows`` being the
      category's rows in row order: ``voc_eval.py``'s ranking of a class's detections in file order
      (:mod:`deteval.matching.argsort_classic`).
    """
    if ties not in TIE_POLICIES:
        raise ValueError(f"ties must be one of {TIE_POLICIES}, got {ties!r}")
    category = np.asarray(category)
    score = np.ascontiguousarray(score, np.float64)
    if ties == "argsort":
        order = np.argsort(category, kind="stable").astype(np.int64)
    else:
        order = np.lexsort((-score, category))
    offsets = np.searchsorted(category[order], np.arange(n_cat + 1), side="left").astype(np.int64)
    if ties == "argsort" and len(order):
        classic_rank_slices(order, offsets, score)
    return order, offsets
