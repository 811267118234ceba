"""PASCAL VOC matching: each detection against its argmax-IoU ground truth, no fallback.

Rules (docs/protocols.md, "VOC matching"), applied per (image, class) group with the
detections in descending score order (ties in input order), which is VOC's
global order restricted to one image:

* The best ground truth is the first maximum of the IoU over *all* ground truth
  of the class in the image, whether already taken or difficult.
* If the IoU passes the test (``>`` thr as voc_eval.py and detectron2, ``>=`` thr
  as the MATLAB devkit):

  - best is difficult: the detection is neither TP nor FP (ignored) and the
    difficult ground truth is not consumed;
  - best is free: TP, and the ground truth is taken (per threshold);
  - best is taken: FP, even if another free ground truth also overlaps.

* Otherwise FP.

One pass computes the IoUs once and decides every threshold. The IoU is VOC's box IoU
(:mod:`deteval.geometry.pixel_boxes`) or, with ``geometry="quad"``, DOTA_devkit's: quadrilaterals
(N, 8), :func:`deteval.geometry.quads.quad_iou` on the pairs its enclosing-box pre-filter keeps. A
detection for which the filter keeps none has the devkit's ``ovmax = -inf``: an FP, ``best_gt`` -1.
"""

from __future__ import annotations

import numpy as np

from deteval.geometry.pixel_boxes import pixel_iou
from deteval.geometry.quads import devkit_prefilter, quad_iou_in, quad_work
from deteval.jit import njit, run_chunks
from deteval.matching.groups import Groups
from deteval.vocabulary import IOU_TESTS

# outcome codes, shared with the integrators' tp/fp flags
TP, FP, IGNORED = 1, 0, -1


@njit(cache=True, inline="always")
def _decide(
    d, g0, jmax, ovmax, gt_rows, gt_difficult, thrs, ge, taken, outcome, matched, best_gt, best_iou
):  # pragma: no cover
    """VOC's rule for detection ``d`` whose first-maximum IoU is ``ovmax`` at group ground truth ``jmax``."""
    if jmax < 0:
        return  # no candidate (quads): FP, best_gt -1
    best_gt[d] = gt_rows[g0 + jmax]
    best_iou[d] = ovmax
    for t in range(len(thrs)):
        if (ovmax >= thrs[t]) if ge else (ovmax > thrs[t]):
            if gt_difficult[gt_rows[g0 + jmax]]:
                outcome[t, d] = IGNORED
            elif not taken[t, jmax]:
                outcome[t, d] = TP
                matched[t, d] = gt_rows[g0 + jmax]
                taken[t, jmax] = True


# two kernels with one rule (_decide): the box kernel compiles no polygon code
@njit(cache=True, nogil=True)
def _match_boxes(
    lo, hi, gt_boxes, gt_difficult, dt_boxes, gt_rows, gt_off, dt_rows, dt_off, thrs, ge, offset,
    outcome, matched, best_gt, best_iou,
):  # pragma: no cover
    for g in range(lo, hi):
        g0, g1 = gt_off[g], gt_off[g + 1]
        d0, d1 = dt_off[g], dt_off[g + 1]
        if g1 == g0 or d1 == d0:
            continue  # no ground truth: every detection stays FP
        taken = np.zeros((len(thrs), g1 - g0), np.bool_)
        for p in range(d0, d1):
            d = dt_rows[p]
            ovmax = -np.inf
            jmax = -1
            for j in range(g1 - g0):
                ov = pixel_iou(dt_boxes[d], gt_boxes[gt_rows[g0 + j]], offset)
                if ov != ov:  # NaN (overflowing boxes): np.max is NaN and np.argmax its first index
                    ovmax = ov
                    jmax = j
                    break
                if j == 0 or ov > ovmax:  # strict: the first maximum wins (np.argmax: index 0 if all are -inf)
                    ovmax = ov
                    jmax = j
            _decide(d, g0, jmax, ovmax, gt_rows, gt_difficult, thrs, ge, taken, outcome, matched, best_gt, best_iou)


@njit(cache=True, nogil=True)
def _match_quads(
    lo, hi, gt_boxes, gt_difficult, dt_boxes, gt_rows, gt_off, dt_rows, dt_off, thrs, ge, offset,
    outcome, matched, best_gt, best_iou,
):  # pragma: no cover
    work = quad_work()
    for g in range(lo, hi):
        g0, g1 = gt_off[g], gt_off[g + 1]
        d0, d1 = dt_off[g], dt_off[g + 1]
        if g1 == g0 or d1 == d0:
            continue
        taken = np.zeros((len(thrs), g1 - g0), np.bool_)
        for p in range(d0, d1):
            d = dt_rows[p]
            ovmax = -np.inf  # the devkit's value when its pre-filter keeps no ground truth
            jmax = -1
            for j in range(g1 - g0):
                if not devkit_prefilter(dt_boxes[d], gt_boxes[gt_rows[g0 + j]]):
                    continue  # not a candidate: the devkit's polyiou never sees this pair
                ov = quad_iou_in(dt_boxes[d], gt_boxes[gt_rows[g0 + j]], work)
                if ov != ov:  # NaN (two zero-area quadrilaterals): np.max is NaN and np.argmax its first index
                    ovmax = ov
                    jmax = j
                    break
                if ov > ovmax:
                    ovmax = ov
                    jmax = j
            _decide(d, g0, jmax, ovmax, gt_rows, gt_difficult, thrs, ge, taken, outcome, matched, best_gt, best_iou)


def match_voc(
    gt_boxes: np.ndarray,
    gt_difficult: np.ndarray,
    dt_boxes: np.ndarray,
    groups: Groups,
    iou_thresholds,
    *,
    iou_test: str = "gt",
    plus_one: bool = True,
    geometry: str = "box",
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """VOC matches of every detection at every IoU threshold.

    Parameters
    ----------
    gt_boxes, dt_boxes : float64 (N, 4), ``x1 y1 x2 y2``; with ``geometry="quad"`` (N, 8), ``x1 y1 ... x4 y4``
    gt_difficult : bool (N,)
        Difficult ground truth: excluded from the positives, absorbs detections.
    groups : Groups
        From :func:`deteval.matching.groups.group_by_image_category` with
        categories and no ``max_det`` cut.
    iou_thresholds : float sequence (T,), each in (0, 1]
    iou_test : ``"gt"`` (IoU > thr: voc_eval.py, detectron2) or ``"ge"`` (IoU >= thr: devkit)
    plus_one : VOC's inclusive pixel convention in the IoU (boxes)
    geometry : ``"box"`` (VOC) or ``"quad"`` (DOTA_devkit's pre-filter and polygon IoU; module docstring)

    Returns
    -------
    outcome : int8 (T, D), indexed by detection row: 1 TP, 0 FP, -1 ignored (hit a difficult GT)
    matched : int64 (T, D): the ground-truth row a TP took, else -1
    best_gt : int64 (D,): each detection's argmax ground-truth row (-1: none in its image and class, or no
        candidate left by the quad pre-filter)
    best_iou : float64 (D,): that IoU (0 where none)
    """
    if iou_test not in IOU_TESTS:
        raise ValueError(f"iou_test must be one of {IOU_TESTS}, got {iou_test!r}")
    if geometry not in ("box", "quad"):
        raise ValueError(f"geometry must be 'box' or 'quad', got {geometry!r}")
    width = 8 if geometry == "quad" else 4
    thrs = np.ascontiguousarray(iou_thresholds, dtype=np.float64).reshape(-1)
    if len(thrs) == 0 or not np.all((thrs > 0) & (thrs <= 1)):
        raise ValueError(f"IoU thresholds must lie in (0, 1], got {thrs.tolist()}")
    gt_boxes = np.ascontiguousarray(gt_boxes, dtype=np.float64).reshape(-1, width)
    dt_boxes = np.ascontiguousarray(dt_boxes, dtype=np.float64).reshape(-1, width)
    gt_difficult = np.ascontiguousarray(gt_difficult, dtype=np.bool_)
    if len(gt_difficult) != len(gt_boxes):
        raise ValueError("gt_difficult must have one entry per ground-truth box")
    if np.any(groups.category < 0):
        raise ValueError("VOC matching needs groups by (image, category) (use_cats=True)")
    n_t, n_dt = len(thrs), len(dt_boxes)
    outcome = np.full((n_t, n_dt), FP, np.int8)
    matched = np.full((n_t, n_dt), -1, np.int64)  # ground-truth row a TP took
    best_gt = np.full(n_dt, -1, np.int64)
    best_iou = np.zeros(n_dt)
    off = groups.gt_offsets
    run_chunks(
        _match_quads if geometry == "quad" else _match_boxes, len(off) - 1, np.diff(off) * np.diff(groups.dt_offsets),
        gt_boxes, gt_difficult, dt_boxes, groups.gt_rows, off, groups.dt_rows, groups.dt_offsets,
        thrs, iou_test == "ge", 1.0 if plus_one else 0.0,
        outcome, matched, best_gt, best_iou,
    )  # fmt: skip
    return outcome, matched, best_gt, best_iou


def first_claims_win(outcome: np.ndarray, claim: np.ndarray, copy: np.ndarray, position: np.ndarray) -> None:
    """VOC's rule again for another visiting order, in place: of the detections that claim one ground truth
    in one copy of an image, the first visited is the TP and every other one an FP.

    ``outcome`` int8 (T, N) and ``claim`` int64 (T, N): the ground truth each detection claims at each threshold
    (its best one, passing the IoU test, not difficult; -1 none, whose outcome is left as it is); ``copy`` (N,):
    which copy of an image the detection belongs to (claims of different copies never meet); ``position`` (N,):
    the visiting order. A claim's set of detections does not depend on the order (a detection's best ground
    truth is taken or free, never another), only which of them comes first.
    """
    for t in range(len(outcome)):
        at = np.flatnonzero(claim[t] >= 0)
        if not len(at):
            continue
        by_claim = at[np.lexsort((position[at], claim[t, at], copy[at]))]
        c, k = copy[by_claim], claim[t, by_claim]
        first = np.ones(len(by_claim), bool)
        first[1:] = (c[1:] != c[:-1]) | (k[1:] != k[:-1])
        outcome[t, by_claim] = np.where(first, TP, FP)
