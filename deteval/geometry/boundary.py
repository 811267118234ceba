"""Boundary IoU (Cheng et al., CVPR 2021) as the official ``boundary-iou-api`` computes it.

A mask's boundary is its pixels within ``d`` of its outside: ``mask - erode(mask)``, the erosion
``cv2.erode`` with a 3x3 square ``d`` times (one square of side ``2d + 1``) on the mask padded by
one zero pixel, so pixels outside the image count as outside the mask; ``d = max(1, round(ratio *
sqrt(h**2 + w**2)))`` on the mask's own size. The overlap of a pair is the smaller of mask IoU and
boundary IoU, each pycocotools' ``rleIou`` (:mod:`deteval.geometry.masks`); a crowd ground truth's
is its mask IoU alone.

Each boundary is computed once per mask, only for masks that meet one of the other side, on the
pixels of the mask's extent (outside it everything is 0 already), and kept as canonical runs (as
pycocotools' ``encode`` writes them).
"""

from __future__ import annotations

import numpy as np

from deteval.jit import njit, run_chunks, run_tasks
from deteval.rle import CompressedMasks, Masks

from .masks import mask_iou_blocks, rle_overlap

__all__ = ["boundary_iou_blocks", "boundary_runs", "dilations"]


def dilations(height: np.ndarray, width: np.ndarray, ratio: float) -> np.ndarray:
    """The erosion depth of each mask: ``max(1, round(ratio * sqrt(h**2 + w**2)))``, rounding half to even
    on float64 (Python's ``round`` of the official code's ``np.float64``)."""
    h, w = np.asarray(height, np.int64), np.asarray(width, np.int64)
    diag = np.sqrt((h * h + w * w).astype(np.float64))
    return np.maximum(1, np.rint(np.float64(ratio) * diag)).astype(np.int64)


@njit(cache=True)
def _grown(buf, need):  # pragma: no cover - numba
    """``buf``, or a copy at least ``need`` long (doubling) when it is shorter."""
    if len(buf) >= need:
        return buf
    out = np.empty(max(need, 2 * len(buf)), buf.dtype)
    out[: len(buf)] = buf
    return out


@njit(cache=True)
def _window(counts, start, stop, h):  # pragma: no cover - numba
    """First and last column and row holding a 1 pixel (-1s when none): a run across columns spans every row."""
    c0 = r0 = np.int64(-1)
    c1 = r1 = np.int64(-1)
    p = np.int64(0)
    for j in range(start, stop):
        run = np.int64(counts[j])
        if (j - start) & 1 and run > 0:
            a, b = p, p + run - 1
            ca, cb = a // h, b // h
            ra, rb = (a % h, b % h) if ca == cb else (np.int64(0), h - 1)
            if c0 < 0:
                c0, r0, r1 = ca, ra, rb
            else:
                r0, r1 = min(r0, ra), max(r1, rb)
            c1 = cb
        p += run
    return c0, c1, r0, r1


@njit(cache=True, nogil=True)
def _boundary_range(lo, hi, counts, offsets, height, width, depth):  # pragma: no cover - numba
    """Boundary runs of masks ``lo:hi``: (their runs one after another, each mask's run count)."""
    out = np.empty(1024, np.uint32)
    lens = np.zeros(hi - lo, np.int64)
    n = 0
    grid = np.zeros(0, np.uint8)  # the window's pixels, column-major: 1 mask, 2 eroded (kept inside), 0 outside
    vert = np.zeros(0, np.uint8)  # eroded along columns
    run_len = np.zeros(0, np.int64)  # per row: consecutive columns eroded along columns, up to this one
    for i in range(lo, hi):
        h, w, d = np.int64(height[i]), np.int64(width[i]), np.int64(depth[i])
        a0, a1 = offsets[i], offsets[i + 1]
        total = h * w
        c0, c1, r0, r1 = _window(counts, a0, a1, h) if h > 0 else (-1, -1, -1, -1)
        if c0 < 0:  # no pixel: pycocotools' encoding of an empty mask is one 0-run
            out = _grown(out, n + 1)
            out[n] = total
            lens[i - lo] = 1
            n += 1
            continue
        bh, bw = r1 - r0 + 1, c1 - c0 + 1
        size = bh * bw
        grid = _grown(grid, size)
        vert = _grown(vert, size)
        run_len = _grown(run_len, bh)
        grid[:size] = 0
        vert[:size] = 0
        run_len[:bh] = 0
        # the mask's pixels inside the window
        p = np.int64(0)
        for j in range(a0, a1):
            run = np.int64(counts[j])
            if (j - a0) & 1 and run > 0:
                c, r = p // h, p % h  # one division per run: a run covers whole columns between its ends
                left = run
                while left > 0:
                    take = min(left, h - r)
                    base = (c - c0) * bh + r - r0
                    grid[base : base + take] = 1
                    left -= take
                    c += 1
                    r = np.int64(0)
            p += run
        # along columns: a run [a, b) keeps [a + d, b - d) (the window's edges are the mask's outside)
        for c in range(bw):
            base = c * bh
            r = np.int64(0)
            while r < bh:
                if grid[base + r] == 0:
                    r += 1
                    continue
                a = r
                while r < bh and grid[base + r] != 0:
                    r += 1
                for k in range(a + d, r - d):
                    vert[base + k] = 1
        # along rows: a pixel is eroded when the 2d + 1 columns centred on it are all eroded along columns
        span = 2 * d + 1
        for c in range(bw):
            base = c * bh
            for r in range(bh):
                if vert[base + r]:
                    run_len[r] += 1
                    if run_len[r] >= span:
                        grid[(c - d) * bh + r] = 2
                else:
                    run_len[r] = 0
        # the boundary (1s left) as canonical runs over the whole image
        out = _grown(out, n + size + 2)
        m = n
        done = np.int64(0)  # pixels the runs written so far cover
        cur = np.int64(-1)  # the 1-run being built: its start and length
        cur_n = np.int64(0)
        for c in range(bw):
            base = c * bh
            col = (c0 + c) * h + r0
            for r in range(bh):
                if grid[base + r] == 1:
                    q = col + r
                    if cur_n > 0 and q == cur + cur_n:
                        cur_n += 1
                    else:
                        if cur_n > 0:
                            out[m] = cur - done
                            out[m + 1] = cur_n
                            m += 2
                            done = cur + cur_n
                        cur, cur_n = q, 1
        out[m] = cur - done
        out[m + 1] = cur_n
        m += 2
        done = cur + cur_n
        if done < total:
            out[m] = total - done
            m += 1
        lens[i - lo] = m - n
        n = m
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
