"""IoU of quadrilaterals (rotated boxes, DOTA's oriented boxes), by convex polygon clipping.

A quadrilateral is 8 float64 numbers ``x1 y1 x2 y2 x3 y3 x4 y4``, its vertices in order.

Two kernels:

* :func:`convex_quad_iou`: two convex quadrilaterals (rotated rectangles), either
  vertex order: one Sutherland-Hodgman clip of one by the other. IoU is
  ``inter / (area1 + area2 - inter)``, 0 when that union is not positive.
* :func:`quad_iou`: two general quadrilaterals, convex or not, either vertex order,
  with DOTA_devkit's meaning (``polyiou.cpp``): the devkit sums the signed
  intersection areas of the triangles (origin, edge) of both polygons, which is
  ``integral of w_P * w_Q`` over the plane, ``w`` the winding number, after turning each
  polygon so its shoelace area is not negative; the union is ``|shoelace P| +
  |shoelace Q| - inter``. For a simple quadrilateral (convex or not) ``w`` is 1 inside
  and 0 outside, so this is the exact IoU. deteval computes the same integral
  from each quadrilateral's split into convex pieces: the quadrilateral itself when
  convex; else two triangles on the diagonal that lies inside (positive pieces, no
  cancellation); for a self-intersecting one the fan from the first vertex (two
  triangles of opposite sign, whose sum is ``w``). Every piece pair is one convex clip.

Where the devkit and the exact IoU (shapely's ``intersection(...).area / (area1 + area2 -
intersection area)``) differ, and what deteval does:

1. *Rounding*: the devkit tests signs with an absolute ``eps = 1e-8`` (a vertex within it
   of a cutting line counts as on it, a triangle from the origin thinner than it counts as
   empty) and measures triangles from the origin ``(0, 0)``, not near the polygons, so its
   IoU differs from the exact one by a few 1e-11 at DOTA's coordinates (thousands of
   pixels); more for polygons with sides much below 1e-4. deteval's areas are exact to a few
   ulps of the coordinates' square, so its IoU is within 1e-12 (relative) of the exact one
   (shapely's, or fractions' where GEOS's overlay fails) unless the union is tiny against that
   square; convexity is judged from edge vectors, so a reflex vertex next to an edge ulps long
   is not taken for a straight one. A true IoU at exactly a threshold has no agreed answer.
2. *Self-intersecting (bow-tie) quadrilaterals*: not valid polygons for shapely (its
   overlay raises or repairs them); the devkit's integral counts the two lobes with
   opposite signs (the lobe wound against the shoelace sign is negative), so a
   symmetric bow-tie has area 0 and its IoU with itself is ``inter / (0 + 0 - inter) = -1``.
   :func:`quad_iou` reproduces the devkit's integral; :func:`is_simple_quad` tells the two
   kinds apart for callers that prefer to reject them.
3. *Zero area*: both quadrilaterals of zero area give the devkit ``0 / 0 = NaN`` (then
   ``np.max`` of a row with a NaN is NaN: no match); :func:`quad_iou` returns NaN too,
   :func:`convex_quad_iou` returns 0 (the convention of COCO-style rotated boxes).
4. *Touching or adjacent*: the devkit's eps may turn a contact into a sliver of area
   about 1e-8; deteval's clip gives 0 or an area at rounding level (below 1e-12 of the union).

The devkit's pre-filter (``dota_evaluation_task1.py``): before ``polyiou`` it computes the IoU
of the enclosing axis-aligned boxes of the detection and of every ground truth *with VOC's
+1 pixel convention* (``iw = max(min(xmax) - max(xmin) + 1, 0)``, likewise ``ih``, union
``(w + 1)(h + 1) + (w' + 1)(h' + 1) - iw * ih``) and keeps only the ground truth where that is
``> 0``: enclosing boxes closer than one pixel in both axes pass, even when they do not
touch. A detection with none kept gets ``ovmax = -inf`` and is an FP; otherwise the
maximum and first argmax are over the kept ones. :func:`dota_iou_matrix` gives ``-inf`` to the
pairs the filter drops, so the row maximum and first argmax are the devkit's.
"""

from __future__ import annotations

import numpy as np

from deteval.jit import njit
from deteval.predicates import quads_crossing

__all__ = [
    "convex_quad_intersection", "convex_quad_intersection_in", "convex_quad_iou", "convex_work", "devkit_prefilter",
    "dota_iou_matrix", "is_simple_quad", "quad_area", "quad_areas_in", "quad_iou", "quad_iou_in", "quad_iou_matrix",
    "quad_work",
]  # fmt: skip

# vertices of a clipped polygon: each clip by one edge's line gives at most 2 points per input edge (in exact
# arithmetic a convex polygon's line crossings are 2, but rounding near a shared edge can flip signs more often),
# so a subject of <= 4 vertices clipped by <= 4 edges stays within 4 * 2**4 = 64: no write can overflow
_BUF = 64


@njit(cache=True, inline="always")
def _cross(ax, ay, bx, by, px, py):  # pragma: no cover - numba
    """(b - a) x (p - a): positive when p is left of the line a -> b."""
    return (bx - ax) * (py - ay) - (by - ay) * (px - ax)


@njit(cache=True, inline="always")
def _turn(ax, ay, bx, by, cx, cy):  # pragma: no cover - numba
    """(b - a) x (c - b): positive when a -> b -> c turns left. From the two edge vectors, not from a as
    :func:`_cross` measures: a short edge next to a long one keeps its sign (measured from a, the short
    edge's few ulps are lost in the long one's and a reflex vertex can read as straight)."""
    return (bx - ax) * (cy - by) - (by - ay) * (cx - bx)


@njit(cache=True, inline="always")
def _same_sign(a, b):  # pragma: no cover - numba
    """a and b both positive or both negative (a * b > 0 underflows to 0 for tiny a, b)."""
    return (a > 0.0 and b > 0.0) or (a < 0.0 and b < 0.0)


@njit(cache=True, inline="always")
def _shoelace2(xs, ys, n):  # pragma: no cover - numba
    """Twice the signed area of the polygon xs[:n], ys[:n], measured from its first vertex."""
    if n < 3:
        return 0.0
    x0, y0 = xs[0], ys[0]
    s = 0.0
    for k in range(1, n - 1):
        s += (xs[k] - x0) * (ys[k + 1] - y0) - (xs[k + 1] - x0) * (ys[k] - y0)
    return s


@njit(cache=True, nogil=True)
def _clip_area(sx, sy, n, cx, cy, m, ax, ay, bx, by):  # pragma: no cover - numba
    """Area of the intersection of two convex counter-clockwise polygons (Sutherland-Hodgman).

    ``sx, sy`` (n vertices) is clipped by each edge of ``cx, cy`` (m vertices); ``ax .. by``
    are scratch arrays of ``_BUF`` entries. A vertex on an edge's line is kept; an edge is cut
    only where its ends lie strictly on opposite sides, so no point is made twice.
    """
    for k in range(n):
        ax[k] = sx[k]
        ay[k] = sy[k]
    cnt = n
    for e in range(m):
        if cnt == 0:
            return 0.0
        e1 = e + 1 if e + 1 < m else 0
        x0, y0, x1, y1 = cx[e], cy[e], cx[e1], cy[e1]
        out = 0
        px, py = ax[cnt - 1], ay[cnt - 1]
        sp = _cross(x0, y0, x1, y1, px, py)
        for k in range(cnt):
            qx, qy = ax[k], ay[k]
            sq = _cross(x0, y0, x1, y1, qx, qy)
            if (sp > 0.0 and sq < 0.0) or (sp < 0.0 and sq > 0.0):
                t = sp / (sp - sq)
                bx[out] = px + t * (qx - px)
                by[out] = py + t * (qy - py)
                out += 1
            if sq >= 0.0:
                bx[out] = qx
                by[out] = qy
                out += 1
            px, py, sp = qx, qy, sq
        ax, bx = bx, ax
        ay, by = by, ay
        cnt = out
    return 0.5 * _shoelace2(ax, ay, cnt)


@njit(cache=True, inline="always")
def _load(quad, ox, oy, xs, ys):  # pragma: no cover - numba
    """The vertices of ``quad`` relative to (ox, oy), and twice its signed area."""
    for k in range(4):
        xs[k] = quad[2 * k] - ox
        ys[k] = quad[2 * k + 1] - oy
    return _shoelace2(xs, ys, 4)


@njit(cache=True, inline="always")
def _put_ccw(xs, ys, idx0, idx1, idx2, idx3, nv, signed2, px, py, row):  # pragma: no cover - numba
    """Store the piece (xs[idx..]) counter-clockwise as row ``row`` of px, py (nv vertices)."""
    if signed2 >= 0.0:
        px[row, 0], py[row, 0] = xs[idx0], ys[idx0]
        px[row, 1], py[row, 1] = xs[idx1], ys[idx1]
        px[row, 2], py[row, 2] = xs[idx2], ys[idx2]
        if nv == 4:
            px[row, 3], py[row, 3] = xs[idx3], ys[idx3]
    else:
        last = idx3 if nv == 4 else idx2
        px[row, 0], py[row, 0] = xs[last], ys[last]
        if nv == 4:
            px[row, 1], py[row, 1] = xs[idx2], ys[idx2]
            px[row, 2], py[row, 2] = xs[idx1], ys[idx1]
            px[row, 3], py[row, 3] = xs[idx0], ys[idx0]
        else:
            px[row, 1], py[row, 1] = xs[idx1], ys[idx1]
            px[row, 2], py[row, 2] = xs[idx0], ys[idx0]


@njit(cache=True, nogil=True)
def _pieces(xs, ys, area2, px, py, nv, sign):  # pragma: no cover - numba
    """Split a quadrilateral into at most 2 convex counter-clockwise pieces whose signed sum is its
    winding number, turned so the whole has a non-negative area (the devkit's reversal). Returns
    the count; zero-area pieces are left out (they add nothing to any intersection)."""
    flip = -1.0 if area2 < 0.0 else 1.0
    pos = False
    neg = False
    for k in range(4):
        km = k - 1 if k > 0 else 3
        kp = k + 1 if k < 3 else 0
        t = _turn(xs[km], ys[km], xs[k], ys[k], xs[kp], ys[kp])
        pos = pos or t > 0.0
        neg = neg or t < 0.0
    if not (pos and neg):  # convex (or all on one line)
        if area2 == 0.0:
            return 0
        _put_ccw(xs, ys, 0, 1, 2, 3, 4, area2, px, py, 0)
        nv[0] = 4
        sign[0] = 1.0
        return 1
    # the diagonal 0-2 lies inside when both its triangles turn alike; else 1-3 does; a bow-tie
    # has neither, and its fan from vertex 0 sums to its winding number
    a = _cross(xs[0], ys[0], xs[1], ys[1], xs[2], ys[2])
    b = _cross(xs[0], ys[0], xs[2], ys[2], xs[3], ys[3])
    i0, i1, i2, j0, j1, j2 = 0, 1, 2, 0, 2, 3
    if not _same_sign(a, b):
        a1 = _cross(xs[1], ys[1], xs[2], ys[2], xs[3], ys[3])
        b1 = _cross(xs[1], ys[1], xs[3], ys[3], xs[0], ys[0])
        if _same_sign(a1, b1):
            a, b = a1, b1
            i0, i1, i2, j0, j1, j2 = 1, 2, 3, 1, 3, 0
    cnt = 0
    if a != 0.0:
        _put_ccw(xs, ys, i0, i1, i2, 0, 3, a, px, py, cnt)
        nv[cnt] = 3
        sign[cnt] = flip if a > 0.0 else -flip
        cnt += 1
    if b != 0.0:
        _put_ccw(xs, ys, j0, j1, j2, 0, 3, b, px, py, cnt)
        nv[cnt] = 3
        sign[cnt] = flip if b > 0.0 else -flip
        cnt += 1
    return cnt


@njit(cache=True, nogil=True)
def _convex_areas(p, q):  # pragma: no cover - numba
    """(intersection area, twice the signed area of p, of q) of two convex quadrilaterals, either vertex order."""
    return _convex_areas_in(p, q, convex_work())


@njit(cache=True, nogil=True)
def convex_work():  # pragma: no cover - numba
    """Scratch arrays for :func:`convex_quad_intersection_in`: one per thread, reused for every pair."""
    return np.empty((4, 4)), np.empty((4, _BUF))


@njit(cache=True, inline="always")
def _convex_areas_in(p, q, work):  # pragma: no cover - numba
    small, big = work
    ox, oy = p[0], p[1]  # measured near the polygons: no cancellation against the origin
    xs = small[0]
    ys = small[1]
    cx = small[2]
    cy = small[3]
    ap = _load(p, ox, oy, xs, ys)
    aq = _load(q, ox, oy, cx, cy)
    if ap < 0.0:
        xs[0], xs[1], xs[2], xs[3] = xs[3], xs[2], xs[1], xs[0]
        ys[0], ys[1], ys[2], ys[3] = ys[3], ys[2], ys[1], ys[0]
    if aq < 0.0:
        cx[0], cx[1], cx[2], cx[3] = cx[3], cx[2], cx[1], cx[0]
        cy[0], cy[1], cy[2], cy[3] = cy[3], cy[2], cy[1], cy[0]
    inter = 0.0
    if ap != 0.0 and aq != 0.0:
        inter = _clip_area(xs, ys, 4, cx, cy, 4, big[0], big[1], big[2], big[3])
    return inter, ap, aq


@njit(cache=True, nogil=True)
def convex_quad_intersection_in(p, q, work):  # pragma: no cover - numba
    """:func:`convex_quad_intersection` with the scratch arrays of :func:`convex_work` (no allocation per pair)."""
    return _convex_areas_in(p, q, work)[0]


@njit(cache=True, nogil=True)
def convex_quad_intersection(p, q):  # pragma: no cover - numba
    """Area of the intersection of two convex quadrilaterals (length-8 arrays), either vertex order."""
    return _convex_areas(p, q)[0]


@njit(cache=True, nogil=True)
def convex_quad_iou(p, q):  # pragma: no cover - numba
    """IoU of two convex quadrilaterals (length-8 arrays), either vertex order; 0 when the union
    is not positive. Non-convex input gives a meaningless number: use :func:`quad_iou`."""
    inter, ap, aq = _convex_areas(p, q)
    union = 0.5 * (abs(ap) + abs(aq)) - inter
    if union <= 0.0:
        return 0.0
    return inter / union


@njit(cache=True, nogil=True)
def _quad_areas(p, q, scratch, pp_x, pp_y, qp_x, qp_y, pnv, qnv, psg, qsg):  # pragma: no cover - numba
    """(the devkit's intersection integral, twice the signed area of p, of q) of two quadrilaterals."""
    ox, oy = p[0], p[1]
    xs = scratch[0]
    ys = scratch[1]
    ap = _load(p, ox, oy, xs, ys)
    n_p = _pieces(xs, ys, ap, pp_x, pp_y, pnv, psg)
    aq = _load(q, ox, oy, xs, ys)
    n_q = _pieces(xs, ys, aq, qp_x, qp_y, qnv, qsg)
    inter = 0.0
    for i in range(n_p):
        for j in range(n_q):
            a = _clip_area(pp_x[i], pp_y[i], pnv[i], qp_x[j], qp_y[j], qnv[j], scratch[2], scratch[3], scratch[4],
                           scratch[5])  # fmt: skip
            inter += psg[i] * qsg[j] * a
    return inter, ap, aq


@njit(cache=True, nogil=True)
def _quad_iou(p, q, scratch, pp_x, pp_y, qp_x, qp_y, pnv, qnv, psg, qsg):  # pragma: no cover - numba
    inter, ap, aq = _quad_areas(p, q, scratch, pp_x, pp_y, qp_x, qp_y, pnv, qnv, psg, qsg)
    union = 0.5 * (abs(ap) + abs(aq)) - inter
    if union == 0.0:  # IEEE division, as the devkit's C++ (numba would raise)
        return np.nan if inter == 0.0 else np.inf * inter
    return inter / union


@njit(cache=True, nogil=True)
def quad_work():  # pragma: no cover - numba
    """Scratch arrays for :func:`quad_iou_in`: one per thread, reused for every pair."""
    return np.empty((6, _BUF)), np.empty((4, 2, 4)), np.empty((2, 2), np.int64), np.empty((2, 2))


@njit(cache=True, nogil=True)
def quad_iou_in(p, q, work):  # pragma: no cover - numba
    """:func:`quad_iou` with the scratch arrays of :func:`quad_work` (no allocation per pair)."""
    scratch, pieces, nv, sign = work
    return _quad_iou(p, q, scratch, pieces[0], pieces[1], pieces[2], pieces[3], nv[0], nv[1], sign[0], sign[1])


@njit(cache=True, nogil=True)
def quad_areas_in(p, q, work):  # pragma: no cover - numba
    """(intersection area, |area of p|, |area of q|) of two quadrilaterals with :func:`quad_iou`'s meaning
    (exact for simple ones, convex or not), with the scratch arrays of :func:`quad_work`."""
    scratch, pieces, nv, sign = work
    inter, ap, aq = _quad_areas(p, q, scratch, pieces[0], pieces[1], pieces[2], pieces[3], nv[0], nv[1], sign[0],
                                sign[1])  # fmt: skip
    return inter, 0.5 * abs(ap), 0.5 * abs(aq)


@njit(cache=True, nogil=True)
def quad_iou(p, q):  # pragma: no cover - numba
    """IoU of two quadrilaterals (length-8 arrays) with DOTA_devkit's meaning (module docstring):
    exact for simple ones, convex or not, either vertex order; NaN when both have zero area."""
    return quad_iou_in(p, q, quad_work())


@njit(cache=True, inline="always")
def devkit_prefilter(d, g):  # pragma: no cover - numba
    """True where dota_evaluation_task1.py computes ``polyiou`` for this pair: the IoU of the enclosing
    axis-aligned boxes with the +1 pixel convention is ``> 0`` (same operations, same order)."""
    dx0 = min(min(d[0], d[2]), min(d[4], d[6]))
    dx1 = max(max(d[0], d[2]), max(d[4], d[6]))
    dy0 = min(min(d[1], d[3]), min(d[5], d[7]))
    dy1 = max(max(d[1], d[3]), max(d[5], d[7]))
    gx0 = min(min(g[0], g[2]), min(g[4], g[6]))
    gx1 = max(max(g[0], g[2]), max(g[4], g[6]))
    gy0 = min(min(g[1], g[3]), min(g[5], g[7]))
    gy1 = max(max(g[1], g[3]), max(g[5], g[7]))
    iw = max(min(gx1, dx1) - max(gx0, dx0) + 1.0, 0.0)
    ih = max(min(gy1, dy1) - max(gy0, dy0) + 1.0, 0.0)
    inters = iw * ih
    uni = (dx1 - dx0 + 1.0) * (dy1 - dy0 + 1.0) + (gx1 - gx0 + 1.0) * (gy1 - gy0 + 1.0) - inters
    return inters / uni > 0.0


@njit(cache=True, nogil=True)
def _iou_matrix(dets, gts, kind, prefilter):  # pragma: no cover - numba
    out = np.empty((dets.shape[0], gts.shape[0]))
    work = quad_work()
    for i in range(dets.shape[0]):
        for j in range(gts.shape[0]):
            if prefilter and not devkit_prefilter(dets[i], gts[j]):
                out[i, j] = -np.inf
            elif kind == 0:
                out[i, j] = convex_quad_iou(dets[i], gts[j])
            else:
                out[i, j] = quad_iou_in(dets[i], gts[j], work)
    return out


def _quads(name: str, value) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 1 and arr.shape[0] == 8:
        arr = arr.reshape(1, 8)
    if arr.ndim != 2 or arr.shape[1] != 8:
        raise ValueError(f"{name} must have shape (N, 8): x1 y1 x2 y2 x3 y3 x4 y4 per row, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} holds a non-finite coordinate (row {int(np.argmax(~np.isfinite(arr).all(1)))})")
    return np.ascontiguousarray(arr)


def quad_iou_matrix(dets, gts, *, convex: bool = False) -> np.ndarray:
    """IoU of every detection quadrilateral with every ground-truth one, float64 (D, G).

    Parameters
    ----------
    dets, gts : array-likes of shape (D, 8) and (G, 8) (a single length-8 row is one quadrilateral),
        ``x1 y1 x2 y2 x3 y3 x4 y4``, finite.
    convex : use :func:`convex_quad_iou` (rotated rectangles; 0 for zero union) instead of the
        general :func:`quad_iou` (any simple quadrilateral; NaN when both have zero area).
    """
    return _iou_matrix(_quads("dets", dets), _quads("gts", gts), 0 if convex else 1, False)


def dota_iou_matrix(dets, gts) -> np.ndarray:
    """:func:`quad_iou` of every detection with every ground truth, ``-inf`` where DOTA_devkit's
    pre-filter (module docstring) skips the pair, float64 (D, G): each row's maximum and first
    argmax are the devkit's ``ovmax`` and ``jmax``."""
    return _iou_matrix(_quads("dets", dets), _quads("gts", gts), 1, True)


def quad_area(quads) -> np.ndarray:
    """Absolute shoelace area of each quadrilateral (N, 8) -> (N,) (the devkit's ``fabs(area)``)."""
    q = _quads("quads", quads)
    x, y = q[:, 0::2] - q[:, :1], q[:, 1::2] - q[:, 1:2]
    s = (x[:, 1] * y[:, 2] - x[:, 2] * y[:, 1]) + (x[:, 2] * y[:, 3] - x[:, 3] * y[:, 2])
    return 0.5 * np.abs(s)


def is_simple_quad(quads) -> np.ndarray:
    """bool (N,): False where two opposite edges cross properly (a bow-tie, which the devkit scores with
    signed lobes and shapely rejects as invalid)."""
    return ~quads_crossing(_quads("quads", quads))
