"""Object keypoint similarity (OKS), as pycocotools' ``computeOks`` computes it.

OKS = mean over keypoints of ``exp(-d² / (2σ)² / (area + eps) / 2)``, over the
ground truth's visible keypoints, or over all keypoints measured to the
ground truth's box doubled on each side when none is visible.

It runs in three stages so the sum is bit-identical wherever it runs: the
exponents in numba, ``np.exp`` in numpy (numpy's SIMD ``exp`` can differ in
the last bit from the libm one a numba kernel would call), and numpy's
pairwise summation order reproduced in numba; the stages take turns over a
small scratch buffer, a few thousand pairs at a time. Terms so negative that
their ``exp`` underflows to 0 skip ``np.exp``.
"""

from __future__ import annotations

import numpy as np

from deteval.jit import njit, run_chunks
from deteval.numeric import np_sum

EPS = float(np.spacing(1))
# pycocotools' Params.setKpParams: the 17 COCO person keypoints, built the same way
COCO_SIGMAS = (
    np.array([0.26, 0.25, 0.25, 0.35, 0.35, 0.79, 0.79, 0.72, 0.72, 0.62, 0.62, 1.07, 1.07, 0.87, 0.87, 0.89, 0.89])
    / 10.0
)


# terms per scratch fill: small enough to stay in cache and never fault in fresh pages (the whole of person-kp's
# 3.0M terms at once took 24 MB and ~20 ms more); a group with more gets a scratch of its own size
SCRATCH_TERMS = 1 << 15
# exp(x) is below half the least subnormal for x < -745.14, so 0 in every libm and in numpy's SIMD exp. numpy
# takes a slow path for such terms (6 ns each, 0.9 for the others), and far detections give millions of them
UNDERFLOW = -746.0


@njit(cache=True, nogil=True)
def _group_terms(gt_rows, gt_off, dt_off, visible, k):  # pragma: no cover - numba
    """Exponent terms of each group: per pair, the ground truth's visible keypoints, or all ``k``."""
    out = np.empty(len(gt_off) - 1, np.int64)
    for grp in range(len(gt_off) - 1):
        per_dt = 0
        for i in range(gt_off[grp], gt_off[grp + 1]):
            vis = visible[gt_rows[i]]
            per_dt += vis if vis > 0 else k
        out[grp] = per_dt * (dt_off[grp + 1] - dt_off[grp])
    return out


@njit(cache=True, nogil=True)
def _exponents(
    lo, hi, gt_rows, gt_off, dt_rows, dt_off, gt_kpts, visible, gt_box, gt_area, dt_kpts, variances, e, live, at,
):  # pragma: no cover - numba
    """The terms of groups ``[lo, hi)``, pair after pair in the blocks' row-major order, from ``e[0]``: 0 where
    the exponent's ``exp`` is 0 in any libm, else left for ``_means`` to fill in from ``live``, the exponents
    themselves, whose places in ``e`` are ``at``. Returns how many are live."""
    k = len(variances)
    o = 0
    m = 0
    for grp in range(lo, hi):
        for d in range(dt_off[grp], dt_off[grp + 1]):
            s = dt_rows[d]
            for i in range(gt_off[grp], gt_off[grp + 1]):
                r = gt_rows[i]
                vis = visible[r]
                bx, by, bw, bh = gt_box[r, 0], gt_box[r, 1], gt_box[r, 2], gt_box[r, 3]
                x0, x1 = bx - bw, bx + bw * 2
                y0, y1 = by - bh, by + bh * 2
                denom = gt_area[r] + EPS
                for j in range(k):
                    xd, yd = dt_kpts[s, 3 * j], dt_kpts[s, 3 * j + 1]
                    if vis > 0:
                        if gt_kpts[r, 3 * j + 2] <= 0:
                            continue
                        dx = xd - gt_kpts[r, 3 * j]
                        dy = yd - gt_kpts[r, 3 * j + 1]
                    else:
                        dx = max(0.0, x0 - xd) + max(0.0, xd - x1)
                        dy = max(0.0, y0 - yd) + max(0.0, yd - y1)
                    x = -((dx * dx + dy * dy) / variances[j] / denom / 2)
                    # written either way, kept by the count: no branch (a far detection is a coin toss)
                    deep = x < UNDERFLOW
                    e[o] = 0.0
                    live[m] = x
                    at[m] = o
                    m += not deep
                    o += 1
    return m


@njit(cache=True, nogil=True)
def _means(lo, hi, gt_rows, gt_off, dt_off, pair_off, visible, k, e, live, at, n_live, out):  # pragma: no cover
    """Each pair's mean of its terms (``e`` as ``_exponents`` laid it out, ``live`` through ``exp``), in numpy's
    summation order."""
    for i in range(n_live):
        e[at[i]] = live[i]
    o = 0
    for grp in range(lo, hi):
        p = pair_off[grp]
        for _ in range(dt_off[grp + 1] - dt_off[grp]):
            for i in range(gt_off[grp], gt_off[grp + 1]):
                vis = visible[gt_rows[i]]
                cnt = vis if vis > 0 else k
                out[p] = np_sum(e[o : o + cnt]) / cnt
                o += cnt
                p += 1


def _oks_range(lo: int, hi: int, terms_end: np.ndarray, gt_rows, gt_off, dt_rows, dt_off, pair_off, gt_kpts,
               visible, gt_box, gt_area, dt_kpts, variances, out) -> None:  # fmt: skip
    """OKS of groups ``[lo, hi)``: exponents, numpy's ``exp`` and means, one scratch fill at a time."""
    first = terms_end[lo - 1] if lo else 0
    widest = int(np.max(np.diff(terms_end[lo:hi], prepend=first))) if hi > lo else 0
    size = max(SCRATCH_TERMS, widest)
    # live and at take one write past the last term (the branch-free count)
    e, live, at = np.empty(size), np.empty(size + 1), np.empty(size + 1, np.int64)
    g = lo
    while g < hi:
        start = terms_end[g - 1] if g else 0
        g_end = min(hi, max(g + 1, int(np.searchsorted(terms_end, start + size, side="right"))))
        n = _exponents(g, g_end, gt_rows, gt_off, dt_rows, dt_off, gt_kpts, visible, gt_box, gt_area, dt_kpts,
                       variances, e, live, at)  # fmt: skip
        # numpy's exp, as pycocotools': its SIMD exp can differ in the last bit from the libm one numba would call
        np.exp(live[:n], out=live[:n])
        _means(g, g_end, gt_rows, gt_off, dt_off, pair_off, visible, len(variances), e, live, at, n, out)
        g = g_end


def oks_blocks(
    gt_rows: np.ndarray,
    gt_off: np.ndarray,
    dt_rows: np.ndarray,
    dt_off: np.ndarray,
    pair_off: np.ndarray,
    gt_kpts: np.ndarray,
    gt_box: np.ndarray,
    gt_area: np.ndarray,
    dt_kpts: np.ndarray,
    sigmas: np.ndarray,
) -> np.ndarray:
    """OKS of every (detection, ground truth) pair of every group, flat.

    Group ``i``'s ``D x G`` block, row-major, starts at ``pair_off[i]``.
    Keypoints are ``(N, 3K)`` rows ``x1, y1, v1, x2, ...``; ``sigmas`` has K entries.
    """
    variances = (np.asarray(sigmas, np.float64) * 2) ** 2
    visible = (gt_kpts[:, 2::3] > 0).sum(axis=1).astype(np.int64)
    terms = _group_terms(gt_rows, gt_off, dt_off, visible, len(variances))
    out = np.empty(pair_off[-1])
    run_chunks(
        _oks_range, len(terms), terms, np.cumsum(terms),
        gt_rows, gt_off, dt_rows, dt_off, pair_off, gt_kpts, visible, gt_box, gt_area, dt_kpts, variances, out,
    )  # fmt: skip
    return out
