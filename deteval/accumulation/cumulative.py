"""The cumulative TP/FP curve of a ranking: the one primitive every precision-recall reading starts from.

A ranking is a list of detections in rank order (best first), each a true positive, a false
positive or neither (a detection matched to a difficult or ignored ground truth: it stays a
point of the curve and moves no count). The curve's points are the running counts of true and
false positives:

* ``ties="item"`` (or ``"argsort"``, the same here: it names how the rows were ranked): every row is a point;
* ``ties="group"``: a run of equal scores enters the curve at once, so only the last row of each
  run is a point (scikit-learn's ``precision_recall_curve``; AP then does not depend on the order
  inside ties). ``-0.0`` and ``0.0`` tie; a NaN ties with nothing.

Counts are int64: exact, and converted to float64 exactly (below 2**53) wherever a caller divides,
so a caller that counted in floats before gets the same bits. Precision and recall are left to the
callers: their rules differ (COCO's ``tp / (fp + tp + eps)``, VOC's ``tp / max(tp + fp, eps)``,
tidecv's ``tp / (tp + fp)``, and recall over a positive count each defines) and the rule's
operation order is part of each reference's exact numbers.

Users: :mod:`deteval.accumulation.integrators` (every AP integrator), :mod:`deteval.analysis.operating_points` (curves
against the score threshold) and :mod:`deteval.analysis.tide` (tidecv's per-class AP). COCO's accumulation
(:mod:`deteval.accumulation.accumulate`) reads its curves in one pass over all IoU thresholds, area ranges and
max-dets caps at once, recording counts only at true positives; see that module.
"""

from __future__ import annotations

import numpy as np

from deteval.jit import njit
from deteval.vocabulary import TIE_POLICIES

__all__ = ["cumulative_counts", "cumulative_tp_fp"]


_NO_SCORES = np.zeros(0)


@njit(cache=True)
def cumulative_counts(tp, fp, scores, group_ties):  # pragma: no cover - numba
    """Running TP and FP counts (int64) at each point of the curve, and each point's row (int64).

    ``tp`` and ``fp`` are flags per row in rank order (a row with both is a true positive);
    ``group_ties`` makes only the last row of each run of equal ``scores`` a point (``scores`` is
    read only then: pass an empty array otherwise). Callable from kernels and from Python.
    """
    n = len(tp)
    tpc = np.empty(n, np.int64)
    fpc = np.empty(n, np.int64)
    rows = np.empty(n, np.int64)
    t = 0
    f = 0
    m = 0
    for i in range(n):
        if tp[i]:
            t += 1
        elif fp[i]:
            f += 1
        # a tie block becomes one point, at its last row
        if group_ties and i + 1 < n and scores[i + 1] == scores[i]:
            continue
        tpc[m] = t
        fpc[m] = f
        rows[m] = i
        m += 1
    return tpc[:m], fpc[:m], rows[:m]


def cumulative_tp_fp(
    tp: np.ndarray, fp: np.ndarray | None = None, scores: np.ndarray | None = None, ties: str = "item"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(tp_count, fp_count, rows)``: the cumulative curve of one ranking, int64 arrays, one entry per point.

    Parameters
    ----------
    tp, fp : bool arrays (N,), in rank order (best first)
        ``fp=None``: every row that is not a true positive is a false positive.
    scores : float array (N,), needed with ``ties="group"``
        In rank order; runs of equal scores are the tie blocks.
    ties : ``"item"`` (every row a point) or ``"group"`` (the last row of each tie block)

    ``rows[i]`` is the rank of the row point ``i`` was taken at. Flags are not checked beyond
    their shapes (callers validate their own inputs).
    """
    if ties not in TIE_POLICIES:
        raise ValueError(f"ties must be one of {TIE_POLICIES}, got {ties!r}")
    tp = np.ascontiguousarray(tp, dtype=np.bool_)
    fp = ~tp if fp is None else np.ascontiguousarray(fp, dtype=np.bool_)
    if fp.shape != tp.shape or tp.ndim != 1:
        raise ValueError(f"tp and fp must be one-dimensional and of one shape, got {tp.shape} and {fp.shape}")
    group = ties == "group"
    if group:
        if scores is None:
            raise ValueError("ties='group' needs the scores of the ranking")
        scores = np.ascontiguousarray(scores, dtype=np.float64)
        if scores.shape != tp.shape:
            raise ValueError(f"scores must have the shape of tp, got {scores.shape} and {tp.shape}")
    return cumulative_counts(tp, fp, scores if group else _NO_SCORES, group)
