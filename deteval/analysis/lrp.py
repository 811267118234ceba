"""Optimal LRP (Oksuz et al., "One Metric to Measure them All: Localisation Recall Precision", TPAMI 2022),
as vernier 0.5.4's ``optimal_lrp`` computes it, from one COCO matching pass.

Definitions (the paper's, eqs. 6-10; vernier's choices where the paper leaves one open)
----------------------------------------------------------------------------------------
Per class, at IoU threshold ``tau`` (``iou_thr``, 0.5) and a score threshold ``s``, the detections
with ``score >= s`` count (``N_TP`` true positives, ``N_FP`` false positives; ``N_FN`` = the
class's ground truth minus ``N_TP``)::

    LRP(s) = (sum_TP (1 - IoU) / (1 - tau) + N_FP + N_FN) / (N_TP + N_FP + N_FN)

**oLRP** is its minimum over the score thresholds, ``s*`` the class's LRP-optimal threshold, and
the components are read at ``s*`` (they decompose oLRP)::

    oLRP_Loc = sum_TP (1 - IoU) / N_TP / (1 - tau)      oLRP_FP = N_FP / (N_TP + N_FP)
    oLRP_FN  = N_FN / (N_TP + N_FN)

What vernier 0.5.4 fixes (read from its docstrings and oracle, ``vernier/_lrp.py`` and
``tests/python/oracle/lrp/oracle.py``; checked by ``tests/parity/test_lrp.py``):

* **Score thresholds**: the 101-point grid ``0, 0.01, ..., 1`` (``k / 100``), as the authors'
  code (kemaloksuz/LRP-Error); the paper minimises over every score. Ties: the *largest* ``s``,
  as the floating-point values fall: a true positive at IoU exactly ``tau`` leaves LRP unchanged
  (it adds 1 to the numerator and takes one false negative away), so two thresholds can tie in
  exact arithmetic and be told apart by the last bit of their sums.
  A score below 0 is never active; a grid point above every score leaves only false negatives.
* **Matching**: COCO's, at ``tau``, area range ``all``, ``max_dets[-1]`` per image and class:
  deteval reads the evaluation's own outcomes and the IoU of each match
  (``Outcomes.match_iou``); a detection matched to a crowd region is ignored (neither TP nor FP).
* **Classes** without ground truth have no oLRP (NaN: ``n_empty_classes``); a class with ground
  truth but no true positive at any threshold has oLRP 1, ``oLRP_FN`` 1, ``oLRP_Loc`` and ``s*``
  NaN, ``oLRP_FP`` NaN if it has false positives at ``s*`` (then the grid's largest point: none
  are left there unless scores exceed 1) else 0.
* **Means** (moLRP): oLRP and oLRP_FN over the classes with ground truth; oLRP_Loc over the
  classes with a true positive at ``s*``; oLRP_FP over the classes where it is defined, which
  takes in the classes with neither true nor false positives at ``s*`` (oLRP_FP 0), though
  vernier's docstring says "classes with at least one TP" (its numbers are followed); an empty
  mean is 0. The paper averages each component over the classes, without this case.

deteval's figures and ``s*`` equal vernier's to the bit on every input of the tests (the shared
pairs, generated boxes and masks): the same IoUs, ``1 - IoU`` summed in the same score order, and
LRP's terms added in vernier's association.

Where vernier 0.5.4 departs from the paper and from the authors' code
---------------------------------------------------------------------
The authors' implementation (kemaloksuz/LRP-Error, ``pycocotools/pycocotools/cocoeval.py``,
``accumulate``) differs from vernier in three ways, and the paper's text leaves the first open:

1. **Thresholds.** The authors minimise over every prefix of the class's score-sorted detections
   (every detection's score is a candidate, ties split: a prefix may end inside a run of equal
   scores, ``np.argmin`` taking the first, highest-score, minimum), and report that detection's
   score as ``s*``. vernier minimises over the grid ``k / 100`` only, with ties to the largest
   ``s``. vernier's oLRP is therefore never below the authors' and can be above it (by at most
   what the detections between two grid points change); its ``s*`` is a grid point.
2. **oLRP_Loc.** The authors' component is the mean ``1 - IoU`` of the true positives, without
   the ``1 / (1 - tau)`` normalisation that LRP itself applies; vernier divides by ``1 - tau``
   (its values are twice the authors' at ``tau`` = 0.5). oLRP_FP and oLRP_FN agree.
3. **The oLRP_FP mean.** The authors give a class without a true positive oLRP_FP = NaN and
   average the non-NaN values; vernier gives such a class without false positives 0 and counts it.

Matching: vernier (``parity_mode="corrected"``, its default) departs from pycocotools where
pycocotools has quirks, and deteval (``compat=True``) keeps them: a match to a ground truth of
annotation id 0 counts as a false positive in pycocotools, as a true positive in vernier; vernier
reads a ground truth's ``ignore`` flag and lets it absorb any number of detections as a crowd
region does, pycocotools overwrites the flag with ``iscrowd``. Neither occurs in the test data.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval.analysis.calibration import area_all_index, threshold_index
from deteval.result import EvalResult

__all__ = ["LrpClass", "LrpResult", "default_score_grid", "evaluate_with_ious", "optimal_lrp"]


def default_score_grid() -> np.ndarray:
    """vernier's (and the authors') 101 score thresholds, ``k / 100``."""
    return np.arange(101) / 100


@dataclass(frozen=True)
class LrpClass:
    """One class's oLRP, its components and its LRP-optimal score threshold (NaN where undefined)."""

    category_id: Any
    name: str
    olrp: float
    loc: float
    fp: float
    fn: float
    score_thr: float
    num_gt: int
    tp: int  # counts at the optimal threshold
    fp_count: int
    fn_count: int


@dataclass(frozen=True)
class LrpResult:
    """:func:`optimal_lrp`'s result: the means (moLRP and components) and one row per class."""

    olrp: float
    loc: float
    fp: float
    fn: float
    per_class: list[LrpClass]
    n_empty_classes: int
    iou_thr: float

    def to_dict(self) -> dict[str, Any]:
        def num(v: float) -> float | None:
            return None if np.isnan(v) else float(v)

        return {
            "olrp": self.olrp,
            "olrp_loc": self.loc,
            "olrp_fp": self.fp,
            "olrp_fn": self.fn,
            "iou_thr": self.iou_thr,
            "n_empty_classes": self.n_empty_classes,
            "per_class": [
                {
                    "category_id": c.category_id.item() if hasattr(c.category_id, "item") else c.category_id,
                    "name": c.name,
                    "olrp": num(c.olrp),
                    "olrp_loc": num(c.loc),
                    "olrp_fp": num(c.fp),
                    "olrp_fn": num(c.fn),
                    "score_thr": num(c.score_thr),
                    "num_gt": c.num_gt,
                    "tp": c.tp,
                    "fp": c.fp_count,
                    "fn": c.fn_count,
                }
                for c in self.per_class
            ],
        }

    def format_table(self) -> str:
        lines = [
            f"Optimal LRP (IoU={self.iou_thr:.2f}): moLRP {self.olrp:.4f}  loc {self.loc:.4f}  "
            f"FP {self.fp:.4f}  FN {self.fn:.4f}",
            f"{'class':<24} {'oLRP':>7} {'loc':>7} {'FP':>7} {'FN':>7} {'s*':>6} {'#GT':>6}",
        ]

        def f(v: float, w: int = 7, p: int = 4) -> str:
            return f"{'-':>{w}}" if np.isnan(v) else f"{v:{w}.{p}f}"

        for c in self.per_class:
            if c.num_gt == 0:
                continue
            lines.append(
                f"{c.name[:24]:<24} {f(c.olrp)} {f(c.loc)} {f(c.fp)} {f(c.fn)} {f(c.score_thr, 6, 2)} {c.num_gt:6d}"
            )
        if self.n_empty_classes:
            lines.append(f"({self.n_empty_classes} classes without ground truth left out)")
        return "\n".join(lines)


def _class_lrp(score, tp, iou, npos, scale, grid):
    """(oLRP, loc, fp, fn, s*, n_tp, n_fp, n_fn) of one class: its non-ignored detections' scores, TP flags
    and match IoUs."""
    order = np.argsort(-score, kind="stable")
    s_sorted = score[order]
    tp_cum = np.concatenate([[0], np.cumsum(tp[order])])
    loc_cum = np.concatenate([[0.0], np.cumsum(np.where(tp[order], 1.0 - iou[order], 0.0))])
    # detections with score >= g are the first n of the descending list
    n_active = np.searchsorted(-s_sorted, -grid, side="right")
    n_tp = tp_cum[n_active]
    n_fp = n_active - n_tp
    n_fn = npos - n_tp
    sum_loc = loc_cum[n_active]
    # (n_fp + n_fn) summed before the float is added, as vernier does: exact ties (see "Ties") then fall alike
    lrp = (sum_loc / scale + (n_fp + n_fn)) / (n_tp + n_fp + n_fn)
    star = len(grid) - 1 - int(np.argmin(lrp[::-1]))  # the largest threshold among equal minima
    ntp, nfp, nfn = int(n_tp[star]), int(n_fp[star]), int(n_fn[star])
    if ntp > 0:
        loc = float(sum_loc[star]) / ntp / scale
        return float(lrp[star]), loc, nfp / (ntp + nfp), nfn / (ntp + nfn), float(grid[star]), ntp, nfp, nfn
    return float(lrp[star]), np.nan, (np.nan if nfp > 0 else 0.0), 1.0, np.nan, ntp, nfp, nfn


def optimal_lrp(result: EvalResult, iou_thr: float = 0.5, score_grid: Sequence[float] | None = None) -> LrpResult:
    """Optimal LRP and its components, per class and mean, from an evaluation that kept its match IoUs.

    Parameters
    ----------
    result : EvalResult
        A ``coco`` evaluation made with ``keep_iou`` (:func:`evaluate_with_ious`, or the CLI's
        ``--lrp``): its outcomes and match IoUs are read, nothing is re-matched.
    iou_thr : float, default 0.5
        The IoU threshold ``tau`` of a true positive: one of the evaluation's thresholds.
    score_grid : sequence of floats, optional
        The score thresholds minimised over (default: ``k / 100``, ``k = 0..100``, as vernier).

    Raises
    ------
    ValueError
        A result without outcomes or match IoUs, an ``iou_thr`` the evaluation did not use or of 1.
    """
    out = result.outcomes if isinstance(result, EvalResult) else None
    if out is None or out.match_iou is None:
        raise ValueError(
            "optimal_lrp needs the IoU of every match: evaluate with deteval.analysis.lrp.evaluate_with_ious() "
            "(or the coco protocol's params with keep_iou=True)"
        )
    t = threshold_index(out.iou_thrs, iou_thr, "optimal_lrp")
    tau = float(out.iou_thrs[t])
    if not tau < 1:
        raise ValueError("optimal_lrp: the IoU threshold must be below 1 (LRP divides by 1 - tau)")
    grid = default_score_grid() if score_grid is None else np.sort(np.asarray(score_grid, np.float64))
    if grid.ndim != 1 or not len(grid) or not np.isfinite(grid).all():
        raise ValueError("optimal_lrp: score_grid must be a non-empty sequence of finite numbers")
    a = area_all_index(out)
    state = out.state[:, a, t]
    keep = state != 2
    cat = out.category[keep]
    score, tp, iou = out.score[keep], state[keep] == 1, out.match_iou[keep, t]  # kept for area range a
    by_cat = np.argsort(cat, kind="stable")
    bounds = np.searchsorted(cat[by_cat], np.arange(len(out.category_ids) + 1))
    rows, empty = [], 0
    for k in range(len(out.category_ids)):
        npos = int(out.npos[k, a])
        cid, name = out.category_ids[k], out.category_names[k]
        if npos == 0:
            empty += 1
            rows.append(LrpClass(cid, name, *([np.nan] * 5), 0, 0, 0, 0))
            continue
        sel = by_cat[bounds[k] : bounds[k + 1]]
        olrp, loc, fp, fn, s_star, ntp, nfp, nfn = _class_lrp(score[sel], tp[sel], iou[sel], npos, 1.0 - tau, grid)
        rows.append(LrpClass(cid, name, olrp, loc, fp, fn, s_star, npos, ntp, nfp, nfn))

    def mean(vals: list[float]) -> float:
        return float(sum(vals) / len(vals)) if vals else 0.0

    with_gt = [r for r in rows if r.num_gt > 0]
    return LrpResult(
        olrp=mean([r.olrp for r in with_gt]),
        loc=mean([r.loc for r in with_gt if r.tp > 0]),
        # vernier's mean is over the defined values: a class with no TP and no FP counts with oLRP_FP = 0
        fp=mean([r.fp for r in with_gt if not np.isnan(r.fp)]),
        fn=mean([r.fn for r in with_gt]),
        per_class=rows,
        n_empty_classes=empty,
        iou_thr=tau,
    )


def evaluate_with_ious(
    preds: Any, gt: Any, iou_type: str = "bbox", compat: bool = True, strict: bool = False, **options: Any
) -> EvalResult:
    """``deteval.evaluate(preds, gt, "coco", ...)`` keeping each match's IoU: the input of :func:`optimal_lrp`
    (its other figures are unchanged)."""
    from deteval import protocols

    proto = protocols.get("coco")
    params = dataclasses.replace(proto.params(iou_type, compat=compat, strict=strict, **options), keep_iou=True)
    dets, gt_loaded = proto.load(preds, gt, params)
    return proto.evaluate_loaded(dets, gt_loaded, params)
