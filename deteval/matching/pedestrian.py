"""Pedestrian matching: the Caltech / CityPersons rule of ``eval_MR_multisetup.py`` (dataset authors).

Per image, with the ground truth ordered unignored first (stable) and the detections by descending score
(stable), each detection in turn scans the ground truth:

* a ground truth already matched is skipped;
* once the detection holds a match (to an unignored or an ignored one), the next ignored ground truth ends
  the scan, so among ignored ground truth the first that qualifies is kept;
* an overlap ``>=`` the best so far (starting at ``thr``) becomes the best: ties go to the later one;
* the overlap is the IoU for unignored ground truth and the intersection over the detection's area for
  ignored ones; an ignored one absorbs any number of detections.

A detection matched to an unignored ground truth is a TP unless that ground truth's id is 0 (the reference
stores the id and tests it for truth: a FP); matched to an ignored one it is dropped (IGNORED); else a FP.
The overlap is the reference's expression, operation for operation.
"""

from __future__ import annotations

import numpy as np

from deteval.jit import njit

TP, FP, IGNORED = 1, 0, -1


@njit(cache=True, inline="always")
def _overlap(d, g, ignored):  # pragma: no cover
    dx1, dy1 = d[0], d[1]
    dx2, dy2 = d[0] + d[2], d[1] + d[3]
    darea = d[2] * d[3]
    gx1, gy1 = g[0], g[1]
    gx2, gy2 = g[0] + g[2], g[1] + g[3]
    garea = g[2] * g[3]
    w = min(dx2, gx2) - max(dx1, gx1)
    if w <= 0:
        return 0.0
    h = min(dy2, gy2) - max(dy1, gy1)
    if h <= 0:
        return 0.0
    t = w * h
    union = darea if ignored else darea + garea - t
    return t / union


@njit(cache=True, nogil=True)
def _match_caltech(gt_boxes, gt_ignored, gt_id_zero, gt_start, dt_boxes, dt_start, thr, outcome):  # pragma: no cover
    n_images = len(gt_start) - 1
    for im in range(n_images):
        g0, g1 = gt_start[im], gt_start[im + 1]
        d0, d1 = dt_start[im], dt_start[im + 1]
        taken = np.zeros(g1 - g0, np.bool_)
        for d in range(d0, d1):
            best = thr
            bstg = -1
            bstm = 0  # 0: none, 1: unignored, -1: ignored
            for g in range(g0, g1):
                if taken[g - g0]:
                    continue
                if bstm != 0 and gt_ignored[g]:
                    break
                ov = _overlap(dt_boxes[d], gt_boxes[g], gt_ignored[g])
                if ov < best:
                    continue
                best = ov
                bstg = g
                bstm = -1 if gt_ignored[g] else 1
            if bstg < 0:
                outcome[d] = FP
            elif bstm == -1:
                outcome[d] = IGNORED
            else:
                taken[bstg - g0] = True
                outcome[d] = FP if gt_id_zero[bstg] else TP


def match_caltech(
    gt_boxes: np.ndarray,
    gt_ignored: np.ndarray,
    gt_id_zero: np.ndarray,
    gt_start: np.ndarray,
    dt_boxes: np.ndarray,
    dt_start: np.ndarray,
    thr: float = 0.5,
) -> np.ndarray:
    """Each detection's outcome (int8: TP 1, FP 0, IGNORED -1) under the Caltech rule (module docstring).

    Rows are grouped by image: image ``i``'s ground truth is ``gt_start[i]:gt_start[i+1]`` (unignored first)
    and its detections ``dt_start[i]:dt_start[i+1]`` (by descending score); boxes are float64 (n, 4) xywh.
    """
    gt_boxes = np.ascontiguousarray(gt_boxes, np.float64).reshape(-1, 4)
    dt_boxes = np.ascontiguousarray(dt_boxes, np.float64).reshape(-1, 4)
    gt_start = np.ascontiguousarray(gt_start, np.int64)
    dt_start = np.ascontiguousarray(dt_start, np.int64)
    if len(gt_start) != len(dt_start) or gt_start[-1] != len(gt_boxes) or dt_start[-1] != len(dt_boxes):
        raise ValueError("match_caltech: offsets do not cover the rows")
    if len(gt_ignored) != len(gt_boxes) or len(gt_id_zero) != len(gt_boxes):
        raise ValueError("match_caltech: ground-truth columns differ in length")
    # the reference's threshold is min(thr, 1 - 1e-10)
    outcome = np.full(len(dt_boxes), FP, np.int8)
    _match_caltech(gt_boxes, np.ascontiguousarray(gt_ignored, np.bool_), np.ascontiguousarray(gt_id_zero, np.bool_),
                   gt_start, dt_boxes, dt_start, min(float(thr), 1 - 1e-10), outcome)
    return outcome


# ---- CrowdHuman (CrowdDet's lib/evaluate): boxes x1y1x2y2, eps in every ratio

EPS = 1e-6


@njit(cache=True, inline="always")
def _inter(d, g):  # pragma: no cover
    iw = min(d[2], g[2]) - max(d[0], g[0])
    ih = min(d[3], g[3]) - max(d[1], g[1])
    return max(0.0, iw) * max(0.0, ih)


@njit(cache=True, nogil=True)
def _match_crowdhuman(gt_boxes, gt_tag, gt_start, dt_boxes, dt_start, thr, outcome):  # pragma: no cover
    for im in range(len(gt_start) - 1):
        g0, g1 = gt_start[im], gt_start[im + 1]
        taken = np.zeros(g1 - g0, np.bool_)
        for d in range(dt_start[im], dt_start[im + 1]):
            db = dt_boxes[d]
            darea = (db[2] - db[0]) * (db[3] - db[1])
            maxpos = -1
            maxiou = thr
            for g in range(g0, g1):
                if taken[g - g0]:
                    continue
                gb = gt_boxes[g]
                inter = _inter(db, gb)
                if gt_tag[g] > 0:
                    garea = (gb[2] - gb[0]) * (gb[3] - gb[1])
                    iou = inter / (darea + garea - inter + EPS)
                    if iou > maxiou:
                        maxiou = iou
                        maxpos = g
                else:
                    if maxpos >= 0:
                        break
                    ioa = inter / (darea + EPS)
                    if ioa > thr:
                        maxiou = ioa
                        maxpos = g
            if maxpos < 0:
                outcome[d] = FP
            elif gt_tag[maxpos] > 0:
                taken[maxpos - g0] = True
                outcome[d] = TP
            else:
                outcome[d] = IGNORED


def match_crowdhuman(gt_boxes: np.ndarray, gt_tag: np.ndarray, gt_start: np.ndarray, dt_boxes: np.ndarray,
                     dt_start: np.ndarray, thr: float = 0.5) -> np.ndarray:
    """CrowdDet's ``compare_caltech``: each detection's outcome (int8 TP 1, FP 0, IGNORED -1).

    Per image (rows grouped by ``*_start`` offsets), ground truth ordered by tag descending (stable: persons,
    then background, then ignored) and detections by descending score (stable); boxes x1y1x2y2 float64. A
    detection takes the unmatched person of largest IoU ``inter / (union + 1e-6) > thr`` (the first of
    equal ones); failing that, the first later box of tag <= 0 whose ``inter / (its area + 1e-6) > thr``
    drops it; else a FP.
    """
    gt_boxes = np.ascontiguousarray(gt_boxes, np.float64).reshape(-1, 4)
    dt_boxes = np.ascontiguousarray(dt_boxes, np.float64).reshape(-1, 4)
    gt_start = np.ascontiguousarray(gt_start, np.int64)
    dt_start = np.ascontiguousarray(dt_start, np.int64)
    if len(gt_start) != len(dt_start) or gt_start[-1] != len(gt_boxes) or dt_start[-1] != len(dt_boxes):
        raise ValueError("match_crowdhuman: offsets do not cover the rows")
    outcome = np.full(len(dt_boxes), FP, np.int8)
    _match_crowdhuman(gt_boxes, np.ascontiguousarray(gt_tag, np.int8), gt_start, dt_boxes, dt_start, float(thr),
                      outcome)
    return outcome


@njit(cache=True)
def _max_weight_matches(w):  # pragma: no cover
    """The number of pairs of a maximum-weight matching of the bipartite graph with weights ``w`` (n, m),
    0 for no edge: the Hungarian method (shortest augmenting paths with potentials) on cost ``-w``, n <= m."""
    n, m = w.shape
    inf = np.inf
    u = np.zeros(n + 1)
    v = np.zeros(m + 1)
    p = np.zeros(m + 1, np.int64)  # p[j]: the row (1-based) assigned to column j
    way = np.zeros(m + 1, np.int64)
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv = np.full(m + 1, inf)
        used = np.zeros(m + 1, np.bool_)
        while True:
            used[j0] = True
            i0 = p[j0]
            delta = inf
            j1 = 0
            for j in range(1, m + 1):
                if not used[j]:
                    cur = -w[i0 - 1, j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta = minv[j]
                        j1 = j
            for j in range(m + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while True:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
            if j0 == 0:
                break
    k = 0
    for j in range(1, m + 1):
        if p[j] != 0 and w[p[j] - 1, j - 1] > 0:
            k += 1
    return k, p


@njit(cache=True, nogil=True)
def _jaccard(
    gt_boxes, gt_tag, gt_start, dt_boxes, dt_score, dt_start, score_thr, thr, k_out, m_out, n_out
):  # pragma: no cover
    for im in range(len(gt_start) - 1):
        g0, g1 = gt_start[im], gt_start[im + 1]
        d0, d1 = dt_start[im], dt_start[im + 1]
        dts = np.empty(d1 - d0, np.int64)
        nd = 0
        for d in range(d0, d1):
            if dt_score[d] > score_thr:
                dts[nd] = d
                nd += 1
        pos = np.empty(g1 - g0, np.int64)
        ign = np.empty(g1 - g0, np.int64)
        npos = 0
        nign = 0
        for g in range(g0, g1):
            if gt_tag[g] != -1:
                pos[npos] = g
                npos += 1
            else:
                ign[nign] = g
                nign += 1
        dt_matched = np.zeros(nd, np.bool_)
        gt_matched = np.zeros(npos, np.bool_)
        k = 0
        if nd > 0 and npos > 0:
            w = np.zeros((nd, npos))
            for a in range(nd):
                db = dt_boxes[dts[a]]
                darea = (db[2] - db[0]) * (db[3] - db[1])
                for b in range(npos):
                    gb = gt_boxes[pos[b]]
                    inter = _inter(db, gb)
                    iou = inter / (darea + (gb[2] - gb[0]) * (gb[3] - gb[1]) - inter + EPS)
                    if iou > thr:
                        w[a, b] = iou
            if nd <= npos:
                k, p = _max_weight_matches(w)
                for j in range(1, npos + 1):
                    if p[j] != 0 and w[p[j] - 1, j - 1] > 0:
                        dt_matched[p[j] - 1] = True
                        gt_matched[j - 1] = True
            else:
                k, p = _max_weight_matches(w.T.copy())
                for j in range(1, nd + 1):
                    if p[j] != 0 and w[j - 1, p[j] - 1] > 0:
                        dt_matched[j - 1] = True
                        gt_matched[p[j] - 1] = True
        ign_dt = 0
        ign_gt = 0
        if nign > 0:
            for a in range(nd):
                if not dt_matched[a] and _covered(dt_boxes[dts[a]], gt_boxes, ign, nign, thr):
                    ign_dt += 1
            for b in range(npos):
                if not gt_matched[b] and _covered(gt_boxes[pos[b]], gt_boxes, ign, nign, thr):
                    ign_gt += 1
        k_out[im] = k
        m_out[im] = npos - ign_gt
        n_out[im] = nd - ign_dt


@njit(cache=True, inline="always")
def _covered(box, gt_boxes, ign, nign, thr):  # pragma: no cover
    """Whether the largest intersection over ``box``'s (clamped) area with an ignore region is > thr."""
    area = max(box[2] - box[0], 0.0) * max(box[3] - box[1], 0.0)
    best = -np.inf
    for c in range(nign):
        v = _inter(box, gt_boxes[ign[c]]) / (area + EPS)
        if v > best:
            best = v
    return best > thr


def jaccard_counts(gt_boxes: np.ndarray, gt_tag: np.ndarray, gt_start: np.ndarray, dt_boxes: np.ndarray,
                   dt_score: np.ndarray, dt_start: np.ndarray, score_thr: float, thr: float = 0.5
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CrowdDet's ``compute_JI_with_ignore`` per image: (k, m, n) int64 arrays.

    Detections with score ``> score_thr`` are kept; ``k`` is the size of a maximum-weight matching between
    them and the non-ignored ground truth (tag != -1) on the pairs of IoU ``> thr`` (weights the IoUs); ``m``
    the non-ignored ground truth less the unmatched ones covered ``> thr`` by an ignore region (intersection
    over their own area), ``n`` the kept detections less the unmatched ones so covered.
    """
    n_images = len(gt_start) - 1
    k = np.zeros(n_images, np.int64)
    m = np.zeros(n_images, np.int64)
    n = np.zeros(n_images, np.int64)
    _jaccard(np.ascontiguousarray(gt_boxes, np.float64).reshape(-1, 4), np.ascontiguousarray(gt_tag, np.int8),
             np.ascontiguousarray(gt_start, np.int64), np.ascontiguousarray(dt_boxes, np.float64).reshape(-1, 4),
             np.ascontiguousarray(dt_score, np.float64), np.ascontiguousarray(dt_start, np.int64), float(score_thr),
             float(thr), k, m, n)
    return k, m, n
