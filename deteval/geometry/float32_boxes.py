"""ultralytics' ``box_iou`` (``ultralytics/utils/metrics.py``) in float32: the YOLO protocol's overlap.

``inter / (w1*h1 + w2*h2 - inter + eps)``, each operation rounded to float32 in that order, ``inter`` the
product of the overlap's width and height clamped at 0, ``eps`` 1e-7 as float32 (torch casts the scalar to
the tensor's float32). Boxes are float32 ``x1 y1 x2 y2``.
"""

from __future__ import annotations

import numpy as np

from deteval.jit import njit

EPS32 = np.float32(1e-7)


@njit(cache=True, inline="always")
def iou32(a, b, eps):  # pragma: no cover
    """``box_iou`` of label ``a`` and prediction ``b`` (float32 ``x1 y1 x2 y2``; ``eps`` float32)."""
    wx = min(a[2], b[2]) - max(a[0], b[0])
    wy = min(a[3], b[3]) - max(a[1], b[1])
    if wx < 0:
        wx = np.float32(0.0)
    if wy < 0:
        wy = np.float32(0.0)
    inter = wx * wy
    area1 = (a[2] - a[0]) * (a[3] - a[1])
    area2 = (b[2] - b[0]) * (b[3] - b[1])
    return inter / (area1 + area2 - inter + eps)


@njit(cache=True)
def _pairwise(gt, dt, eps, out):  # pragma: no cover
    for i in range(len(gt)):
        for j in range(len(dt)):
            out[i, j] = iou32(gt[i], dt[j], eps)


def box_iou32(gt_boxes: np.ndarray, dt_boxes: np.ndarray) -> np.ndarray:
    """float32 (G, D): :func:`iou32` of every label (rows) and prediction (columns), boxes rounded to float32."""
    gt = np.ascontiguousarray(gt_boxes, dtype=np.float32).reshape(-1, 4)
    dt = np.ascontiguousarray(dt_boxes, dtype=np.float32).reshape(-1, 4)
    out = np.empty((len(gt), len(dt)), np.float32)
    _pairwise(gt, dt, EPS32, out)
    return out
