"""Open Images' per-image, per-class matching with group-of boxes (TF's ``PerImageEvaluation``, box mode).

For one (image, class) group, detections in descending score (ties in input order; the reference's
sort is unstable), after the reference's ``non_max_suppression`` at IoU 1.0 (which suppresses
nothing): scores ``<= -10`` (its ``score_threshold``) are dropped and at most ``max_dets`` (its
``nms_max_output_boxes``, 10000) are kept; the rest is ``DROPPED``. Then, as
``_compute_tp_fp_for_single_class``:

1. each detection takes the first highest-IoU normal (non-group-of) box, taken or not; IoU ``>= thr``
   on a free box: TP, the box taken; otherwise the detection stays a FP (it never moves on);
2. each detection that is not a TP takes the first group-of box of highest intersection over the
   detection's own area; ``>= thr``: the detection is ``ABSORBED`` (neither TP nor FP) and the box
   keeps the highest such score (``group_score``, from 0: a box whose detections all score
   ``<= 0`` counts for nothing, as ``scores_group_of > 0`` in the reference).

Box arithmetic is the reference's ``np_box_ops``: ``area = (y2 - y1) * (x2 - x1)``, intersection
``max(0, min(y2) - max(y1)) * max(0, min(x2) - max(x1))``, IoU ``i / (area_det + area_gt - i)``,
IoA ``i / area_det``.
"""

from __future__ import annotations

import numpy as np

from deteval.jit import njit, run_chunks
from deteval.matching.groups import Groups

FP, TP, ABSORBED, DROPPED = 0, 1, 2, 3


@njit(cache=True, nogil=True)
def _inter(a, b):  # pragma: no cover - numba
    h = min(a[3], b[3]) - max(a[1], b[1])
    w = min(a[2], b[2]) - max(a[0], b[0])
    return max(0.0, h) * max(0.0, w)


@njit(cache=True, nogil=True)
def _area(a):  # pragma: no cover - numba
    return (a[3] - a[1]) * (a[2] - a[0])


@njit(cache=True, nogil=True, inline="always")
def _best_box(d, dt_boxes, gt_boxes, group_of, gt_rows, ga, gb, want_group_of):  # pragma: no cover - numba
    """``(k, v)``: the first box of the group (index into ``gt_rows``) with the highest overlap among the
    group-of boxes (``want_group_of``: intersection over the detection's area) or the normal ones (IoU)."""
    area_d = _area(dt_boxes[d])
    best = -1
    best_v = -1.0
    for k in range(ga, gb):
        r = gt_rows[k]
        if group_of[r] != want_group_of:
            continue
        i = _inter(dt_boxes[d], gt_boxes[r])
        v = i / area_d if want_group_of else i / (area_d + _area(gt_boxes[r]) - i)
        if v > best_v:
            best_v = v
            best = k
    return best, best_v


@njit(cache=True, nogil=True)
def _match_range(lo, hi, gt_boxes, group_of, dt_boxes, dt_score, gt_rows, gt_off, dt_rows, dt_off,
                 thr, max_dets, min_score, outcome, group_score):  # pragma: no cover - numba  # fmt: skip
    for g in range(lo, hi):
        ga, gb = gt_off[g], gt_off[g + 1]
        kept = 0
        for j in range(dt_off[g], dt_off[g + 1]):
            d = dt_rows[j]
            if dt_score[d] > min_score and kept < max_dets:
                outcome[d] = FP
                kept += 1
            else:
                outcome[d] = DROPPED
        taken = np.zeros(gb - ga, np.bool_)
        for j in range(dt_off[g], dt_off[g + 1]):
            d = dt_rows[j]
            if outcome[d] != FP:
                continue
            best, best_v = _best_box(d, dt_boxes, gt_boxes, group_of, gt_rows, ga, gb, False)
            if best >= 0 and best_v >= thr and not taken[best - ga]:
                taken[best - ga] = True
                outcome[d] = TP
        # only after every TP is settled: a group-of box absorbs what normal boxes left as FP
        for j in range(dt_off[g], dt_off[g + 1]):
            d = dt_rows[j]
            if outcome[d] != FP:
                continue
            best, best_v = _best_box(d, dt_boxes, gt_boxes, group_of, gt_rows, ga, gb, True)
            if best >= 0 and best_v >= thr:
                outcome[d] = ABSORBED
                r = gt_rows[best]
                if dt_score[d] > group_score[r]:
                    group_score[r] = dt_score[d]


def match_openimages(
    gt_boxes: np.ndarray,
    group_of: np.ndarray,
    dt_boxes: np.ndarray,
    dt_score: np.ndarray,
    groups: Groups,
    iou_thr: float = 0.5,
    max_dets: int = 10000,
    min_score: float = -10.0,
) -> tuple[np.ndarray, np.ndarray]:
    """``(outcome, group_score)``: each detection's ``FP``/``TP``/``ABSORBED``/``DROPPED`` (int8), and each
    ground-truth row's highest absorbed score (float64, 0 where none; meaningful for group-of rows).

    Boxes are ``(x1, y1, x2, y2)`` float64; detection boxes must have positive area (the loader drops the
    others, as the reference does before matching). ``groups`` from
    :func:`deteval.matching.groups.group_by_image_category` (detections sorted by score in each group).
    """
    gt_boxes = np.ascontiguousarray(gt_boxes, np.float64)
    dt_boxes = np.ascontiguousarray(dt_boxes, np.float64)
    if gt_boxes.shape[1:] != (4,) or dt_boxes.shape[1:] != (4,):
        raise ValueError("boxes must be (N, 4) arrays of (x1, y1, x2, y2)")
    outcome = np.full(len(dt_boxes), DROPPED, np.int8)
    group_score = np.zeros(len(gt_boxes), np.float64)
    cost = (np.diff(groups.dt_offsets) * (np.diff(groups.gt_offsets) + 1)).astype(np.float64)
    run_chunks(
        _match_range, len(groups), cost, gt_boxes, np.ascontiguousarray(group_of, np.bool_), dt_boxes,
        np.ascontiguousarray(dt_score, np.float64), groups.gt_rows, groups.gt_offsets, groups.dt_rows,
        groups.dt_offsets, float(iou_thr), int(max_dets), float(min_score), outcome, group_score,
    )  # fmt: skip
    return outcome, group_score
