"""COCO's greedy, score-ordered matching, for every IoU threshold and area range in one pass.

The outcome of each detection is one int8 per (area range, IoU threshold):
``FP`` (0), ``TP`` (1) or ``IGNORED`` (2, neither). That is everything
accumulation needs, and it merges across shards by concatenation.
"""

from __future__ import annotations

import numpy as np

from deteval.jit import njit, run_chunks
from deteval.matching.groups import Groups

FP, TP, IGNORED = 0, 1, 2


@njit(cache=True, nogil=True)
def _match_kernel(
    lo_grp,
    hi_grp,
    gt_off,
    dt_off,
    pair_off,
    ious,
    gt_area,
    gt_crowd,
    gt_ignore,
    gt_counts,
    dt_area,
    iou_thrs,
    area_lo,
    area_hi,
    out,
    out_iou,
    out_gt,
    iou_area,
):  # pragma: no cover - numba
    n_area, n_thr = len(area_lo), len(iou_thrs)
    keep_iou = out_iou.shape[0] > 0  # the overlap of each match in area range iou_area, for LRP; or a (0, 0) array
    keep_gt = out_gt.shape[0] > 0  # the ground truth each detection took there (the matches table); or (0, 0)
    max_ng = max_nd = max_pairs = 0
    for grp in range(lo_grp, hi_grp):
        max_ng = max(max_ng, gt_off[grp + 1] - gt_off[grp])
        max_nd = max(max_nd, dt_off[grp + 1] - dt_off[grp])
        max_pairs = max(max_pairs, pair_off[grp + 1] - pair_off[grp])
    # no ground truth below the lowest threshold can ever be matched, nor stop a scan early (ignored
    # ground truth comes last, so a break at one would come at the next ignored candidate too);
    # each detection's scan is over its candidates only, usually none or one
    thr = np.empty(n_thr)
    thr_min = 1 - 1e-10
    for t in range(n_thr):
        thr[t] = min(iou_thrs[t], 1 - 1e-10)
        thr_min = min(thr_min, iou_thrs[t])
    # scratch is allocated once per call, not per group
    ig = np.empty(max_ng, np.bool_)
    order = np.empty(max_ng, np.int64)
    taken = np.empty(n_thr * max_ng, np.bool_)  # per threshold: thresholds never share a match
    cand = np.empty(max_pairs, np.int64)
    n_cand = np.empty(max_nd, np.int64)
    scan = np.empty(max_ng, np.int64)
    for grp in range(lo_grp, hi_grp):
        g0, g1 = gt_off[grp], gt_off[grp + 1]
        d0, d1 = dt_off[grp], dt_off[grp + 1]
        ng, nd = g1 - g0, d1 - d0
        if nd == 0:
            continue
        p0 = pair_off[grp]
        # candidates in file order, the same in every area range; -1: a NaN overlap, after which every
        # later ground truth wins the comparison, so all are scanned
        for d in range(nd):
            n = 0
            nan = False
            for g in range(ng):
                v = ious[p0 + d * ng + g]
                nan |= v != v
                if not v < thr_min:
                    cand[d * ng + n] = g
                    n += 1
            n_cand[d] = -1 if nan else n
        for a in range(n_area):
            lo, hi = area_lo[a], area_hi[a]
            for g in range(ng):
                r = g0 + g
                ig[g] = gt_ignore[r] or gt_area[r] < lo or gt_area[r] > hi
            # ground truth in stable order, ignored last (pycocotools' argsort of the ignore flags)
            k = 0
            for flag in (False, True):
                for g in range(ng):
                    if ig[g] == flag:
                        order[k] = g
                        k += 1
            for i in range(n_thr * ng):
                taken[i] = False
            for d in range(nd):
                # this detection's scan: its candidates in that order
                n = 0
                if n_cand[d] < 0:
                    for k in range(ng):
                        scan[k] = order[k]
                    n = ng
                else:
                    for flag in (False, True):
                        for k in range(n_cand[d]):
                            g = cand[d * ng + k]
                            if ig[g] == flag:
                                scan[n] = g
                                n += 1
                da = dt_area[d0 + d]
                outside = da < lo or da > hi
                for t in range(n_thr):
                    tk = t * ng
                    best = thr[t]
                    m = -1
                    for k in range(n):
                        g = scan[k]
                        if taken[tk + g] and not gt_crowd[g0 + g]:
                            continue
                        # once a regular ground truth is matched, ignored ones cannot take over
                        if m > -1 and not ig[m] and ig[g]:
                            break
                        iou = ious[p0 + d * ng + g]
                        if iou < best:
                            continue
                        best = iou
                        m = g
                    counts = False
                    ignored = False
                    if m > -1:
                        ignored = ig[m]
                        counts = gt_counts[g0 + m]
                        taken[tk + m] = True
                    if not counts and outside:
                        ignored = True
                    if keep_iou and a == iou_area:
                        out_iou[d0 + d, t] = best if m > -1 else 0.0
                    if keep_gt and a == iou_area:
                        out_gt[d0 + d, t] = g0 + m if m > -1 else -1
                    if ignored:
                        out[d0 + d, a, t] = IGNORED
                    elif counts:
                        out[d0 + d, a, t] = TP
                    else:
                        out[d0 + d, a, t] = FP


KERNELS = (_match_kernel,)  # what match_groups calls (for deteval.jit.preload)


def match_groups(
    groups: Groups,
    ious: np.ndarray,
    gt_area: np.ndarray,
    gt_crowd: np.ndarray,
    gt_ignore: np.ndarray,
    gt_counts: np.ndarray,
    dt_area: np.ndarray,
    iou_thrs: np.ndarray,
    area_ranges: np.ndarray,
    iou_area: int | None = None,
    keep_gt: bool = False,
) -> np.ndarray | tuple[np.ndarray, ...]:
    """Match every group's detections to its ground truth, COCO's way.

    Parameters
    ----------
    groups : Groups
        CSR grouping from :func:`deteval.matching.groups.group_by_image_category`
        (detections already in score order and cut to the largest max-dets).
    ious : float64 array
        Overlaps (box or mask IoU, OKS) of each group's ``D x G`` pairs, row-major,
        group ``i`` at ``groups.pair_offsets()[i]``.
    gt_area, dt_area : float64 arrays, the areas tested against the area ranges
    gt_crowd : bool array
        Crowd ground truth: may be matched by any number of detections.
    gt_ignore : bool array
        Ground truth ignored in every area range (pycocotools: ``iscrowd``).
    gt_counts : bool array
        Whether a match to this ground truth marks the detection as matched.
        pycocotools records matches by annotation id, so a match to id 0 reads
        as "unmatched" there; compat mode passes ``ann_id != 0``.
    iou_thrs : float64 array (T,)
    area_ranges : float64 array (A, 2), inclusive ``[lo, hi]``

    Returns
    -------
    int8 array (len(groups.dt_rows), A, T) of ``FP``/``TP``/``IGNORED``,
    row ``i`` for detection ``groups.dt_rows[i]``. With ``iou_area`` (an area range's index), also a
    float64 array (N, T) holding the overlap of each detection's match in that area range (0 where it
    matched nothing): the localisation error LRP reads. With ``keep_gt`` as well (it needs ``iou_area``), a
    third, int64 (N, T): the position in ``groups.gt_rows`` of the ground truth each detection took there
    (-1: none), whatever its id (a match to id 0 is kept; ``gt_counts`` decides only the outcome).
    """
    area_ranges = np.asarray(area_ranges, np.float64).reshape(-1, 2)
    # per-row attributes gathered into group order once: the kernel then reads them sequentially
    gt, dt = groups.gt_rows, groups.dt_rows
    pair_off = groups.pair_offsets()
    out = np.empty((len(dt), len(area_ranges), len(iou_thrs)), np.int8)
    keep_iou = iou_area is not None
    out_iou = np.empty((len(dt), len(iou_thrs)) if keep_iou else (0, 0))
    if keep_gt and not keep_iou:
        raise ValueError("keep_gt needs iou_area: the area range whose matches are kept")
    out_gt = np.empty((len(dt), len(iou_thrs)) if keep_gt else (0, 0), np.int64)
    run_chunks(
        _match_kernel, len(groups.gt_offsets) - 1, np.diff(pair_off) + np.diff(groups.dt_offsets),
        groups.gt_offsets, groups.dt_offsets, pair_off,
        np.ascontiguousarray(ious, np.float64),
        np.asarray(gt_area, np.float64)[gt], np.asarray(gt_crowd, np.bool_)[gt],
        np.asarray(gt_ignore, np.bool_)[gt], np.asarray(gt_counts, np.bool_)[gt],
        np.asarray(dt_area, np.float64)[dt],
        np.ascontiguousarray(iou_thrs, np.float64),
        np.ascontiguousarray(area_ranges[:, 0]), np.ascontiguousarray(area_ranges[:, 1]),
        out, out_iou, out_gt, -1 if iou_area is None else int(iou_area),
    )  # fmt: skip
    if keep_gt:
        return out, out_iou, out_gt
    return (out, out_iou) if keep_iou else out
