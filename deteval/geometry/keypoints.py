"""Object keypoint similarity (OKS), as pycocotools' ``computeOks`` computes it.

OKS = mean over keypoints of ``exp(-d² / (2σ)² / (area + eps) / 2)``, over the
ground truth's visible keypoints, or over all keypoints measured to the
ground truth's box doubled on each side when none is visible.

It runs in three stages so the sum is bit-identical wherever it runs: the
exponents in numba, ``np.exp`` in numpy (numpy's SIMD ``exp`` can differ in
the last bit from the libm one a numba kernel would call), and numpy's
pairwise summation order reproduced in numba.
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


@njit(cache=True)
def _terms_per_pair(gt_rows, gt_off, dt_off, pair_off, visible, k):  # pragma: no cover - numba
    """Number of exponent terms of each (detection, ground truth) pair: visible keypoints, or all."""
    n_terms = np.zeros(pair_off[-1], np.int64)
    for grp in range(len(gt_off) - 1):
        ng, nd = gt_off[grp + 1] - gt_off[grp], dt_off[grp + 1] - dt_off[grp]
        for g in range(ng):
            vis = visible[gt_rows[gt_off[grp] + g]]
            for d in range(nd):
                n_terms[pair_off[grp] + d * ng + g] = vis if vis > 0 else k
    return n_terms


@njit(cache=True, nogil=True)
def _exponents(
    lo, hi, gt_rows, gt_off, dt_rows, dt_off, pair_off, term_off, gt_kpts, visible, gt_box, gt_area, dt_kpts,
    variances, e,
):  # pragma: no cover - numba
    k = len(variances)
    for grp in range(lo, hi):
        ng, nd = gt_off[grp + 1] - gt_off[grp], dt_off[grp + 1] - dt_off[grp]
        for g in range(ng):
            r = gt_rows[gt_off[grp] + g]
            vis = visible[r]
            bx, by, bw, bh = gt_box[r, 0], gt_box[r, 1], gt_box[r, 2], gt_box[r, 3]
            x0, x1 = bx - bw, bx + bw * 2
            y0, y1 = by - bh, by + bh * 2
            denom = gt_area[r] + EPS
            for d in range(nd):
                s = dt_rows[dt_off[grp] + d]
                o = term_off[pair_off[grp] + d * ng + g]
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
                    e[o] = -((dx * dx + dy * dy) / variances[j] / denom / 2)
                    o += 1


@njit(cache=True, nogil=True)
def _means(lo, hi, values, term_off, out):  # pragma: no cover - numba
    for p in range(lo, hi):
        cnt = term_off[p + 1] - term_off[p]
        out[p] = np_sum(values[term_off[p] : term_off[p + 1]]) / cnt


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
    n_terms = _terms_per_pair(gt_rows, gt_off, dt_off, pair_off, visible, len(variances))
    term_off = np.concatenate([[0], np.cumsum(n_terms)]).astype(np.int64)
    e = np.empty(term_off[-1])
    run_chunks(
        _exponents, len(gt_off) - 1, np.diff(pair_off),
        gt_rows, gt_off, dt_rows, dt_off, pair_off, term_off, gt_kpts, visible, gt_box, gt_area, dt_kpts, variances, e,
    )  # fmt: skip
    out = np.empty(len(term_off) - 1)
    # in place: one array of terms, not two (on person-kp 19 MB of the peak); numpy's exp gives the same bits
    # into its input as into a new array (the same loop, element by element)
    run_chunks(_means, len(out), np.diff(term_off), np.exp(e, out=e), term_off, out)
    return out
