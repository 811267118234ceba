"""Axis-aligned box overlap in COCO's convention (``[x, y, w, h]``, no +1 pixel)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def iou_xywh(dx, dy, dw, dh, gx, gy, gw, gh, crowd):  # pragma: no cover - numba
    """IoU of one detection and one ground-truth box, as pycocotools' ``bbIou``.

    The operation order is pycocotools' own, so the double result is bit-identical.
    For a crowd ground truth the union is the detection's area alone.
    """
    w = min(dw + dx, gw + gx) - max(dx, gx)
    if w <= 0:
        return 0.0
    h = min(dh + dy, gh + gy) - max(dy, gy)
    if h <= 0:
        return 0.0
    i = w * h
    if crowd:
        u = dw * dh
    else:
        u = dw * dh + gw * gh - i
    return i / u


@njit(cache=True)
def _iou_matrix(dt, gt, crowd):  # pragma: no cover - numba
    out = np.zeros((dt.shape[0], gt.shape[0]))
    for d in range(dt.shape[0]):
        for g in range(gt.shape[0]):
            out[d, g] = iou_xywh(
                dt[d, 0], dt[d, 1], dt[d, 2], dt[d, 3], gt[g, 0], gt[g, 1], gt[g, 2], gt[g, 3], crowd[g]
            )
    return out


def box_iou(dt: np.ndarray, gt: np.ndarray, crowd: np.ndarray | None = None) -> np.ndarray:
    """IoU matrix of detections against ground truth, both ``(N, 4)`` ``xywh``.

    Parameters
    ----------
    dt : array of shape (D, 4)
        Detection boxes ``[x, y, w, h]``.
    gt : array of shape (G, 4)
        Ground-truth boxes ``[x, y, w, h]``.
    crowd : bool array of shape (G,), optional
        Crowd ground truth: the union is the detection's area (intersection
        over detection area), as COCO defines it.

    Returns
    -------
    ndarray of shape (D, G), float64, equal bit for bit to ``pycocotools.mask.iou``.
    """
    dt = np.ascontiguousarray(dt, dtype=np.float64).reshape(-1, 4)
    gt = np.ascontiguousarray(gt, dtype=np.float64).reshape(-1, 4)
    crowd = np.zeros(len(gt), bool) if crowd is None else np.asarray(crowd, dtype=bool).reshape(-1)
    if len(crowd) != len(gt):
        raise ValueError(f"crowd has {len(crowd)} entries for {len(gt)} ground-truth boxes")
    return _iou_matrix(dt, gt, crowd)
