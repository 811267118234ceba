"""Boundary IoU (Cheng et al., CVPR 2021) as the official ``boundary-iou-api`` computes it.

A mask's boundary is its pixels within ``d`` of its outside: ``mask - erode(mask)``, the erosion
``cv2.erode`` with a 3x3 square ``d`` times (one square of side ``2d + 1``) on the mask padded by
one zero pixel, so pixels outside the image count as outside the mask; ``d = max(1, round(ratio *
sqrt(h**2 + w**2)))`` on the mask's own size. The overlap of a pair is the smaller of mask IoU and
boundary IoU, each pycocotools' ``rleIou`` (:mod:`deteval.geometry.masks`); a crowd ground truth's
is its mask IoU alone.

Each boundary is computed once per mask, only for masks that meet one of the other side, on the mask's
intervals of rows per column (never on pixels: the cost follows the runs, not the area), and kept as
canonical runs (as pycocotools' ``encode`` writes them).
"""

from __future__ import annotations

import numpy as np

from deteval.jit import njit, run_chunks, run_tasks
from deteval.numeric import grown
from deteval.rle import CompressedMasks, Masks

from .masks import mask_iou_blocks, rle_overlap

__all__ = ["boundary_iou_blocks", "boundary_runs", "dilations"]


def dilations(height: np.ndarray, width: np.ndarray, ratio: float) -> np.ndarray:
    """The erosion depth of each mask: ``max(1, round(ratio * sqrt(h**2 + w**2)))``, rounding half to even
    on float64 (Python's ``round`` of the official code's ``np.float64``). ``ratio`` in (0, 1], else
    ``ValueError`` (the kernels index by the depth: a NaN's would reach outside their buffers)."""
    if not isinstance(ratio, (int, float, np.floating)) or not 0 < ratio <= 1:
        raise ValueError(f"the dilation ratio must be a number in (0, 1], got {ratio!r}")
    h, w = np.asarray(height, np.int64), np.asarray(width, np.int64)
    diag = np.sqrt((h * h + w * w).astype(np.float64))
    return np.maximum(1, np.rint(np.float64(ratio) * diag)).astype(np.int64)


@njit(cache=True)
def _columns(counts, start, stop, h):  # pragma: no cover - numba
    """First and last column holding a 1 pixel (-1s when none)."""
    c0 = c1 = np.int64(-1)
    p = np.int64(0)
    for j in range(start, stop):
        run = np.int64(counts[j])
        if (j - start) & 1 and run > 0:
            if c0 < 0:
                c0 = p // h
            c1 = (p + run - 1) // h
        p += run
    return c0, c1


@njit(cache=True)
def _intersect(s, e, a0, a1, b0, b1, out_s, out_e, o):  # pragma: no cover - numba
    """The intersection of the sorted disjoint intervals ``[a0, a1)`` and ``[b0, b1)`` of ``s``/``e`` written
    at ``out[o:]``; the new end."""
    i, j = a0, b0
    while i < a1 and j < b1:
        lo = max(s[i], s[j])
        hi = min(e[i], e[j])
        if lo < hi:
            out_s[o] = lo
            out_e[o] = hi
            o += 1
        if e[i] < e[j]:
            i += 1
        else:
            j += 1
    return o


@njit(cache=True, nogil=True)
def _boundary_range(lo, hi, counts, offsets, height, width, depth):  # pragma: no cover - numba
    """Boundary runs of masks ``lo:hi``: (their runs one after another, each mask's run count).

    Per mask, on intervals of rows per column (never on pixels): the mask's intervals, each shrunk by ``d``
    at both ends (erosion along columns; the window's edges are the mask's outside), intersected over the
    ``2d + 1`` columns around each column (erosion along rows; van Herk's prefix and suffix intersections
    over blocks of ``2d + 1`` columns, three intersections a column whatever ``d``), and the mask's intervals
    less those (the boundary)."""
    out = np.empty(1024, np.uint32)
    lens = np.zeros(hi - lo, np.int64)
    n = 0
    # interval lists: starts and ends (rows), and per column where its list lies in them
    s = np.empty(256, np.int64)
    e = np.empty(256, np.int64)
    col_lo = np.empty(16, np.int64)  # per list: first and end index in s/e (lists: M's columns, V's, G's, H's)
    col_hi = np.empty(16, np.int64)
    for i in range(lo, hi):
        h, w, d = np.int64(height[i]), np.int64(width[i]), np.int64(depth[i])
        a0, a1 = offsets[i], offsets[i + 1]
        total = h * w
        c0, c1 = _columns(counts, a0, a1, h) if h > 0 else (-1, -1)
        if c0 < 0:  # no pixel: pycocotools' encoding of an empty mask is one 0-run
            out = grown(out, n + 1)
            out[n] = total
            lens[i - lo] = 1
            n += 1
            continue
        nw = c1 - c0 + 1
        k = 2 * d + 1
        # lists 0..nw-1: M's columns; nw..2nw-1: V's; 2nw..3nw-1: G (prefix); 3nw..4nw-1: H (suffix); 4nw..: E
        col_lo = grown(col_lo, 5 * nw)
        col_hi = grown(col_hi, 5 * nw)
        m = 0  # used entries of s/e
        # M: the 1-runs cut at column ends, adjacent pieces merged (zero-length runs in between)
        for c in range(nw):
            col_lo[c] = col_hi[c] = -1
        p = np.int64(0)
        for j in range(a0, a1):
            run = np.int64(counts[j])
            if (j - a0) & 1 and run > 0:
                c, r = p // h, p % h
                left = run
                while left > 0:
                    take = min(left, h - r)
                    cc = c - c0
                    s = grown(s, m + 1)
                    e = grown(e, m + 1)
                    if col_lo[cc] < 0:
                        col_lo[cc] = m
                        s[m], e[m] = r, r + take
                        m += 1
                    elif e[m - 1] == r:  # touches the previous piece of this column
                        e[m - 1] = r + take
                    else:
                        s[m], e[m] = r, r + take
                        m += 1
                    col_hi[cc] = m
                    left -= take
                    c += 1
                    r = np.int64(0)
            p += run
        for c in range(nw):
            if col_lo[c] < 0:
                col_lo[c] = col_hi[c] = m
        # V: each interval shrunk by d at both ends
        for c in range(nw):
            s = grown(s, m + col_hi[c] - col_lo[c])
            e = grown(e, m + col_hi[c] - col_lo[c])
            col_lo[nw + c] = m
            for t in range(col_lo[c], col_hi[c]):
                if e[t] - s[t] > 2 * d:
                    s[m], e[m] = s[t] + d, e[t] - d
                    m += 1
            col_hi[nw + c] = m
        # G and H over blocks of k columns: G[j] = V[block start .. j], H[j] = V[j .. block end]
        if nw >= k:
            for b in range(0, nw, k):
                be = min(b + k, nw)
                for j in range(b, be):
                    v = nw + j
                    if j == b:
                        ln = col_hi[v] - col_lo[v]
                        s = grown(s, m + ln)
                        e = grown(e, m + ln)
                        for t in range(ln):
                            s[m + t] = s[col_lo[v] + t]
                            e[m + t] = e[col_lo[v] + t]
                        col_lo[2 * nw + j], col_hi[2 * nw + j] = m, m + ln
                        m += ln
                    else:
                        g = 2 * nw + j - 1
                        s = grown(s, m + col_hi[g] - col_lo[g] + col_hi[v] - col_lo[v])
                        e = grown(e, m + col_hi[g] - col_lo[g] + col_hi[v] - col_lo[v])
                        end = _intersect(s, e, col_lo[g], col_hi[g], col_lo[v], col_hi[v], s, e, m)
                        col_lo[2 * nw + j], col_hi[2 * nw + j] = m, end
                        m = end
                for j in range(be - 1, b - 1, -1):
                    v = nw + j
                    if j == be - 1:
                        col_lo[3 * nw + j], col_hi[3 * nw + j] = col_lo[v], col_hi[v]
                    else:
                        g = 3 * nw + j + 1
                        s = grown(s, m + col_hi[g] - col_lo[g] + col_hi[v] - col_lo[v])
                        e = grown(e, m + col_hi[g] - col_lo[g] + col_hi[v] - col_lo[v])
                        end = _intersect(s, e, col_lo[g], col_hi[g], col_lo[v], col_hi[v], s, e, m)
                        col_lo[3 * nw + j], col_hi[3 * nw + j] = m, end
                        m = end
        # E at column c (window start c - d): H[c - d] and G[c + d]; none where the window leaves the extent
        for c in range(nw):
            x = 4 * nw + c
            if c < d or c + d >= nw:
                col_lo[x] = col_hi[x] = m
                continue
            hh, gg = 3 * nw + c - d, 2 * nw + c + d
            s = grown(s, m + col_hi[hh] - col_lo[hh] + col_hi[gg] - col_lo[gg])
            e = grown(e, m + col_hi[hh] - col_lo[hh] + col_hi[gg] - col_lo[gg])
            end = _intersect(s, e, col_lo[hh], col_hi[hh], col_lo[gg], col_hi[gg], s, e, m)
            col_lo[x], col_hi[x] = m, end
            m = end
        # the boundary: M's intervals less E's (E lies inside M), as canonical runs over the whole image
        out = grown(out, n + 2 * (m + nw) + 2)
        o = n
        done = np.int64(0)  # pixels the runs written so far cover
        cur = np.int64(-1)  # the 1-run being built: its start and length
        cur_n = np.int64(0)
        for c in range(nw):
            col = (c0 + c) * h
            x = 4 * nw + c
            q = col_lo[x]
            for t in range(col_lo[c], col_hi[c]):
                a, b = s[t], e[t]
                while a < b:
                    # skip E's intervals ending before a; the next piece of boundary is [a, min(b, next E start))
                    while q < col_hi[x] and e[q] <= a:
                        q += 1
                    if q < col_hi[x] and s[q] <= a:
                        a = e[q]
                        continue
                    stop = b if q >= col_hi[x] else min(b, s[q])
                    start = col + a
                    if cur_n > 0 and start == cur + cur_n:
                        cur_n += stop - a
                    else:
                        if cur_n > 0:
                            out[o] = cur - done
                            out[o + 1] = cur_n
                            o += 2
                            done = cur + cur_n
                        cur, cur_n = start, stop - a
                    a = stop
        out[o] = cur - done
        out[o + 1] = cur_n
        o += 2
        done = cur + cur_n
        if done < total:
            out[o] = total - done
            o += 1
        lens[i - lo] = o - n
        n = o
    return out[:n].copy(), lens


def boundary_runs(masks: Masks, ratio: float) -> Masks:
    """The boundary of every mask of ``masks`` at dilation ratio ``ratio``, as canonical runs."""
    counts = np.ascontiguousarray(masks.counts, np.uint32)
    offsets = np.ascontiguousarray(masks.offsets, np.int64)
    height = np.ascontiguousarray(masks.height, np.int64)
    width = np.ascontiguousarray(masks.width, np.int64)
    depth = dilations(height, width, ratio)
    n = len(height)
    n_parts = max(1, min(n, 64))
    bounds = np.linspace(0, n, n_parts + 1).astype(np.int64)
    parts = run_tasks([
        (lambda lo=int(lo), hi=int(hi): _boundary_range(lo, hi, counts, offsets, height, width, depth))
        for lo, hi in zip(bounds[:-1], bounds[1:])
    ])  # fmt: skip
    runs = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.uint32)
    lens = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
    out_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=out_offsets[1:])
    return Masks(runs, out_offsets, height, width, _areas(runs, out_offsets))


def _areas(runs: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Pixels of each mask: its odd runs (counted from each mask's first)."""
    lens = np.diff(offsets)
    rel = np.arange(len(runs)) - np.repeat(offsets[:-1], lens)
    owner = np.repeat(np.arange(len(lens)), lens)
    return np.bincount(owner, weights=np.where(rel & 1, runs, 0).astype(np.float64), minlength=len(lens))


@njit(cache=True, nogil=True)
def _boundary_min_blocks(
    lo, hi, gt_rows, gt_off, dt_rows, dt_off, pair_off, gt_crowd, gc, g_off, g_at, dc, d_off, d_at, out
):  # pragma: no cover - numba
    """``out`` (the pairs' mask IoU) lowered to the boundary IoU where that is smaller: non-crowd pairs with
    a positive mask IoU (the masks then share their size, and their extents, which their boundaries keep, meet)."""
    for grp in range(lo, hi):
        ng, nd = gt_off[grp + 1] - gt_off[grp], dt_off[grp + 1] - dt_off[grp]
        for d in range(nd):
            s = d_at[dt_rows[dt_off[grp] + d]]
            for g in range(ng):
                r = gt_rows[gt_off[grp] + g]
                k = pair_off[grp] + d * ng + g
                if gt_crowd[r] or not out[k] > 0:
                    continue
                b = g_at[r]
                inter, union = rle_overlap(dc, d_off[s], d_off[s + 1], gc, g_off[b], g_off[b + 1])
                iou = 0.0 if inter == 0 else inter / union
                if iou < out[k]:
                    out[k] = iou


KERNELS = (_boundary_range, _boundary_min_blocks)  # what boundary_iou_blocks calls (for deteval.jit.preload)


def _needed(rows: np.ndarray, off: np.ndarray, other_off: np.ndarray, n: int) -> np.ndarray:
    """The rows of groups that hold some of the other side's rows."""
    sizes = np.diff(off)
    meets = np.repeat(np.diff(other_off) > 0, sizes)
    need = np.zeros(n, bool)
    need[rows[meets]] = True
    return need


def _boundaries_of(masks: Masks | CompressedMasks, need: np.ndarray, ratio: float) -> tuple[Masks, np.ndarray]:
    """The boundaries of the masks ``need`` marks, and each row's index among them (-1 for the others)."""
    rows = np.flatnonzero(need)
    at = np.full(len(need), -1, np.int64)
    at[rows] = np.arange(len(rows))
    taken = masks.take(rows)
    plain = Masks(taken.counts, taken.offsets, taken.height, taken.width, taken.area)
    return boundary_runs(plain, ratio), at


def boundary_iou_blocks(
    gt_rows: np.ndarray,
    gt_off: np.ndarray,
    dt_rows: np.ndarray,
    dt_off: np.ndarray,
    pair_off: np.ndarray,
    gt_masks: Masks | CompressedMasks,
    gt_crowd: np.ndarray,
    dt_masks: Masks | CompressedMasks,
    dilation_ratio: float,
) -> np.ndarray:
    """Boundary IoU of every (detection, ground truth) pair of every group, flat (as
    :func:`deteval.geometry.masks.mask_iou_blocks` lays them out): ``min(mask IoU, boundary IoU)``, and mask IoU
    for a crowd ground truth. Boundaries are those of ``dilation_ratio``, computed once per mask that meets one of
    the other side."""
    gt_crowd = np.ascontiguousarray(gt_crowd, np.bool_)
    out = mask_iou_blocks(gt_rows, gt_off, dt_rows, dt_off, pair_off, gt_masks, gt_crowd, dt_masks)
    need_gt = _needed(gt_rows, gt_off, dt_off, len(gt_masks)) & ~gt_crowd
    need_dt = _needed(dt_rows, dt_off, gt_off, len(dt_masks))
    gb, g_at = _boundaries_of(gt_masks, need_gt, dilation_ratio)
    db, d_at = _boundaries_of(dt_masks, need_dt, dilation_ratio)
    blocks = (gt_rows, gt_off, dt_rows, dt_off, pair_off)
    run_chunks(
        _boundary_min_blocks, len(gt_off) - 1, np.diff(pair_off), *blocks, gt_crowd,
        gb.counts, gb.offsets, g_at, db.counts, db.offsets, d_at, out,
    )  # fmt: skip
    return out
