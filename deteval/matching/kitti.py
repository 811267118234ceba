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
each image once per distinct set of admitted detections and adds the counts to every threshold sharing it.
The IoU is the reference's expression, operation for operation (no ``+1``).
"""

from __future__ import annotations

import numpy as np

from deteval.jit import njit

__all__ = ["count_at_thresholds", "dontcare_cover", "pair_iou", "tp_scores"]

NO_DETECTION = -10000000.0


@njit(cache=True, nogil=True)
def _iou_blocks(dt_box, dt_start, gt_box, gt_start, iou_start, out):  # pragma: no cover
    for im in range(len(dt_start) - 1):
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
    return out


def pair_iou(
    dt_box: np.ndarray, dt_start: np.ndarray, gt_box: np.ndarray, gt_start: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(iou, iou_start)``: per image, the (detections x ground truth) IoU block, row-major, flat.

    ``*_box``: float64 (N, 4) ``x1, y1, x2, y2``; ``*_start``: int64 (I + 1,) row offsets of each image."""
    nd, ng = np.diff(dt_start), np.diff(gt_start)
    iou_start = np.zeros(len(nd) + 1, np.int64)
    np.cumsum(nd * ng, out=iou_start[1:])
    out = np.empty(int(iou_start[-1]), np.float64)
    _iou_blocks(
        np.ascontiguousarray(dt_box, np.float64),
        np.asarray(dt_start, np.int64),
        np.ascontiguousarray(gt_box, np.float64),
        np.asarray(gt_start, np.int64),
        iou_start,
        out,
    )
    return out, iou_start


@njit(cache=True, nogil=True)
def _cover(dt_box, dt_start, dc_box, dc_start, thr, out):  # pragma: no cover
    for im in range(len(dt_start) - 1):
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
    return out


def dontcare_cover(
    dt_box: np.ndarray, dt_start: np.ndarray, dc_box: np.ndarray, dc_start: np.ndarray, thr: float
) -> np.ndarray:
    """bool (D,): the detection's intersection over its own area with a DontCare box of its image is > ``thr``."""
    out = np.zeros(len(dt_box), np.bool_)
    return _cover(
        np.ascontiguousarray(dt_box, np.float64),
        np.asarray(dt_start, np.int64),
        np.ascontiguousarray(dc_box, np.float64).reshape(-1, 4),
        np.asarray(dc_start, np.int64),
        float(thr),
        out,
    )


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
    iou, base, ng, g0, d0, rg, nrg, rd, nrd, ign_gt, ign_dt, admitted, taken, cover, thr, gt_alpha, dt_alpha, aos
):  # pragma: no cover
    # one image at one set of admitted detections, over its scored rows only (rg: ground truth, rd:
    # detections, both offsets in file order): (tp, fp, fn, similarity or -1)
    for a in range(nrd):
        taken[a] = False
    tp = 0
    fn = 0
    sim = 0.0
    for b in range(nrg):
        i = rg[b]
        gi = ign_gt[g0 + i]
        best = -1
        best_iou = 0.0
        on_ignored = False
        for a in range(nrd):
            if taken[a] or not admitted[a]:
                continue
            j = rd[a]
            dj = ign_dt[d0 + j]
            o = iou[base + j * ng + i]
            if o > thr and (o > best_iou or on_ignored) and dj == 0:
                best_iou = o
                best = a
                on_ignored = False
            elif o > thr and best == -1 and dj == 1:
                best = a
                on_ignored = True
        if best == -1:
            if gi == 0:
                fn += 1
        else:
            taken[best] = True
            j = rd[best]
            if gi == 0 and ign_dt[d0 + j] == 0:
                tp += 1
                if aos:
                    sim += (1.0 + np.cos(gt_alpha[g0 + i] - dt_alpha[d0 + j])) / 2.0
    fp = 0
    for a in range(nrd):
        j = rd[a]
        if admitted[a] and not taken[a] and ign_dt[d0 + j] == 0 and not cover[d0 + j]:
            fp += 1
    if not aos or (tp == 0 and fp == 0):
        sim = -1.0
    return tp, fp, fn, sim


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
    for im in range(len(dt_start) - 1):
        max_d = max(max_d, dt_start[im + 1] - dt_start[im])
        max_g = max(max_g, gt_start[im + 1] - gt_start[im])
    rd = np.empty(max_d, np.int64)
    rg = np.empty(max_g, np.int64)
    admitted = np.empty(max_d, np.bool_)
    taken = np.empty(max_d, np.bool_)
    for im in images:
        g0, g1 = gt_start[im], gt_start[im + 1]
        d0, d1 = dt_start[im], dt_start[im + 1]
        # the rows of this run: detections and ground truth of another class (-1) take no part
        nrd = 0
        for j in range(d1 - d0):
            if ign_dt[d0 + j] != -1:
                rd[nrd] = j
                nrd += 1
        nrg = 0
        for i in range(g1 - g0):
            if ign_gt[g0 + i] != -1:
                rg[nrg] = i
                nrg += 1
        if nrd == 0 and nrg == 0:
            continue
        last = -1  # admitted detections at the previous threshold
        tp, fp, fn, sim = 0, 0, 0, -1.0
        for t in range(n_t):
            th = thresholds[t]
            k = 0
            for a in range(nrd):
                ok = not (score[d0 + rd[a]] < th)
                admitted[a] = ok
                k += ok
            if k != last:  # thresholds descend: the admitted set only grows, so its size names it
                tp, fp, fn, sim = _match_admitted(
                    iou,
                    iou_start[im],
                    g1 - g0,
                    g0,
                    d0,
                    rg,
                    nrg,
                    rd,
                    nrd,
                    ign_gt,
                    ign_dt,
                    admitted,
                    taken,
                    cover,
                    thr,
                    gt_alpha,
                    dt_alpha,
                    aos,
                )
                last = k
            pr[t, 0] += tp
            pr[t, 1] += fp
            pr[t, 2] += fn
            if sim != -1.0:
                pr[t, 3] += sim
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
