"""Exact geometric predicates on float64 coordinates, for the checks whose answer must not depend on rounding.

:func:`quads_crossing` decides each orientation (the sign of ``(a - c) x (b - c)``) in floating point where
Shewchuk's error bound (*Adaptive Precision Floating-Point Arithmetic and Fast Robust Geometric Predicates*,
1997: bound A of orient2d, plus the absolute error of two products in the subnormal range) proves the sign,
and on fractions for the quadrilaterals it cannot (near-collinear points, a vertex a few ulps from another,
overflow). Those are rare, so the whole costs about what the float test alone does.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from deteval.jit import njit

__all__ = ["quads_crossing"]

_EPS = 2.0**-53
_BOUND = (3.0 + 16.0 * _EPS) * _EPS
_TINY = 4.0 * np.finfo(np.float64).smallest_subnormal


@njit(cache=True, inline="always")
def _sign(ax, ay, bx, by, cx, cy):  # pragma: no cover - numba
    """The sign of (a - c) x (b - c) where the float filter proves it, else 2."""
    left = (ax - cx) * (by - cy)
    right = (ay - cy) * (bx - cx)
    det = left - right
    if abs(det) > _BOUND * (abs(left) + abs(right)) + _TINY:  # False for inf and NaN
        return 1 if det > 0.0 else -1
    return 2


@njit(cache=True, nogil=True)
def _crossing_filtered(v):  # pragma: no cover - numba
    """Per quadrilateral of v (N, 8): 1 crossing, 0 not, 2 where an orientation needs exact arithmetic."""
    out = np.zeros(v.shape[0], np.int8)
    for n in range(v.shape[0]):
        q = v[n]
        for i, j in ((0, 2), (1, 3)):
            i1, j1 = i + 1, (j + 1) % 4
            s1 = _sign(q[2 * i], q[2 * i + 1], q[2 * i1], q[2 * i1 + 1], q[2 * j], q[2 * j + 1])
            s2 = _sign(q[2 * i], q[2 * i + 1], q[2 * i1], q[2 * i1 + 1], q[2 * j1], q[2 * j1 + 1])
            s3 = _sign(q[2 * j], q[2 * j + 1], q[2 * j1], q[2 * j1 + 1], q[2 * i], q[2 * i + 1])
            s4 = _sign(q[2 * j], q[2 * j + 1], q[2 * j1], q[2 * j1 + 1], q[2 * i1], q[2 * i1 + 1])
            if s1 == 2 or s2 == 2 or s3 == 2 or s4 == 2:
                out[n] = 2
                break
            if s1 * s2 < 0 and s3 * s4 < 0:
                out[n] = 1
    return out


def _exact_sign(a, b, c) -> int:
    ax, ay, bx, by, cx, cy = (Fraction(float(x)) for x in (*a, *b, *c))
    det = (ax - cx) * (by - cy) - (ay - cy) * (bx - cx)
    return (det > 0) - (det < 0)


def _exact_crossing(quad: np.ndarray) -> bool:
    p = quad.reshape(4, 2)
    for i, j in ((0, 2), (1, 3)):
        a, b, c, d = p[i], p[i + 1], p[j], p[(j + 1) % 4]
        if _exact_sign(a, b, c) * _exact_sign(a, b, d) < 0 and _exact_sign(c, d, a) * _exact_sign(c, d, b) < 0:
            return True
    return False


def quads_crossing(quads: np.ndarray) -> np.ndarray:
    """bool (N,): two opposite edges of the quadrilateral ``x1 y1 ... x4 y4`` (N, 8, finite) cross at a point
    inside both (a bow-tie); edges that only touch do not count. Exact: a quadrilateral with an orientation
    the float filter cannot prove is decided on fractions."""
    v = np.ascontiguousarray(quads, dtype=np.float64).reshape(-1, 8)
    state = _crossing_filtered(v)
    for n in np.flatnonzero(state == 2):
        state[n] = _exact_crossing(v[n])
    return state.astype(bool)
