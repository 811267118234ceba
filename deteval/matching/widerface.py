"""WIDER FACE matching and per-threshold counts, as the evaluation script (``evaluation.py``) computes them.

Per image with faces and predictions, each prediction in file order (never sorted):

* its overlap with every face is the ``box_overlaps`` IoU with ``+1`` pixel widths, boxes ``x + w``,
  operation for operation (:func:`best_faces`); it goes to its highest-IoU face, the first on ties;
* at IoU ``>= iou_thr`` (:func:`subset_progress`): a face outside the subset's keep list takes the prediction
  out of the proposals; a kept face not yet found counts as found. Each prediction carries the number of
  kept faces found so far;
* for each threshold ``t`` (:func:`threshold_counts`), the prefix of the image's predictions up to the last
  whose normalised score is ``>= t``: its proposals and the found count at its end, summed over images.
"""

from __future__ import annotations

import numpy as np

from deteval.jit import njit


class ZeroUnion(ZeroDivisionError):
    """A prediction and a face whose union is 0 in ``image`` (the script's Cython raises ZeroDivisionError)."""

    def __init__(self, image: int) -> None:
        super().__init__(f"image {image}: a prediction and a face with a union of 0")
        self.image = image


@njit(cache=True, nogil=True)
def _best_faces(pred, p_off, gt, g_off, best, best_iou):  # pragma: no cover - numba
    for im in range(len(p_off) - 1):
        d0, d1, g0, g1 = p_off[im], p_off[im + 1], g_off[im], g_off[im + 1]
        if d0 == d1 or g0 == g1:
            continue
        for d in range(d0, d1):
            b0, b1 = pred[d, 0], pred[d, 1]
            b2, b3 = pred[d, 2] + pred[d, 0], pred[d, 3] + pred[d, 1]
            top, arg, nan = 0.0, 0, False  # the overlap row starts at zeros; its first maximum wins
            for g in range(g0, g1):
                q0, q1 = gt[g, 0], gt[g, 1]
                q2, q3 = gt[g, 2] + gt[g, 0], gt[g, 3] + gt[g, 1]
                area = (q2 - q0 + 1) * (q3 - q1 + 1)
                # min/max as Python's: the first argument unless the second is strictly beyond it
                iw = (q2 if q2 < b2 else b2) - (q0 if q0 > b0 else b0) + 1
                ov = 0.0
                if iw > 0:
                    ih = (q3 if q3 < b3 else b3) - (q1 if q1 > b1 else b1) + 1
                    if ih > 0:
                        ua = (b2 - b0 + 1) * (b3 - b1 + 1) + area - iw * ih
                        if ua == 0:
                            return im
                        ov = iw * ih / ua
                if ov != ov:  # numpy's max of a row holding NaN: NaN, never >= the threshold
                    nan = True
                elif ov > top:
                    top, arg = ov, g - g0
            best[d] = -1 if nan else arg
            best_iou[d] = np.nan if nan else top
    return -1


def best_faces(pred: np.ndarray, p_off: np.ndarray, gt: np.ndarray, g_off: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each prediction's highest-IoU face (its index within the image, -1 where the image has no face or
    the row holds a NaN) and that IoU. ``pred`` (P, >=4) and ``gt`` (G, 4) are float64 x, y, w, h grouped by
    image with offsets ``p_off``, ``g_off`` (I + 1,). A zero union raises :class:`ZeroUnion` (the image's index)."""
    pred = np.ascontiguousarray(pred[:, :4], np.float64)
    gt = np.ascontiguousarray(gt, np.float64)
    p_off = np.ascontiguousarray(p_off, np.int64)
    g_off = np.ascontiguousarray(g_off, np.int64)
    if gt.ndim != 2 or gt.shape[1] != 4 or len(p_off) != len(g_off) or p_off[-1] != len(pred) or g_off[-1] != len(gt):
        raise ValueError("best_faces: boxes (n, 4) and offsets of one length ending at the row counts")
    best = np.full(len(pred), -1, np.int64)
    best_iou = np.zeros(len(pred), np.float64)
    bad = _best_faces(pred, p_off, gt, g_off, best, best_iou)
    if bad >= 0:
        raise ZeroUnion(int(bad))
    return best, best_iou


@njit(cache=True, nogil=True)
def _subset_progress(best, best_iou, p_off, g_off, keep, iou_thr, found, proposal):  # pragma: no cover - numba
    for im in range(len(p_off) - 1):
        d0, d1, g0, g1 = p_off[im], p_off[im + 1], g_off[im], g_off[im + 1]
        if d0 == d1 or g0 == g1:
            continue
        state = np.zeros(g1 - g0, np.int8)  # 0 not found, 1 found, -1 matched outside the keep list
        n = 0
        for d in range(d0, d1):
            proposal[d] = 1
            if best[d] >= 0 and best_iou[d] >= iou_thr:
                f = best[d]
                if not keep[g0 + f]:
                    state[f] = -1
                    proposal[d] = 0
                elif state[f] == 0:
                    state[f] = 1
                    n += 1
            found[d] = n


def subset_progress(
    best: np.ndarray, best_iou: np.ndarray, p_off: np.ndarray, g_off: np.ndarray, keep: np.ndarray, iou_thr: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(found, proposal)`` per prediction for one subset: the kept faces found up to it (int64) and whether
    it stays a proposal (uint8); both 0 in images without faces or predictions (never read)."""
    keep = np.ascontiguousarray(keep, np.bool_)
    if len(keep) != g_off[-1] or len(best) != p_off[-1] or best.shape != best_iou.shape:
        raise ValueError("subset_progress: one keep flag per face, one best face per prediction")
    found = np.zeros(len(best), np.int64)
    proposal = np.zeros(len(best), np.uint8)
    _subset_progress(
        np.ascontiguousarray(best, np.int64),
        np.ascontiguousarray(best_iou, np.float64),
        np.ascontiguousarray(p_off, np.int64),
        np.ascontiguousarray(g_off, np.int64),
        keep,
        float(iou_thr),
        found,
        proposal,
    )
    return found, proposal


@njit(cache=True, nogil=True)
def _threshold_counts(score, p_off, images, thresholds, found, proposal, out):  # pragma: no cover - numba
    n_thr = len(thresholds)
    n_sub = found.shape[0]
    last = np.empty(n_thr, np.int64)
    for k in range(len(images)):
        im = images[k]
        d0, d1 = p_off[im], p_off[im + 1]
        if d0 == d1:
            continue
        last[:] = -1
        for i in range(d1 - d0):
            s = score[d0 + i]
            if not s >= thresholds[n_thr - 1]:
                continue  # below every threshold (or NaN)
            lo, hi = 0, n_thr - 1  # the first threshold the score reaches: thresholds fall
            while lo < hi:
                mid = (lo + hi) // 2
                if s >= thresholds[mid]:
                    hi = mid
                else:
                    lo = mid + 1
            last[lo] = i  # later rows come later: the last passing row wins
        r = -1
        for t in range(n_thr):
            if last[t] > r:
                last[t] = r = last[t]
            else:
                last[t] = r
        for s in range(n_sub):
            props = 0
            t = 0
            while t < n_thr and last[t] < 0:
                t += 1
            for i in range(d1 - d0):
                props += proposal[s, d0 + i]
                while t < n_thr and last[t] == i:
                    out[s, t, 0] += props
                    out[s, t, 1] += found[s, d0 + i]
                    t += 1


def threshold_counts(
    score: np.ndarray,
    p_off: np.ndarray,
    images: np.ndarray,
    thresholds: np.ndarray,
    found: np.ndarray,
    proposal: np.ndarray,
) -> np.ndarray:
    """int64 (S, T, 2): for each subset and threshold, the proposals and the found faces of the prefixes up
    to each image's last prediction with ``score >= threshold``, summed over ``images`` (dense indices, in any
    order, repeats counted again). ``thresholds`` must fall; ``found``/``proposal`` are (S, P)."""
    thresholds = np.ascontiguousarray(thresholds, np.float64)
    if len(thresholds) == 0 or np.any(np.diff(thresholds) >= 0):
        raise ValueError("threshold_counts: thresholds must fall strictly")
    found = np.ascontiguousarray(found, np.int64)
    proposal = np.ascontiguousarray(proposal, np.uint8)
    if found.ndim != 2 or found.shape != proposal.shape or found.shape[1] != len(score) or p_off[-1] != len(score):
        raise ValueError("threshold_counts: found and proposal (S, P), one score per prediction")
    out = np.zeros((found.shape[0], len(thresholds), 2), np.int64)
    _threshold_counts(
        np.ascontiguousarray(score, np.float64),
        np.ascontiguousarray(p_off, np.int64),
        np.ascontiguousarray(images, np.int64),
        thresholds,
        found,
        proposal,
        out,
    )
    return out
