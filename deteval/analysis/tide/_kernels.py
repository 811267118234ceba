"""Numba kernels of the TIDE breakdown: one pass over images, one AP pass over classes."""

from __future__ import annotations

import numpy as np

from deteval.accumulation.cumulative import cumulative_counts
from deteval.geometry.boxes import iou_xywh
from deteval.jit import njit, run_chunks

# detection states
FP, TP, IGNORED = 0, 1, 2
# error codes, in tidecv's order (TIDE._error_types); MISS is only ever a ground truth's
CLS, LOC, BOTH, DUPE, BKG, MISS = 0, 1, 2, 3, 4, 5
NO_ERROR = -1

_NO_SCORES = np.zeros(0)  # the curve is read point by point: no tie blocks, no scores


def image_pass(d_off, d_box, d_cls, g_off, g_box, g_cls, c_off, c_box, c_cls, c_wild, pos, bg, overlaps=None):
    """Match, apply ignore regions and classify every false or ignored detection, image by image.

    ``overlaps``: ``None`` (box IoU from the boxes), or precomputed overlaps (tidecv's mask mode)
    as ``(iou, iou_off, crowd_iou, crowd_off)``: per image, its ``D x G`` IoU block (row-major, at
    ``iou_off[image]``) and its ``D x C`` block of overlaps with the ignore regions (intersection
    over the detection's area, at ``crowd_off[image]``).

    Detections come image by image (CSR ``d_off``) in descending score, ties in input order, already
    cut to max_dets; ground truth (``g_off``, non-crowd) and ignore regions (``c_off``, crowd) in
    file order. Returns per detection its state (FP/TP/IGNORED), error code and error target (the
    ground-truth position a Loc or Cls error points at, -1 otherwise), and per ground truth whether
    it was matched. This is tidecv's ``TIDEExample`` and ``TIDERun._eval_image`` (bbox mode):

    * greedy matching in score order: each detection takes the unused same-class ground truth of
      highest IoU (the first of equals) when that IoU is ``>= pos``;
    * a detection left unmatched whose IoU with a same-class crowd region (intersection over the
      detection's area) is ``> pos`` is ignored (left out of AP, still classified);
    * each unmatched or ignored detection gets the first error that applies: Bkg when the image has
      no ground truth; Loc when ``bg <= max same-class IoU <= pos``; Cls when the max IoU with
      another class is ``>= pos``; Dupe when the max IoU with a matched same-class ground truth is
      ``>= pos``; Bkg when the max IoU with any ground truth is ``<= bg``; Both otherwise.
      "max" is numpy's argmax: the first of equal values, zeros (other classes, used ones) included.
    """
    n_det = d_box.shape[0]
    state = np.zeros(n_det, np.int8)
    err = np.full(n_det, NO_ERROR, np.int8)
    target = np.full(n_det, -1, np.int64)
    gt_used = np.zeros(g_box.shape[0], np.bool_)
    if overlaps is None:  # empty arrays: the kernel computes box IoU
        empty = np.zeros(0, np.float64)
        overlaps = (empty, np.zeros(0, np.int64), empty, np.zeros(0, np.int64))
    # images are independent: ranges of them run on threads (run_chunks runs small inputs inline)
    cost = np.diff(d_off) * (np.diff(g_off) + 1) if len(d_off) > 1 else None
    run_chunks(
        _images, len(d_off) - 1, cost,
        d_off, d_box, d_cls, g_off, g_box, g_cls, c_off, c_box, c_cls, c_wild, pos, bg, state, err, target, gt_used,
        *overlaps,
    )  # fmt: skip
    return state, err, target, gt_used


@njit(cache=True, nogil=True)
def _images(
    lo,
    hi,
    d_off,
    d_box,
    d_cls,
    g_off,
    g_box,
    g_cls,
    c_off,
    c_box,
    c_cls,
    c_wild,
    pos,
    bg,
    state,
    err,
    target,
    gt_used,
    pre,
    pre_off,
    pre_c,
    pre_c_off,
):  # pragma: no cover - numba
    # images are independent; one image's work, as tidecv's TIDERun._eval_image
    for im in range(lo, hi):
        ds, nd = d_off[im], d_off[im + 1] - d_off[im]
        gs, ng = g_off[im], g_off[im + 1] - g_off[im]
        if nd == 0:
            continue
        given = len(pre_off) > 0  # precomputed overlaps (masks), else box IoU
        iou = np.empty((nd, ng))
        for d in range(nd):
            db = d_box[ds + d]
            for g in range(ng):
                if given:
                    iou[d, g] = pre[pre_off[im] + d * ng + g]
                    continue
                gb = g_box[gs + g]
                iou[d, g] = iou_xywh(db[0], db[1], db[2], db[3], gb[0], gb[1], gb[2], gb[3], False)
        for d in range(nd):
            best, best_v = -1, -1.0
            for g in range(ng):
                if gt_used[gs + g] or g_cls[gs + g] != d_cls[ds + d]:
                    continue
                if iou[d, g] > best_v:
                    best, best_v = g, iou[d, g]
            if best >= 0 and best_v >= pos:  # pos > 0: a zero row never matches, as in tidecv
                state[ds + d] = TP
                gt_used[gs + best] = True
        nc = c_off[im + 1] - c_off[im]
        for c in range(c_off[im], c_off[im + 1]):
            cb = c_box[c]
            for d in range(nd):
                if state[ds + d] == TP or not (c_wild[c] or c_cls[c] == d_cls[ds + d]):
                    continue
                db = d_box[ds + d]
                if given:
                    v = pre_c[pre_c_off[im] + d * nc + (c - c_off[im])]
                else:
                    v = iou_xywh(db[0], db[1], db[2], db[3], cb[0], cb[1], cb[2], cb[3], True)
                if v > pos:
                    state[ds + d] = IGNORED
        for d in range(nd):
            if state[ds + d] == TP:
                continue
            if ng == 0:
                err[ds + d] = BKG
                continue
            dc = d_cls[ds + d]
            i_same, v_same, i_other, v_other, v_dupe, v_any = 0, -1.0, 0, -1.0, 0.0, 0.0
            for g in range(ng):
                v = iou[d, g]
                same = g_cls[gs + g] == dc
                s = v if same else 0.0
                o = 0.0 if same else v
                if s > v_same:
                    i_same, v_same = g, s
                if o > v_other:
                    i_other, v_other = g, o
                if same and gt_used[gs + g] and v > v_dupe:
                    v_dupe = v
                if v > v_any:
                    v_any = v
            if bg <= v_same <= pos:
                err[ds + d] = LOC
                target[ds + d] = gs + i_same
            elif v_other >= pos:
                err[ds + d] = CLS
                target[ds + d] = gs + i_other
            elif v_dupe >= pos:
                err[ds + d] = DUPE
            elif v_any <= bg:
                err[ds + d] = BKG
            else:
                err[ds + d] = BOTH


@njit(cache=True, inline="always")
def _add(total, comp, x, compensated):  # pragma: no cover - numba
    """One step of Python's builtin ``sum()`` of floats: plain, or Neumaier's (CPython >= 3.12)."""
    if not compensated:
        return total + x, comp
    t = total + x
    if abs(total) >= abs(x):
        comp += (total - t) + x
    else:
        comp += (x - t) + total
    return t, comp


@njit(cache=True)
def class_aps(c_off, tp, npos, compensated):  # pragma: no cover - numba
    """tidecv's ``APDataObject.get_ap`` for every class: 101-point COCO-style AP, in percent.

    ``tp`` holds each class's points (CSR ``c_off``) in ranking order. Precision is
    ``tp / (tp + fp)`` made monotone from the right; the 101 recall points ``k / 100`` read the
    first point reaching them (``searchsorted(side='left')``); the AP is
    ``sum(101 values) / 101 * 100``, summed as Python's ``sum()`` does. A class without ground
    truth has AP 0.
    """
    n_cls = len(c_off) - 1
    out = np.zeros(n_cls)
    fp = ~tp  # tidecv's points are true or false positives (ignored detections were never pushed)
    for c in range(n_cls):
        n = npos[c]
        if n <= 0:
            continue
        s, m = c_off[c], c_off[c + 1] - c_off[c]
        tpc, fpc, _ = cumulative_counts(tp[s : s + m], fp[s : s + m], _NO_SCORES, False)
        prec = np.empty(m)
        rec = np.empty(m)
        for i in range(m):
            nt, nf = tpc[i], fpc[i]
            prec[i] = nt / (nt + nf)
            rec[i] = nt / n
        for i in range(m - 1, 0, -1):
            if prec[i] > prec[i - 1]:
                prec[i - 1] = prec[i]
        total, comp, j = 0.0, 0.0, 0
        for k in range(101):
            x = k / 100
            while j < m and rec[j] < x:
                j += 1
            total, comp = _add(total, comp, prec[j] if j < m else 0.0, compensated)
        if compensated and comp != 0.0 and np.isfinite(comp):
            total += comp
        out[c] = total / 101 * 100
    return out
