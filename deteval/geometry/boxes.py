"""Axis-aligned box overlap in COCO's convention (``[x, y, w, h]``, no +1 pixel)."""

from __future__ import annotations

import math

import numpy as np

from deteval.jit import njit, run_chunks


@njit(cache=True, inline="always")
def _fmin(a, b):  # pragma: no cover - numba
    """C's ``fmin``: a NaN argument gives the other one (Python's and numba's ``min`` keep a NaN)."""
    if a != a:
        return b
    if b != b:
        return a
    return a if a < b else b


@njit(cache=True, inline="always")
def _fmax(a, b):  # pragma: no cover - numba
    """C's ``fmax``: a NaN argument gives the other one."""
    if a != a:
        return b
    if b != b:
        return a
    return a if a > b else b


@njit(cache=True, inline="always")
def iou_xywh(dx, dy, dw, dh, gx, gy, gw, gh, crowd):  # pragma: no cover - numba
    """IoU of one detection and one ground-truth box, as pycocotools' ``bbIou``.

    The operation order is pycocotools' own, so the double result is bit-identical.
    For a crowd ground truth the union is the detection's area alone. The edges are
    C's ``fmin``/``fmax`` of them, as there: a NaN edge gives way to the other box's, so
    boxes with NaN or infinite coordinates (or negative sizes) overlap as in pycocotools.
    """
    w = _fmin(dw + dx, gw + gx) - _fmax(dx, gx)
    if w <= 0:
        return 0.0
    h = _fmin(dh + dy, gh + gy) - _fmax(dy, gy)
    if h <= 0:
        return 0.0
    i = w * h
    if crowd:
        u = dw * dh
    else:
        u = dw * dh + gw * gh - i
    if u == 0.0:  # boxes of negative or NaN size can get here: C's i / 0, not Python's ZeroDivisionError
        if i != i or i == 0.0:
            return np.nan
        return math.copysign(np.inf, i) * math.copysign(1.0, u)
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


@njit(cache=True, nogil=True)
def _box_iou_blocks(lo, hi, gt_rows, gt_off, dt_rows, dt_off, pair_off, gt_boxes, gt_crowd, dt_boxes, out):  # noqa: E501  # pragma: no cover
    for grp in range(lo, hi):
        ng, nd = gt_off[grp + 1] - gt_off[grp], dt_off[grp + 1] - dt_off[grp]
        for d in range(nd):
            db = dt_boxes[dt_rows[dt_off[grp] + d]]
            for g in range(ng):
                r = gt_rows[gt_off[grp] + g]
                gb = gt_boxes[r]
                out[pair_off[grp] + d * ng + g] = iou_xywh(
                    db[0], db[1], db[2], db[3], gb[0], gb[1], gb[2], gb[3], gt_crowd[r]
                )


KERNELS = (_box_iou_blocks,)  # what box_iou_blocks calls (for deteval.jit.preload)


def box_iou_blocks(
    gt_rows: np.ndarray,
    gt_off: np.ndarray,
    dt_rows: np.ndarray,
    dt_off: np.ndarray,
    pair_off: np.ndarray,
    gt_boxes: np.ndarray,
    gt_crowd: np.ndarray,
    dt_boxes: np.ndarray,
) -> np.ndarray:
    """Box IoU of every (detection, ground truth) pair of every group, flat.

    Groups are CSR slices of row indices (``gt_rows[gt_off[i]:gt_off[i+1]]``);
    group ``i``'s ``D x G`` block, row-major, starts at ``pair_off[i]``.
    """
    out = np.empty(pair_off[-1])
    run_chunks(
        _box_iou_blocks, len(gt_off) - 1, np.diff(pair_off),
        gt_rows, gt_off, dt_rows, dt_off, pair_off,
        np.ascontiguousarray(gt_boxes, np.float64), np.ascontiguousarray(gt_crowd, np.bool_),
        np.ascontiguousarray(dt_boxes, np.float64), out,
    )  # fmt: skip
    return out
