"""Mask overlap computed on run-length encodings, never on decoded pixels.

Semantics are pycocotools' ``rleIou``: a box IoU of the masks' extents is
computed first and the exact overlap only where it is positive; masks of
different sizes overlap -1; a crowd ground truth's union is the detection's
area; an empty intersection gives 0. Detections kept as compressed RLE text
(:class:`deteval.rle.CompressedMasks`) are decoded one at a time, where
they meet a ground truth.
"""

from __future__ import annotations

import numpy as np

from deteval.geometry.boxes import iou_xywh
from deteval.jit import njit, run_chunks
from deteval.rle import U32 as _U32
from deteval.rle import CompressedMasks, Masks, decode_counts, mask_extent


@njit(cache=True)
def rle_area(counts, start, stop):  # pragma: no cover - numba
    """Pixels of the mask ``counts[start:stop]`` (its 1-runs)."""
    a = np.int64(0)
    for j in range(start + 1, stop, 2):
        a = (a + counts[j]) & _U32
    return a


@njit(cache=True)
def rle_overlap(a, a0, a1, b, b0, b1):  # pragma: no cover - numba
    """Intersection and union pixel counts of masks ``a[a0:a1]`` and ``b[b0:b1]`` of one size.

    pycocotools' walk: each step consumes the shorter of the two current runs
    and moves each exhausted side to its next run, at most one run a side; the
    walk ends when both current runs are empty. So zero-length runs that both
    masks reach at once end it early (non-canonical RLE only), as they do there.
    """
    inter = np.int64(0)
    union = np.int64(0)
    ra = np.int64(a[a0]) if a1 > a0 else np.int64(0)
    rb = np.int64(b[b0]) if b1 > b0 else np.int64(0)
    ia, ib = a0 + 1, b0 + 1
    va = False
    vb = False
    while True:
        c = min(ra, rb)
        if va or vb:
            union += c
            if va and vb:
                inter += c
        ra -= c
        rb -= c
        moved = False
        if ra == 0 and ia < a1:
            ra = np.int64(a[ia])
            ia += 1
            va = not va
            moved = True
        if rb == 0 and ib < b1:
            rb = np.int64(b[ib])
            ib += 1
            vb = not vb
            moved = True
        if ra + rb == 0 or (c == 0 and not moved):  # the second only for runs of unequal totals
            break
    return inter & _U32, union & _U32


@njit(cache=True)
def mask_iou_pair(dc, d0, d1, dbox, dh, dw, gc, g0, g1, gbox, gh, gw, crowd):  # pragma: no cover - numba
    """IoU of detection runs ``dc[d0:d1]`` and ground-truth runs ``gc[g0:g1]``; boxes are their extents."""
    if iou_xywh(dbox[0], dbox[1], dbox[2], dbox[3], gbox[0], gbox[1], gbox[2], gbox[3], False) <= 0:
        return 0.0
    if dh != gh or dw != gw:
        return -1.0
    inter, union = rle_overlap(dc, d0, d1, gc, g0, g1)
    if inter == 0:
        union = 1
    elif crowd:
        union = rle_area(dc, d0, d1)
    return inter / union


@njit(cache=True, nogil=True)
def _mask_iou_blocks(
    lo,
    hi,
    gt_rows,
    gt_off,
    dt_rows,
    dt_off,
    pair_off,
    gc,
    g_off,
    g_box,
    g_h,
    g_w,
    gt_crowd,
    dc,
    d_off,
    d_box,
    d_h,
    d_w,
    out,
):  # pragma: no cover - numba
    for grp in range(lo, hi):
        ng, nd = gt_off[grp + 1] - gt_off[grp], dt_off[grp + 1] - dt_off[grp]
        for d in range(nd):
            s = dt_rows[dt_off[grp] + d]
            for g in range(ng):
                r = gt_rows[gt_off[grp] + g]
                out[pair_off[grp] + d * ng + g] = mask_iou_pair(
                    dc, d_off[s], d_off[s + 1], d_box[s], d_h[s], d_w[s],
                    gc, g_off[r], g_off[r + 1], g_box[r], g_h[r], g_w[r], gt_crowd[r],
                )  # fmt: skip


@njit(cache=True, nogil=True)
def _text_mask_iou_blocks(
    lo,
    hi,
    gt_rows,
    gt_off,
    dt_rows,
    dt_off,
    pair_off,
    gc,
    g_off,
    g_box,
    g_h,
    g_w,
    gt_crowd,
    d_text,
    d_start,
    d_end,
    d_off,
    d_h,
    d_w,
    out,
):  # pragma: no cover - numba
    """:func:`_mask_iou_blocks` with the detections' runs decoded from their text, each once, into scratch."""
    most = 0
    for grp in range(lo, hi):
        if gt_off[grp + 1] > gt_off[grp]:
            for k in range(dt_off[grp], dt_off[grp + 1]):
                s = dt_rows[k]
                most = max(most, d_off[s + 1] - d_off[s])
    runs = np.empty(most, np.uint32)
    box = np.empty(4)
    for grp in range(lo, hi):
        ng, nd = gt_off[grp + 1] - gt_off[grp], dt_off[grp + 1] - dt_off[grp]
        if ng == 0:
            continue
        for d in range(nd):
            s = dt_rows[dt_off[grp] + d]
            m = decode_counts(d_text, d_start[s], d_end[s], runs, 0)[0]
            box[:] = 0.0
            mask_extent(runs, 0, m, d_h[s], d_w[s], box)
            for g in range(ng):
                r = gt_rows[gt_off[grp] + g]
                out[pair_off[grp] + d * ng + g] = mask_iou_pair(
                    runs, 0, m, box, d_h[s], d_w[s],
                    gc, g_off[r], g_off[r + 1], g_box[r], g_h[r], g_w[r], gt_crowd[r],
                )  # fmt: skip


def mask_iou_blocks(
    gt_rows: np.ndarray,
    gt_off: np.ndarray,
    dt_rows: np.ndarray,
    dt_off: np.ndarray,
    pair_off: np.ndarray,
    gt_masks: Masks | CompressedMasks,
    gt_crowd: np.ndarray,
    dt_masks: Masks | CompressedMasks,
) -> np.ndarray:
    """Mask IoU of every (detection, ground truth) pair of every group, flat.

    ``gt_masks``/``dt_masks`` are :class:`deteval.rle.Masks` (flat runs) or, for the detections,
    :class:`deteval.rle.CompressedMasks` (decoded here, one at a time);
    group ``i``'s ``D x G`` block, row-major, starts at ``pair_off[i]``.
    """
    gc = gt_masks.counts
    g_box = gt_masks.extents()
    gt = (gc, gt_masks.offsets, g_box, gt_masks.height, gt_masks.width, np.ascontiguousarray(gt_crowd, np.bool_))
    out = np.empty(pair_off[-1])
    blocks = (gt_rows, gt_off, dt_rows, dt_off, pair_off)
    if isinstance(dt_masks, CompressedMasks):
        dt = (*dt_masks.strings(), dt_masks.offsets, dt_masks.height, dt_masks.width)
        run_chunks(_text_mask_iou_blocks, len(gt_off) - 1, np.diff(pair_off), *blocks, *gt, *dt, out)
        return out
    dc = dt_masks.counts
    d_box = dt_masks.extents()
    dt = (dc, dt_masks.offsets, d_box, dt_masks.height, dt_masks.width)
    run_chunks(_mask_iou_blocks, len(gt_off) - 1, np.diff(pair_off), *blocks, *gt, *dt, out)
    return out
