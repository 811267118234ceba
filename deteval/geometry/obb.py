"""IoU of oriented boxes ``[cx, cy, w, h, angle]`` (angle in radians), as hotcoco's ``obb`` IoU type defines it.

The corners are the centre plus the offsets ``(-w/2, -h/2), (w/2, -h/2), (w/2, h/2), (-w/2, h/2)`` turned by
``[[cos a, -sin a], [sin a, cos a]]``. The intersection is the exact area of the two rectangles' overlap
(convex clipping, :func:`deteval.geometry.quads.convex_quad_intersection`); the areas are ``w * h``:

* ``IoU = inter / (w1 * h1 + w2 * h2 - inter)``, 0 when that union is not positive;
* against a crowd ground truth, ``inter / (w * h)`` of the detection, 0 when that is not positive.

The Evaluator's ``box_format="poly"`` (quadrilaterals ``x1 y1 ... x4 y4``, which hotcoco does not read) uses
the same rule with the quadrilaterals' exact intersection (:func:`deteval.geometry.quads.quad_areas_in`) and
shoelace areas (:func:`poly_iou_blocks`).

Checked against hotcoco 1.3.0's own evaluation (its IoUs read back through its matches at thresholds
placed 1e-9 either side of deteval's values) in ``tests/unit/geometry/test_obb.py``.
"""

from __future__ import annotations

import math

import numpy as np

from deteval.geometry.quads import convex_quad_intersection_in, convex_work, quad_areas_in, quad_work
from deteval.jit import njit, run_chunks

__all__ = ["obb_corners", "obb_iou", "obb_iou_blocks", "obb_iou_matrix", "poly_iou_blocks", "poly_iou_in"]


@njit(cache=True, inline="always")
def _corners_into(b, out):  # pragma: no cover - numba
    c, s = math.cos(b[4]), math.sin(b[4])
    hw, hh = b[2] / 2.0, b[3] / 2.0
    for k in range(4):
        dx = hw if k == 1 or k == 2 else -hw
        dy = hh if k >= 2 else -hh
        out[2 * k] = b[0] + (c * dx - s * dy)
        out[2 * k + 1] = b[1] + (s * dx + c * dy)


@njit(cache=True, inline="always")
def _apart(pd, pg):  # pragma: no cover - numba
    """Whether the enclosing axis-aligned boxes of two quadrilaterals are strictly apart (then so are they)."""
    return (
        max(max(pd[0], pd[2]), max(pd[4], pd[6])) < min(min(pg[0], pg[2]), min(pg[4], pg[6]))
        or max(max(pg[0], pg[2]), max(pg[4], pg[6])) < min(min(pd[0], pd[2]), min(pd[4], pd[6]))
        or max(max(pd[1], pd[3]), max(pd[5], pd[7])) < min(min(pg[1], pg[3]), min(pg[5], pg[7]))
        or max(max(pg[1], pg[3]), max(pg[5], pg[7])) < min(min(pd[1], pd[3]), min(pd[5], pd[7]))
    )


@njit(cache=True, inline="always")
def _iou_of_corners(d, g, pd, pg, crowd, work):  # pragma: no cover - numba
    """:func:`obb_iou` of two oriented boxes whose corners ``pd``, ``pg`` are already computed. Boxes whose
    enclosing axis-aligned boxes are apart have intersection 0 exactly (not the clip's rounding of nothing)."""
    da = d[2] * d[3]
    union = da if crowd else da + g[2] * g[3]
    if da <= 0.0 or g[2] * g[3] <= 0.0 or _apart(pd, pg):
        inter = 0.0
    else:
        inter = convex_quad_intersection_in(pd, pg, work)
    if not crowd:
        union -= inter
    if union <= 0.0:
        return 0.0
    return inter / union


@njit(cache=True, nogil=True)
def obb_iou(d, g, crowd):  # pragma: no cover - numba
    """IoU of a detection and a ground-truth oriented box (length-5 arrays); ``crowd``: over the detection's area."""
    pd = np.empty(8)
    pg = np.empty(8)
    _corners_into(d, pd)
    _corners_into(g, pg)
    return _iou_of_corners(d, g, pd, pg, crowd, convex_work())


@njit(cache=True, nogil=True)
def _iou_matrix(dt, gt, crowd):  # pragma: no cover - numba
    out = np.empty((dt.shape[0], gt.shape[0]))
    for i in range(dt.shape[0]):
        for j in range(gt.shape[0]):
            out[i, j] = obb_iou(dt[i], gt[j], crowd[j])
    return out


@njit(cache=True, nogil=True)
def _iou_blocks(lo, hi, gt_rows, gt_off, dt_rows, dt_off, pair_off, gt_obb, gt_crowd, dt_obb, out):  # pragma: no cover
    # each box's corners once per group, not once per pair: the same operations, so the same bits as obb_iou
    gc = np.empty((0, 8))
    dc = np.empty((0, 8))
    work = convex_work()
    for grp in range(lo, hi):
        ng, nd = gt_off[grp + 1] - gt_off[grp], dt_off[grp + 1] - dt_off[grp]
        if ng == 0 or nd == 0:
            continue
        if gc.shape[0] < ng:
            gc = np.empty((2 * ng, 8))
        if dc.shape[0] < nd:
            dc = np.empty((2 * nd, 8))
        for g in range(ng):
            _corners_into(gt_obb[gt_rows[gt_off[grp] + g]], gc[g])
        for d in range(nd):
            _corners_into(dt_obb[dt_rows[dt_off[grp] + d]], dc[d])
        for d in range(nd):
            s = dt_rows[dt_off[grp] + d]
            for g in range(ng):
                r = gt_rows[gt_off[grp] + g]
                out[pair_off[grp] + d * ng + g] = _iou_of_corners(dt_obb[s], gt_obb[r], dc[d], gc[g], gt_crowd[r], work)


def obb_iou_blocks(gt_rows, gt_off, dt_rows, dt_off, pair_off, gt_obb, gt_crowd, dt_obb) -> np.ndarray:
    """:func:`obb_iou` of every (detection, ground truth) pair of every group, flat: group ``i``'s ``D x G``
    block, row-major, starts at ``pair_off[i]`` (the layout of COCO's matching, as ``box_iou_blocks``)."""
    out = np.empty(pair_off[-1])
    run_chunks(
        _iou_blocks, len(gt_off) - 1, np.diff(pair_off),
        gt_rows, gt_off, dt_rows, dt_off, pair_off, _boxes("gt_obb", gt_obb).reshape(-1, 5),
        np.ascontiguousarray(gt_crowd, np.bool_), _boxes("dt_obb", dt_obb).reshape(-1, 5), out,
    )  # fmt: skip
    return out


@njit(cache=True, nogil=True)
def poly_iou_in(d, g, crowd, work):  # pragma: no cover - numba
    """:func:`obb_iou`'s rule for quadrilaterals (length-8 arrays, any simple one, either vertex order): the
    exact intersection over ``|area d| + |area g| - inter`` (shoelace areas), or over ``|area d|`` against a
    crowd; 0 when that is not positive. ``work``: :func:`deteval.geometry.quads.quad_work`'s scratch."""
    inter, da, ga = quad_areas_in(d, g, work)
    union = da if crowd else da + ga - inter
    if union <= 0.0:
        return 0.0
    return inter / union


@njit(cache=True, nogil=True)
def _poly_blocks(lo, hi, gt_rows, gt_off, dt_rows, dt_off, pair_off, gt_q, gt_crowd, dt_q, out):  # pragma: no cover
    work = quad_work()
    for grp in range(lo, hi):
        ng, nd = gt_off[grp + 1] - gt_off[grp], dt_off[grp + 1] - dt_off[grp]
        for d in range(nd):
            s = dt_rows[dt_off[grp] + d]
            for g in range(ng):
                r = gt_rows[gt_off[grp] + g]
                out[pair_off[grp] + d * ng + g] = poly_iou_in(dt_q[s], gt_q[r], gt_crowd[r], work)


def poly_iou_blocks(gt_rows, gt_off, dt_rows, dt_off, pair_off, gt_quads, gt_crowd, dt_quads) -> np.ndarray:
    """:func:`obb_iou_blocks` for quadrilaterals (N, 8) (:func:`poly_iou_in`): the Evaluator's
    ``box_format="poly"``."""
    out = np.empty(pair_off[-1])
    run_chunks(
        _poly_blocks, len(gt_off) - 1, np.diff(pair_off),
        gt_rows, gt_off, dt_rows, dt_off, pair_off, _boxes("gt_quads", gt_quads, 8).reshape(-1, 8),
        np.ascontiguousarray(gt_crowd, np.bool_), _boxes("dt_quads", dt_quads, 8).reshape(-1, 8), out,
    )  # fmt: skip
    return out


@njit(cache=True, nogil=True)
def _corners(boxes):  # pragma: no cover - numba
    out = np.empty((boxes.shape[0], 8))
    for i in range(boxes.shape[0]):
        _corners_into(boxes[i], out[i])
    return out


def _boxes(name: str, value, width: int = 5) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.size == 0:
        return np.zeros((0, width))
    if arr.ndim == 1 and arr.shape[0] == width:
        arr = arr.reshape(1, width)
    if arr.ndim != 2 or arr.shape[1] != width:
        what = "cx cy w h angle" if width == 5 else "x1 y1 x2 y2 x3 y3 x4 y4"
        raise ValueError(f"{name} must have shape (N, {width}): {what} per row, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} holds a non-finite value (row {int(np.argmax(~np.isfinite(arr).all(1)))})")
    return np.ascontiguousarray(arr)


def obb_corners(boxes) -> np.ndarray:
    """The four corners ``x1 y1 ... x4 y4`` (N, 8) of oriented boxes (N, 5), in the order of the module docstring."""
    return _corners(_boxes("boxes", boxes))


def obb_iou_matrix(dt, gt, crowd=None) -> np.ndarray:
    """IoU of every detection with every ground truth, float64 (D, G), hotcoco's ``obb`` rule.

    Parameters
    ----------
    dt, gt : array-likes (D, 5) and (G, 5): ``cx cy w h angle`` (radians), finite.
    crowd : bool (G,), optional: crowd ground truth, whose IoU is the intersection over the detection's area.
    """
    dt, gt = _boxes("dt", dt), _boxes("gt", gt)
    flags = np.zeros(len(gt), bool) if crowd is None else np.ascontiguousarray(crowd, dtype=bool).reshape(-1)
    if flags.shape != (len(gt),):
        raise ValueError(f"crowd must have one flag per ground truth ({len(gt)}), got {flags.shape}")
    return _iou_matrix(dt, gt, flags)
