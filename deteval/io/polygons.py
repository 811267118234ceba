"""COCO polygons into run-length masks, as pycocotools' ``frPyObjects`` and ``merge`` make them.

COCO's polygon masks are defined by pycocotools' rasteriser, so this module
reproduces its behaviour exactly (tests/unit/io/test_polygons.py holds it to
pycocotools on random and degenerate polygons), in one numba pass over all
polygons instead of a Python object per polygon part:

1. Each vertex is moved to a 5x finer integer lattice: ``trunc(5 * x + 0.5)``
   (C's conversion: toward zero, so negative coordinates round up).
2. The closed outline is walked edge by edge through lattice points. Along an
   edge the coordinate that changes more (x when ``|dx| >= |dy|``) steps by
   one; the other is ``trunc(c0 + slope * t + 0.5)``, measured from the end
   with the smaller stepping coordinate, whichever way the edge runs. An edge
   of length zero gives its vertex with the smallest 32-bit int as y (what
   x86 makes of the NaN slope; it only ever lands in a clamped minimum).
3. Between consecutive points (the walk does not wrap around) whose x differs,
   take the left of the two lattice columns; when it is a pixel centre
   (``(x + 0.5) / 5 - 0.5`` an integer column inside the image) the outline
   crosses that pixel column: at the lower of the two points' y, brought back
   to pixels the same way, clamped to ``[0, h]`` and rounded up. The crossing
   toggles the mask at column-major index ``column * h + row``.
4. A mask is the parity of its toggles (pairs at one index cancel; one at
   ``h * w`` changes nothing), written as runs starting with 0s, with no run
   of length zero but the first.
5. An object of several polygons is their union: the 1-intervals of all its
   parts, sorted and joined where they overlap or touch.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from deteval.jit import njit, num_threads
from deteval.numeric import grown
from deteval.tuning import TUNING

_SCALE = 5.0
_INT32_MIN = -(2**31)
# toggles are column-major pixel indices; pycocotools computes them in 32-bit ints
MAX_PIXELS = 2**31 - 1


@njit(cache=True)
def _toggle(col, y, h, w):  # pragma: no cover - numba
    """The toggle index of lattice column ``col`` and lattice row ``y``, or -1 when ``col`` is
    not a pixel column of the image."""
    fx = (float(col) + 0.5) / _SCALE - 0.5
    if np.floor(fx) != fx or fx < 0 or fx > w - 1:
        return np.int64(-1)
    fy = (float(y) + 0.5) / _SCALE - 0.5
    if fy < 0:
        fy = 0.0
    elif fy > h:
        fy = float(h)
    fy = np.ceil(fy)
    return np.int64(fx) * h + np.int64(fy)


@njit(cache=True)
def _edge_point(x0, y0, slope, along_x, steps, t):  # pragma: no cover - numba
    """The lattice point ``t`` steps from the edge's start ``(x0, y0)``."""
    if steps == 0:
        return x0, np.int64(_INT32_MIN)  # the NaN slope of an empty edge, as x86 converts it
    if along_x:
        return x0 + t, np.int64(float(y0) + slope * t + 0.5)
    return np.int64(float(x0) + slope * t + 0.5), y0 + t


@njit(cache=True)
def _part_toggles(xy, first, last, h, w, tog, n):  # pragma: no cover - numba
    """Append the toggles of the polygon ``xy[first:last]`` (vertices as rows) to ``tog[:n]``."""
    k = last - first
    have = False
    px = np.int64(0)
    py = np.int64(0)
    top_col = 5 * (w - 1) + 2  # the lattice column of the last pixel column
    for e in range(k):
        a = first + e
        b = first + (e + 1) % k
        xa = np.int64(_SCALE * xy[a, 0] + 0.5)
        ya = np.int64(_SCALE * xy[a, 1] + 0.5)
        xb = np.int64(_SCALE * xy[b, 0] + 0.5)
        yb = np.int64(_SCALE * xy[b, 1] + 0.5)
        dx = abs(xb - xa)
        dy = abs(yb - ya)
        along_x = dx >= dy
        steps = dx if along_x else dy
        # the edge is measured from its end with the smaller stepping coordinate
        backwards = (xa > xb) if along_x else (ya > yb)
        if backwards:
            x0, y0, x1, y1 = xb, yb, xa, ya
        else:
            x0, y0, x1, y1 = xa, ya, xb, yb
        slope = 0.0
        if steps > 0:
            slope = float(y1 - y0) / steps if along_x else float(x1 - x0) / steps
        if along_x:
            tog = grown(tog, n + min(steps, 5 * w) // 5 + 3)
        else:
            tog = grown(tog, n + steps + 2)
        # the edge's first point against the previous edge's last
        cx, cy = _edge_point(x0, y0, slope, along_x, steps, steps if backwards else 0)
        if have and cx != px:
            p = _toggle(min(px, cx), min(py, cy), h, w)
            if p >= 0:
                tog[n] = p
                n += 1
        if steps > 0 and along_x:
            # x steps by one: the pair (t, t + 1) crosses lattice column x0 + t, a pixel column
            # only where it is 2 mod 5 and inside the image
            lo = max(x0, 2)
            hi = min(x1 - 1, top_col)
            col = lo + ((2 - lo) % 5 + 5) % 5  # the first column 2 mod 5 from lo on
            while col <= hi:
                t = col - x0
                ys = np.int64(float(y0) + slope * t + 0.5)
                ye = np.int64(float(y0) + slope * (t + 1) + 0.5)
                p = _toggle(col, min(ys, ye), h, w)
                if p >= 0:
                    tog[n] = p
                    n += 1
                col += 5
        elif steps > 0:
            qx, qy = cx, cy
            for d in range(1, steps + 1):
                t = steps - d if backwards else d
                ux = np.int64(float(x0) + slope * t + 0.5)
                uy = y0 + t
                if ux != qx:
                    p = _toggle(min(qx, ux), min(qy, uy), h, w)
                    if p >= 0:
                        tog[n] = p
                        n += 1
                qx, qy = ux, uy
        px, py = _edge_point(x0, y0, slope, along_x, steps, 0 if backwards else steps)
        have = True
    return tog, n


@njit(cache=True)
def _sort_toggles(tog, nt, h, counts, out):  # pragma: no cover - numba
    """``tog[:nt]`` ascending in ``out[:nt]``: bucketed by pixel column (``index // h``), then an
    insertion sort, which only has the few toggles within a column to order. Returns the
    (possibly grown) ``counts`` and ``out``."""
    if nt == 0:
        return counts, out
    lo = tog[0] // h
    hi = lo
    for q in range(nt):
        c = tog[q] // h
        lo = min(lo, c)
        hi = max(hi, c)
    span = hi - lo + 1
    counts = grown(counts, span + 1)
    out = grown(out, nt)
    counts[: span + 1] = 0
    for q in range(nt):
        counts[tog[q] // h - lo + 1] += 1
    for c in range(span):
        counts[c + 1] += counts[c]
    for q in range(nt):
        c = tog[q] // h - lo
        out[counts[c]] = tog[q]
        counts[c] += 1
    for q in range(1, nt):
        v = out[q]
        r = q - 1
        while r >= 0 and out[r] > v:
            out[r + 1] = out[r]
            r -= 1
        out[r + 1] = v
    return counts, out


@njit(cache=True)
def _sort_intervals(lo, hi, ni, h, counts, out_lo, out_hi):  # pragma: no cover - numba
    """The intervals ``(lo, hi)[:ni]`` by start into ``out_lo``/``out_hi`` (which have room):
    bucketed by pixel column of the start, then an insertion sort within. Returns the
    (possibly grown) ``counts`` and the outputs."""
    first = lo[0] // h
    last = first
    for q in range(ni):
        c = lo[q] // h
        first = min(first, c)
        last = max(last, c)
    span = last - first + 1
    counts = grown(counts, span + 1)
    counts[: span + 1] = 0
    for q in range(ni):
        counts[lo[q] // h - first + 1] += 1
    for c in range(span):
        counts[c + 1] += counts[c]
    for q in range(ni):
        c = lo[q] // h - first
        out_lo[counts[c]] = lo[q]
        out_hi[counts[c]] = hi[q]
        counts[c] += 1
    for q in range(1, ni):
        a = out_lo[q]
        b = out_hi[q]
        r = q - 1
        while r >= 0 and out_lo[r] > a:
            out_lo[r + 1] = out_lo[r]
            out_hi[r + 1] = out_hi[r]
            r -= 1
        out_lo[r + 1] = a
        out_hi[r + 1] = b
    return counts, out_lo, out_hi


@njit(cache=True, nogil=True)
def _rasterise(xy, part_off, obj_off, heights, widths):  # pragma: no cover - numba
    """Runs of each object (its parts ``obj_off[i]:obj_off[i+1]``, part j the vertices
    ``xy[part_off[j]:part_off[j+1]]``) at its image size: (runs uint32, offsets)."""
    n_obj = obj_off.size - 1
    runs = np.empty(max(64, 8 * n_obj), np.uint32)  # runs within an image of at most MAX_PIXELS
    offsets = np.zeros(n_obj + 1, np.int64)
    tog = np.empty(4096, np.int64)
    pts = np.empty(4096, np.int64)
    counts = np.empty(1024, np.int64)
    lo = np.empty(1024, np.int64)
    hi = np.empty(1024, np.int64)
    slo = np.empty(1024, np.int64)
    shi = np.empty(1024, np.int64)
    nr = 0
    for i in range(n_obj):
        h = np.int64(heights[i])
        w = np.int64(widths[i])
        hw = h * w
        # 1-intervals of every part, each part's from the parity of its sorted toggles
        ni = 0
        for j in range(obj_off[i], obj_off[i + 1]):
            tog, nt = _part_toggles(xy, part_off[j], part_off[j + 1], h, w, tog, 0)
            counts, pts = _sort_toggles(tog, nt, h, counts, pts)
            lo = grown(lo, ni + nt // 2 + 1)
            hi = grown(hi, ni + nt // 2 + 1)
            slo = grown(slo, ni + nt // 2 + 1)
            shi = grown(shi, ni + nt // 2 + 1)
            inside = False
            q = 0
            while q < nt:
                p = pts[q]
                c = 1
                while q + c < nt and pts[q + c] == p:
                    c += 1
                q += c
                if c % 2 == 1 and p < hw:
                    if inside:
                        hi[ni] = p
                        ni += 1
                    else:
                        lo[ni] = p
                    inside = not inside
            if inside:
                hi[ni] = hw
                ni += 1
        if obj_off[i + 1] - obj_off[i] > 1 and ni > 1:  # several parts: their intervals by start
            counts, slo, shi = _sort_intervals(lo, hi, ni, h, counts, slo, shi)
        else:
            for q in range(ni):
                slo[q] = lo[q]
                shi[q] = hi[q]
        runs = grown(runs, nr + 2 * ni + 1)  # (slo, shi were grown with lo, hi)
        last = np.int64(0)
        q = 0
        while q < ni:
            s = slo[q]
            e = shi[q]
            q += 1
            while q < ni and slo[q] <= e:  # overlapping or touching: one interval
                e = max(e, shi[q])
                q += 1
            runs[nr] = s - last
            runs[nr + 1] = e - s
            nr += 2
            last = e
        if last < hw or nr == offsets[i]:
            runs[nr] = hw - last
            nr += 1
        offsets[i + 1] = nr
    return runs[:nr], offsets


def polygon_runs(
    coords: np.ndarray, part_lengths: np.ndarray, parts_per_object: np.ndarray, heights: np.ndarray, widths: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Runs of polygon objects, as pycocotools' ``merge(frPyObjects(polys, h, w))`` gives them.

    ``coords``: every part's ``x1, y1, x2, y2, ...`` one after another (float64);
    ``part_lengths``: numbers per part (even, at least 6); ``parts_per_object``: parts of
    each object, in order; ``heights``/``widths``: each object's image size (positive,
    ``h * w <= MAX_PIXELS``). Coordinates must be finite, within ±1e6 (checked by the caller).
    Returns ``(runs, offsets)``: object i's runs are ``runs[offsets[i]:offsets[i + 1]]`` (uint32: an image
    has at most ``MAX_PIXELS``).
    """
    xy = np.ascontiguousarray(coords, dtype=np.float64).reshape(-1, 2)
    part_off = np.zeros(len(part_lengths) + 1, np.int64)
    np.cumsum(np.asarray(part_lengths, np.int64) // 2, out=part_off[1:])
    obj_off = np.zeros(len(parts_per_object) + 1, np.int64)
    np.cumsum(np.asarray(parts_per_object, np.int64), out=obj_off[1:])
    heights = np.asarray(heights, np.int64)
    widths = np.asarray(widths, np.int64)
    n = len(obj_off) - 1
    threads = min(num_threads(), n // TUNING.polygons_per_thread)
    if threads <= 1:
        return _rasterise(xy, part_off, obj_off, heights, widths)
    # chunks of about equal outline (vertices), one per thread: the kernel runs without the GIL
    cut = np.searchsorted(part_off[obj_off], np.linspace(0, part_off[-1], threads + 1)[1:-1])
    bounds = [0, *sorted(set(cut.tolist()) - {0, n}), n]
    chunks = list(zip(bounds[:-1], bounds[1:]))
    with ThreadPoolExecutor(len(chunks)) as pool:
        parts = list(
            pool.map(
                lambda c: _rasterise(xy, part_off, obj_off[c[0] : c[1] + 1], heights[c[0] : c[1]], widths[c[0] : c[1]]),
                chunks,
            )
        )
    runs = np.concatenate([r for r, _ in parts])
    starts = np.cumsum([0] + [len(r) for r, _ in parts[:-1]])
    offsets = np.concatenate([[0]] + [o[1:] + s for (_, o), s in zip(parts, starts)]).astype(np.int64)
    return runs, offsets
