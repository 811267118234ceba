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
