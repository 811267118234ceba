"""KITTI's 2D matching, as OpenPCDet's ``kitti_object_eval_python`` (``eval.py``, metric 0) has it.

Per image, ground truth and detections in file order. Each run is one class at one difficulty, with its
flags: ``ign_gt`` (0 counted, 1 ignored: a neighbour class or outside the difficulty, -1 not of the class)
and ``ign_dt`` (0 counted, 1 ignored: lower than the difficulty's minimum height whatever its class,
-1 another class).

* Candidate pass (:func:`tp_scores`): each scored ground truth in turn takes the highest-scoring free
  detection (not -1) whose IoU is strictly above the threshold (the first on equal scores); a true
  positive is a counted ground truth taking a counted detection; its score is a candidate threshold.
* Counting pass (:func:`count_at_thresholds`): at each threshold the detections scoring below it are
  left out; each scored ground truth takes the free counted detection of the highest IoU above the
  threshold (the first of equal IoUs), or else the first free ignored one above it, which a later counted
  one still displaces; ground truth without one is a miss if counted; a pairing with an ignored side
  takes the detection without a true positive. Counted detections left free are false positives unless
  their intersection over their own area with a ``DontCare`` box of the image exceeds the threshold.
* With ``aos``, each true positive adds ``(1 + cos(alpha_gt - alpha_dt)) / 2`` to its image's similarity
  (summed in ground-truth order), which the threshold's total takes when the image has a TP or FP.

An image's counts change only where a detection's score crosses the threshold, so the counting pass matches
each image once per distinct set of admitted detections and adds the counts to every threshold sharing it;
each ground truth walks only its candidates, the detections of IoU above the threshold (listed once per
image), which is all the reference's walk over every detection can pick.
The IoU is the reference's expression, operation for operation (no ``+1``).
"""

from __future__ import annotations

import numpy as np

from deteval.jit import njit, run_chunks

__all__ = ["count_at_thresholds", "dontcare_cover", "pair_iou", "tp_scores"]

NO_DETECTION = -10000000.0


@njit(cache=True, nogil=True)
def _iou_blocks(lo, hi, dt_box, dt_start, gt_box, gt_start, iou_start, out):  # pragma: no cover
    for im in range(lo, hi):
        d0, d1 = dt_start[im], dt_start[im + 1]
        g0, g1 = gt_start[im], gt_start[im + 1]
        ng = g1 - g0
        base = iou_start[im]
        for i in range(ng):
            q = gt_box[g0 + i]
            q_area = (q[2] - q[0]) * (q[3] - q[1])
            for j in range(d1 - d0):
                b = dt_box[d0 + j]
                v = 0.0
                iw = min(b[2], q[2]) - max(b[0], q[0])
                if iw > 0:
                    ih = min(b[3], q[3]) - max(b[1], q[1])
                    if ih > 0:
                        ua = (b[2] - b[0]) * (b[3] - b[1]) + q_area - iw * ih
                        v = iw * ih / ua
                out[base + j * ng + i] = v


def pair_iou(
    dt_box: np.ndarray, dt_start: np.ndarray, gt_box: np.ndarray, gt_start: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(iou, iou_start)``: per image, the (detections x ground truth) IoU block, row-major, flat.

    ``*_box``: float64 (N, 4) ``x1, y1, x2, y2``; ``*_start``: int64 (I + 1,) row offsets of each image."""
    nd, ng = np.diff(dt_start), np.diff(gt_start)
    iou_start = np.zeros(len(nd) + 1, np.int64)
    np.cumsum(nd * ng, out=iou_start[1:])
    out = np.empty(int(iou_start[-1]), np.float64)
    run_chunks(
        _iou_blocks,
        len(nd),
        nd * ng,
        np.ascontiguousarray(dt_box, np.float64),
        np.asarray(dt_start, np.int64),
        np.ascontiguousarray(gt_box, np.float64),
        np.asarray(gt_start, np.int64),
        iou_start,
        out,
    )
    return out, iou_start


@njit(cache=True, nogil=True)
def _cover(lo, hi, dt_box, dt_start, dc_box, dc_start, thr, out):  # pragma: no cover
    for im in range(lo, hi):
        for j in range(dt_start[im], dt_start[im + 1]):
            b = dt_box[j]
            for k in range(dc_start[im], dc_start[im + 1]):
                q = dc_box[k]
                iw = min(b[2], q[2]) - max(b[0], q[0])
                if iw > 0:
                    ih = min(b[3], q[3]) - max(b[1], q[1])
                    if ih > 0 and iw * ih / ((b[2] - b[0]) * (b[3] - b[1])) > thr:
                        out[j] = True
                        break


def dontcare_cover(
    dt_box: np.ndarray, dt_start: np.ndarray, dc_box: np.ndarray, dc_start: np.ndarray, thr: float
) -> np.ndarray:
    """bool (D,): the detection's intersection over its own area with a DontCare box of its image is > ``thr``."""
    out = np.zeros(len(dt_box), np.bool_)
    dt_start = np.asarray(dt_start, np.int64)
    dc_start = np.asarray(dc_start, np.int64)
    run_chunks(
        _cover,
        len(dt_start) - 1,
        np.diff(dt_start) * np.diff(dc_start),
        np.ascontiguousarray(dt_box, np.float64),
        dt_start,
        np.ascontiguousarray(dc_box, np.float64).reshape(-1, 4),
        dc_start,
        float(thr),
        out,
    )
    return out


@njit(cache=True, nogil=True)
def _tp_scores(images, iou, iou_start, gt_start, dt_start, ign_gt, ign_dt, score, thr, out):  # pragma: no cover
    n = 0
    for im in images:
        g0, g1 = gt_start[im], gt_start[im + 1]
        d0, d1 = dt_start[im], dt_start[im + 1]
        ng = g1 - g0
        base = iou_start[im]
        taken = np.zeros(d1 - d0, np.bool_)
        for i in range(ng):
            gi = ign_gt[g0 + i]
            if gi == -1:
                continue
            best = -1
            best_score = NO_DETECTION
            for j in range(d1 - d0):
                if ign_dt[d0 + j] == -1 or taken[j]:
                    continue
                s = score[d0 + j]
                if iou[base + j * ng + i] > thr and s > best_score:
                    best = j
                    best_score = s
            if best_score == NO_DETECTION:
                continue
            taken[best] = True
            if gi == 0 and ign_dt[d0 + best] == 0:
                out[n] = score[d0 + best]
                n += 1
    return n


def tp_scores(
    images: np.ndarray,
    iou: np.ndarray,
    iou_start: np.ndarray,
    gt_start: np.ndarray,
    dt_start: np.ndarray,
    ign_gt: np.ndarray,
    ign_dt: np.ndarray,
    score: np.ndarray,
    thr: float,
) -> np.ndarray:
    """float64: the scores of the candidate pass's true positives over ``images`` (dense indices, in order)."""
    images = np.asarray(images, np.int64)
    # at most one true positive per ground truth of the images walked (a draw may repeat an image)
    out = np.empty(int(np.diff(gt_start)[images].sum()), np.float64)
    n = _tp_scores(
        images,
        iou,
        iou_start,
        gt_start,
        dt_start,
        np.asarray(ign_gt, np.int8),
        np.asarray(ign_dt, np.int8),
        score,
        float(thr),
        out,
    )
    return out[:n]


@njit(cache=True, nogil=True)
def _match_admitted(
    rg, nrg, g0, cand, cand_iou, cand_start, rd, d0, ign_gt, ign_dt, admitted, taken, taken_list, gt_alpha,
    dt_alpha, aos,
):  # pragma: no cover  # fmt: skip
    # one image at one set of admitted detections: each scored ground truth (rg, file order) walks only its
    # candidates (the detections of IoU above the threshold, file order), which is all the reference's walk
    # over every detection can pick. Returns (tp, fn, similarity, how many taken: their run rows in
    # taken_list, left marked in ``taken`` for the caller to count and clear)
    tp = 0
    fn = 0
    sim = 0.0
    n_taken = 0
    for b in range(nrg):
        i = rg[b]
        gi = ign_gt[g0 + i]
        best = -1
        best_iou = 0.0
        on_ignored = False
        for c in range(cand_start[b], cand_start[b + 1]):
            a = cand[c]
            if taken[a] or not admitted[a]:
                continue
            dj = ign_dt[d0 + rd[a]]
            o = cand_iou[c]
            if (o > best_iou or on_ignored) and dj == 0:
                best_iou = o
                best = a
                on_ignored = False
            elif best == -1 and dj == 1:
                best = a
                on_ignored = True
        if best == -1:
            if gi == 0:
                fn += 1
        else:
            taken[best] = True
            taken_list[n_taken] = best
            n_taken += 1
            j = rd[best]
            if gi == 0 and ign_dt[d0 + j] == 0:
                tp += 1
                if aos:
                    sim += (1.0 + np.cos(gt_alpha[g0 + i] - dt_alpha[d0 + j])) / 2.0
    return tp, fn, sim, n_taken


@njit(cache=True, nogil=True)
def _count(
    images,
    iou,
    iou_start,
    gt_start,
    dt_start,
    ign_gt,
    ign_dt,
    score,
    cover,
    gt_alpha,
    dt_alpha,
    thr,
    thresholds,
    aos,
    pr,
):  # pragma: no cover
    n_t = len(thresholds)
    max_d = 0
    max_g = 0
    max_pairs = 0
    for im in range(len(dt_start) - 1):
        nd = dt_start[im + 1] - dt_start[im]
        ng = gt_start[im + 1] - gt_start[im]
        max_d = max(max_d, nd)
        max_g = max(max_g, ng)
        max_pairs = max(max_pairs, nd * ng)
    rd = np.empty(max_d, np.int64)
    rg = np.empty(max_g, np.int64)
    first = np.empty(max_d, np.int64)  # the first threshold admitting the detection (n_t: none)
    arrivals = np.zeros(n_t + 1, np.int64)  # per threshold, the detections it admits first
    order = np.empty(max_d, np.int64)
    steps = np.zeros((n_t, 3), np.int64)
    admitted = np.zeros(max_d, np.bool_)
    taken = np.zeros(max_d, np.bool_)
    taken_list = np.empty(max_g, np.int64)
    cand = np.empty(max_pairs, np.int64)
    cand_iou = np.empty(max_pairs, np.float64)
    cand_start = np.empty(max_g + 1, np.int64)
    for im in images:
        g0, g1 = gt_start[im], gt_start[im + 1]
        d0, d1 = dt_start[im], dt_start[im + 1]
        ng = g1 - g0
        base = iou_start[im]
        # the rows of this run: detections and ground truth of another class (-1) take no part
        nrd = 0
        for j in range(d1 - d0):
            if ign_dt[d0 + j] != -1:
                rd[nrd] = j
                nrd += 1
        nrg = 0
        for i in range(ng):
            if ign_gt[g0 + i] != -1:
                rg[nrg] = i
                nrg += 1
        if nrd == 0 and nrg == 0:
            continue
        n = 0
        for b in range(nrg):
            cand_start[b] = n
            for a in range(nrd):
                o = iou[base + rd[a] * ng + rg[b]]
                if o > thr:
                    cand[n] = a
                    cand_iou[n] = o
                    n += 1
        cand_start[nrg] = n
        for a in range(nrd):
            # thresholds descend, so the reference's ``not score < threshold`` holds from some index on
            s = score[d0 + rd[a]]
            lo, hi = 0, n_t
            while lo < hi:
                mid = (lo + hi) // 2
                if s < thresholds[mid]:
                    lo = mid + 1
                else:
                    hi = mid
            first[a] = lo
            arrivals[lo] += 1
            admitted[a] = False
        # the run's detections by the threshold admitting them first (a counting sort on ``first``)
        at = 0
        for t in range(n_t + 1):
            c = arrivals[t]
            arrivals[t] = at
            at += c
        for a in range(nrd):
            order[arrivals[first[a]]] = a
            arrivals[first[a]] += 1
        # counted detections admitted, and of those the ones no DontCare region covers: false positives
        # unless taken
        free_fp = 0
        tp, fp, fn = 0, 0, 0
        k0 = 0
        t = 0
        while t < n_t:
            k1 = arrivals[t]  # order[k0:k1]: the detections admitted first at t
            for k in range(k0, k1):
                a = order[k]
                admitted[a] = True
                j = d0 + rd[a]
                if ign_dt[j] == 0 and not cover[j]:
                    free_fp += 1
            k0 = k1
            # the admitted set only grows, so the counts change only here: at the next threshold admitting any
            t_next = t + 1
            while t_next < n_t and arrivals[t_next] == k0:
                t_next += 1
            tp_new, fn_new, sim, n_taken = _match_admitted(
                rg, nrg, g0, cand, cand_iou, cand_start, rd, d0, ign_gt, ign_dt, admitted, taken, taken_list,
                gt_alpha, dt_alpha, aos,
            )  # fmt: skip
            fp_new = free_fp
            for k in range(n_taken):
                a = taken_list[k]
                taken[a] = False
                j = d0 + rd[a]
                if ign_dt[j] == 0 and not cover[j]:
                    fp_new -= 1
            # integer counts as steps (exact); the similarity added threshold by threshold, images in order
            steps[t, 0] += tp_new - tp
            steps[t, 1] += fp_new - fp
            steps[t, 2] += fn_new - fn
            tp, fp, fn = tp_new, fp_new, fn_new
            if aos and (tp != 0 or fp != 0):
                for u in range(t, t_next):
                    pr[u, 3] += sim
            t = t_next
        for t in range(n_t + 1):
            arrivals[t] = 0
    for k in range(3):
        run = 0
        for t in range(n_t):
            run += steps[t, k]
            pr[t, k] = run
    return pr


def count_at_thresholds(
    images: np.ndarray,
    iou: np.ndarray,
    iou_start: np.ndarray,
    gt_start: np.ndarray,
    dt_start: np.ndarray,
    ign_gt: np.ndarray,
    ign_dt: np.ndarray,
    score: np.ndarray,
    cover: np.ndarray,
    gt_alpha: np.ndarray,
    dt_alpha: np.ndarray,
    thr: float,
    thresholds: np.ndarray,
    aos: bool,
) -> np.ndarray:
    """float64 (T, 4): summed over ``images`` (in order), TP, FP, FN and the orientation similarity at each
    of ``thresholds`` (descending, as :func:`deteval.accumulation.kitti.thresholds` gives them)."""
    pr = np.zeros((len(thresholds), 4), np.float64)
    return _count(
        np.asarray(images, np.int64),
        iou,
        iou_start,
        gt_start,
        dt_start,
        np.asarray(ign_gt, np.int8),
        np.asarray(ign_dt, np.int8),
        score,
        np.asarray(cover, np.bool_),
        gt_alpha,
        dt_alpha,
        float(thr),
        np.asarray(thresholds, np.float64),
        bool(aos),
        pr,
    )
