"""The exact intersection of two simple quadrilaterals, in rational arithmetic: the referee where shapely's
overlay (GEOS, floating point with snapping) and deteval's kernels disagree.

Each quadrilateral is split into two triangles on a diagonal that lies inside it (both triangles wound as
the whole; for a convex one either diagonal does), every decision taken on fractions, so the pieces tile it
exactly; the intersection is the sum over piece pairs of a Sutherland-Hodgman clip of one triangle by the
other, on fractions. Valid for simple quadrilaterals (convex, darts, repeated vertices), not for bow-ties.
Shares no code with deteval.
"""

from __future__ import annotations

from fractions import Fraction


def _points(quad) -> list[tuple[Fraction, Fraction]]:
    return [(Fraction(float(quad[2 * k])), Fraction(float(quad[2 * k + 1]))) for k in range(4)]


def _area2(pts) -> Fraction:
    """Twice the signed (shoelace) area."""
    return sum((pts[k - 1][0] * pts[k][1] - pts[k][0] * pts[k - 1][1] for k in range(len(pts))), Fraction(0))


def _triangles(pts) -> list[list[tuple[Fraction, Fraction]]]:
    """Two counter-clockwise triangles of positive area tiling the quadrilateral (fewer where it has less)."""
    whole = _area2(pts)
    if whole < 0:
        pts = pts[::-1]
    for a, b, c, d in ((0, 1, 2, 3), (1, 2, 3, 0)):
        t1, t2 = [pts[a], pts[b], pts[c]], [pts[a], pts[c], pts[d]]
        if _area2(t1) >= 0 and _area2(t2) >= 0:  # this diagonal lies inside
            return [t for t in (t1, t2) if _area2(t) > 0]
    raise ValueError("not a simple quadrilateral")


def _clip(poly, clip) -> Fraction:
    """Twice the area of the intersection of two counter-clockwise convex polygons."""
    for e in range(len(clip)):
        (ax, ay), (bx, by) = clip[e], clip[(e + 1) % len(clip)]
        out = []
        for k in range(len(poly)):
            (px, py), (qx, qy) = poly[k - 1], poly[k]
            sp = (bx - ax) * (py - ay) - (by - ay) * (px - ax)
            sq = (bx - ax) * (qy - ay) - (by - ay) * (qx - ax)
            if sp * sq < 0:
                t = sp / (sp - sq)
                out.append((px + t * (qx - px), py + t * (qy - py)))
            if sq >= 0:
                out.append((qx, qy))
        poly = out
    return _area2(poly) if len(poly) >= 3 else Fraction(0)


def exact_areas(p, q) -> tuple[Fraction, Fraction, Fraction]:
    """(intersection, area of p, area of q) of two simple quadrilaterals ``x1 y1 ... x4 y4``, exactly."""
    pp, pq = _points(p), _points(q)
    inter = sum((_clip(s, t) for s in _triangles(pp) for t in _triangles(pq)), Fraction(0))
    return inter / 2, abs(_area2(pp)) / 2, abs(_area2(pq)) / 2


def exact_iou(p, q, crowd: bool = False) -> Fraction:
    """The exact IoU (over the area of ``p`` alone where ``crowd``); 0 where that union is 0."""
    inter, a_p, a_q = exact_areas(p, q)
    union = a_p if crowd else a_p + a_q - inter
    return inter / union if union > 0 else Fraction(0)


def crosses_properly(quad) -> bool:
    """Whether two opposite edges (0-1 and 2-3, or 1-2 and 3-0) cross at a point inside both, on fractions."""
    pts = _points(quad)

    def side(a, b, p):
        return (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0])

    for i, j in ((0, 2), (1, 3)):
        a, b, c, d = pts[i], pts[i + 1], pts[j], pts[(j + 1) % 4]
        if side(a, b, c) * side(a, b, d) < 0 and side(c, d, a) * side(c, d, b) < 0:
            return True
    return False
