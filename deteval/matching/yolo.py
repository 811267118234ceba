"""ultralytics 8.4's matching (``DetectionValidator.match_predictions``), with its float32 ``box_iou``.

Per image, for each IoU threshold separately, predictions in descending confidence (ties in input order)
each take the unclaimed label of their class with the highest IoU (equal IoU: the first label in the file),
when that IoU is at least the threshold. ultralytics walks an image's labels of every class with the other
classes' IoUs zeroed; zero is below every threshold, so walking each (image, class) group alone decides
the same: the groups of :func:`deteval.matching.groups.group_by_image_category`.

The IoU is ``box_iou``'s, in float32 and in its order of operations: ``inter / (w1*h1 + w2*h2 - inter + eps)``
with ``eps`` 1e-7 as float32, ``inter`` the clamped overlap's ``w * h``; compared (``>=``) with float32
thresholds.
"""

from __future__ import annotations

import numpy as np

from deteval.geometry.float32_boxes import EPS32, iou32
from deteval.jit import njit, run_chunks
from deteval.matching.groups import Groups


@njit(cache=True, nogil=True)
def _match(lo, hi, gt_boxes, dt_boxes, gt_rows, gt_off, dt_rows, dt_off, thrs, eps, correct):  # pragma: no cover
    n_t = len(thrs)
    for g in range(lo, hi):
        g0, g1 = gt_off[g], gt_off[g + 1]
        d0, d1 = dt_off[g], dt_off[g + 1]
        if g1 == g0 or d1 == d0:
            continue  # no labels: every prediction stays false
        n_g = g1 - g0
        claimed = np.zeros((n_t, n_g), np.bool_)
        iou = np.empty(n_g, np.float32)
        for p in range(d0, d1):
            d = dt_rows[p]
            for j in range(n_g):
                iou[j] = iou32(gt_boxes[gt_rows[g0 + j]], dt_boxes[d], eps)
            for t in range(n_t):
                best = -1
                best_iou = np.float32(0.0)
                for j in range(n_g):
                    if not claimed[t, j] and iou[j] > best_iou:  # strict: the first maximum wins
                        best, best_iou = j, iou[j]
                if best >= 0 and best_iou >= thrs[t]:
                    correct[d, t] = True
                    claimed[t, best] = True


def match_yolo(gt_boxes: np.ndarray, dt_boxes: np.ndarray, groups: Groups, thrs: np.ndarray) -> np.ndarray:
    """bool (D, T): each prediction's ``correct`` row (ultralytics' ``tp``), in the detections' row order.

    ``gt_boxes``, ``dt_boxes``: ``x1 y1 x2 y2`` of every row (rounded to float32 here, as ``box_iou``'s
    ``.float()``); ``groups``: by (image, class), detections in descending confidence; ``thrs``: float32.
    """
    gt32 = np.ascontiguousarray(gt_boxes, dtype=np.float32).reshape(-1, 4)
    dt32 = np.ascontiguousarray(dt_boxes, dtype=np.float32).reshape(-1, 4)
    thrs = np.ascontiguousarray(thrs, dtype=np.float32)
    correct = np.zeros((len(dt32), len(thrs)), np.bool_)
    if len(groups) == 0 or len(dt32) == 0:
        return correct
    cost = np.diff(groups.dt_offsets) * np.diff(groups.gt_offsets)
    run_chunks(
        _match, len(groups), cost, gt32, dt32, groups.gt_rows, groups.gt_offsets, groups.dt_rows,
        groups.dt_offsets, thrs, EPS32, correct,
    )  # fmt: skip
    return correct
