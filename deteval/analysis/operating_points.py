"""Precision, recall and F-beta against the score threshold, and the operating points they give.

Everything here is read from :attr:`EvalResult.outcomes <deteval.result.EvalResult.outcomes>`
(each evaluated detection's TP / FP / ignored state at every IoU threshold and
area range), for one IoU threshold and one area range, with no re-matching.

Conventions
-----------
* **Ignored detections are dropped** (state 2: matched to a crowd, difficult or
  out-of-range ground truth, or outside the area range), as COCO and VOC drop
  them: they count neither as TP nor as FP.
* **Ranking.** Each class's detections are ordered by descending score with a
  stable sort. For a COCO result, ties are broken by image (ascending id), then
  by the order of the rows, which is pycocotools' own order (its stable sort of
  detections concatenated image by image); for VOC results and bare
  :class:`~deteval.result.Outcomes`, ties keep the row order (VOC's input order).
  The order matters only for the raw step curve; counts at a threshold do not
  depend on it.
* **Thresholds** are the distinct scores, in descending order. Threshold ``s``
  keeps every detection with ``score >= s``, so tied scores enter together.
* ``precision = TP / (TP + FP)`` (exact, without pycocotools' ``eps``);
  ``recall = TP / npos``, **NaN when the class has no ground truth**
  (``npos == 0``), as is F-beta then; ``F = (1 + b²)·P·R / (b²·P + R)``, and 0
  where ``TP == 0`` (where ``P + R = 0``, or nothing is kept so that ``P`` is
  undefined and ``R = 0``).
* At a score threshold that keeps nothing, precision is undefined: **NaN** in
  per-class points.
* **Micro** average: counts (TP, FP, npos) pooled over every class -- classes
  without ground truth included, their detections being false positives -- and
  P, R, F computed from the pooled counts. The pooled curve ranks all classes'
  detections together.
* **Macro** average: the mean over the classes **with** ground truth
  (``npos > 0``; the others are left out) of per-class P, R and F; macro-F is the
  mean of per-class F (not the F of macro-P and macro-R). An undefined
  per-class precision (nothing kept) counts as 0 in macro-P, as scikit-learn's
  ``zero_division=0``. Its TP, FP and npos are sums over the same classes.
* For COCO the detections are those within the largest max-dets cut (the ones
  pycocotools ranks for ``maxDets[-1]``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from deteval.accumulation.cumulative import cumulative_tp_fp
from deteval.analysis.curve_sampling import curve_points, kept_points
from deteval.analysis.operating_point import OperatingPoint, OperatingPoints, macro_point
from deteval.errors import renamed_keywords
from deteval.result import CocoResult, EvalResult, Outcomes, VocResult, default_iou_index

__all__ = [
    "OperatingPoint",
    "OperatingPoints",
    "ScoreCurve",
    "ScoreCurves",
    "best_operating_points",
    "default_iou",
    "operating_points_at",
    "score_curves",
]


# --------------------------------------------------------------------------------------
# validation and selection


def _outcomes(source: EvalResult | Outcomes) -> tuple[Outcomes, bool]:
    """The outcomes, and whether ties are broken by image first (COCO's order)."""
    if isinstance(source, Outcomes):
        return source, False
    if isinstance(source, EvalResult):
        if source.outcomes is None:
            raise ValueError(
                f"this {source.protocol!r} result holds no per-detection outcomes; "
                "score-threshold curves need a protocol that records them (coco, voc07, voc10)"
            )
        return source.outcomes, isinstance(source, CocoResult)
    raise TypeError(f"expected an EvalResult or Outcomes, got {type(source).__name__}")


def _check_beta(beta: float) -> float:
    if isinstance(beta, bool) or not isinstance(beta, Real) or not math.isfinite(beta) or beta <= 0:
        raise ValueError(f"beta must be a finite number > 0, got {beta!r}")
    return float(beta)


def _check_threshold(score_thr: float) -> float:
    if isinstance(score_thr, bool) or not isinstance(score_thr, Real) or not math.isfinite(score_thr):
        raise ValueError(f"score_thr must be a finite number, got {score_thr!r}")
    return float(score_thr)


def default_iou(source: EvalResult | Outcomes) -> float:
    """0.5 when it is one of the evaluated IoU thresholds, else the first one.

    The one definition for every report (``deteval.analysis.curves`` re-exports it): a
    result's thresholds are read from its accumulated arrays when it has them
    (COCO), else from its outcomes (VOC), else from bare :class:`Outcomes`.
    """
    if isinstance(source, (CocoResult, VocResult)):
        thrs = source.iou_thrs
    else:
        thrs = _outcomes(source)[0].iou_thrs
    thrs = np.asarray(thrs, dtype=np.float64)
    return float(thrs[default_iou_index(thrs)])


def _indices(out: Outcomes, iou_thr: float | None, area: str) -> tuple[int, int]:
    thrs = np.asarray(out.iou_thrs, dtype=np.float64)
    allowed = [round(float(x), 4) for x in thrs]
    if iou_thr is None:
        t = default_iou_index(thrs)
    else:
        if isinstance(iou_thr, bool) or not isinstance(iou_thr, Real):
            raise ValueError(f"iou_thr must be a number, one of {allowed}; got {iou_thr!r}")
        hit = np.flatnonzero(np.isclose(thrs, float(iou_thr), rtol=0.0, atol=1e-9))
        if hit.size == 0:
            raise ValueError(f"IoU {iou_thr} is not an evaluated threshold; choose one of {allowed}")
        t = int(hit[0])
    areas = [str(x) for x in out.area_labels]
    if area is None:
        area = "all" if "all" in areas else areas[0]
    if area not in areas:
        raise ValueError(f"area {area!r} is not an evaluated area range; choose one of {areas}")
    return t, areas.index(area)


def _rank(category: np.ndarray, image: np.ndarray, score: np.ndarray, by_image: bool) -> tuple[np.ndarray, np.ndarray]:
    """Row orders, stable (ties keep row order): by (-score[, image]), all classes pooled, and by
    (category, -score[, image])."""
    pooled = np.arange(len(score), dtype=np.int64)
    if by_image:
        pooled = pooled[np.argsort(image, kind="stable")]
    pooled = pooled[np.argsort(-score[pooled], kind="stable")]
    ranked = category[pooled]
    if len(ranked) and 0 <= ranked.min() and ranked.max() < 2**16:
        ranked = ranked.astype(np.uint16)  # numpy's stable sort of 16-bit integers is a radix sort
    return pooled, pooled[np.argsort(ranked, kind="stable")]


# --------------------------------------------------------------------------------------
# results


def _fbeta(precision: np.ndarray, recall: np.ndarray, tp: np.ndarray, beta: float) -> np.ndarray:
    b2 = beta * beta
    with np.errstate(divide="ignore", invalid="ignore"):
        f = (1 + b2) * precision * recall / (b2 * precision + recall)
    return np.where(np.isnan(recall), np.nan, np.where(tp > 0, f, 0.0))


@dataclass(frozen=True)
class ScoreCurve:
    """One class's (or all classes pooled) counts and rates against the score threshold.

    Attributes
    ----------
    name, category_id :
        The category (``"all classes"`` / None for the pooled curve).
    npos : int
        Ground truth that can be found.
    beta : float
        The F-beta weight of :attr:`fbeta`.
    thresholds : ndarray (S,)
        Distinct scores of the non-ignored detections, descending.
    tp, fp : int64 ndarray (S,)
        Detections kept at each threshold (``score >= thresholds[i]``).
    precision, recall, fbeta : float64 ndarray (S,)
        At each threshold; ``recall`` and ``fbeta`` are NaN when ``npos == 0``.
    raw_score : ndarray (N,)
        The non-ignored detections' scores in rank order.
    raw_tp : int64 ndarray (N,)
        True positives among the first ``i + 1`` ranked detections.
    raw_precision, raw_recall : float64 ndarray (N,)
        The raw (non-interpolated) step PR curve, one point per detection in
        rank order: ``raw_tp / (i + 1)`` and ``raw_tp / npos`` (NaN without GT).
    envelope : float64 ndarray (N,)
        The interpolated precision: the running maximum of ``raw_precision``
        from the right (best precision at any rank ``>= i``).
    """

    name: str
    category_id: Any
    npos: int
    beta: float
    thresholds: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    fbeta: np.ndarray
    raw_score: np.ndarray
    raw_tp: np.ndarray
    raw_precision: np.ndarray
    raw_recall: np.ndarray
    envelope: np.ndarray

    @property
    def max_recall(self) -> float:
        """Recall with every detection kept (0 without detections, NaN without ground truth)."""
        if self.npos == 0:
            return math.nan
        return float(self.recall[-1]) if len(self.recall) else 0.0

    def best(self) -> OperatingPoint:
        """The threshold that maximises F-beta (ties: the highest such threshold).

        A curve without detections gives threshold NaN, TP = FP = 0,
        precision NaN, recall 0 and F 0. Without ground truth F is undefined
        at every threshold, so there is no best point: threshold NaN,
        TP = FP = 0, precision, recall and F NaN.
        """
        i = self._best_index()
        if i is None:
            return self._point(math.nan, 0, 0)
        return self._point(float(self.thresholds[i]), int(self.tp[i]), int(self.fp[i]))

    def _best_index(self) -> int | None:
        """The index of :meth:`best`'s threshold in :attr:`thresholds`; None when there is no best point."""
        if len(self.thresholds) == 0 or self.npos == 0:
            return None
        return int(np.argmax(self.fbeta))  # the first maximum: the highest threshold

    def at(self, score_thr: float) -> OperatingPoint:
        """Counts and rates keeping the detections with ``score >= score_thr``."""
        thr = _check_threshold(score_thr)
        kept = int(np.searchsorted(-self.raw_score, -thr, side="right"))
        tp = int(self.raw_tp[kept - 1]) if kept else 0
        return self._point(thr, tp, kept - tp)

    def _point(self, threshold: float, tp: int, fp: int) -> OperatingPoint:
        p = tp / (tp + fp) if tp + fp else math.nan
        r = tp / self.npos if self.npos else math.nan
        f = float(_fbeta(np.array([p]), np.array([r]), np.array([tp]), self.beta)[0])
        return OperatingPoint(self.name, self.category_id, threshold, self.npos, tp, fp, p, r, f, self.beta)

    def interpolated_precision(self, recall_thresholds: np.ndarray) -> np.ndarray:
        """The envelope read at each recall threshold: the first rank whose recall reaches it.

        As pycocotools reads its 101 points (``searchsorted(side='left')``):
        0 past the highest recall reached; all NaN without ground truth.
        """
        rt = np.asarray(recall_thresholds, dtype=np.float64)
        if self.npos == 0:
            return np.full(rt.shape, np.nan)
        idx = np.searchsorted(self.raw_recall, rt, side="left")
        out = np.zeros(rt.shape)
        ok = idx < len(self.envelope)
        out[ok] = self.envelope[idx[ok]]
        return out

    def to_dict(self, raw: bool = True, max_points: int | None = None) -> dict[str, Any]:
        """Plain lists: ``vs_score`` (per threshold) and, when ``raw``, ``raw`` (per ranked detection).

        ``max_points`` bounds each of the two curves (see :func:`curve_points`): a longer one keeps the
        points listed in its added ``index`` (positions in the full curve), values unchanged. None keeps
        every point, and writes no ``index``.
        """
        best = self._best_index()
        vs_score = {
            "threshold": self.thresholds,
            "tp": self.tp,
            "fp": self.fp,
            "precision": self.precision,
            "recall": self.recall,
            "fbeta": self.fbeta,
        }
        d: dict[str, Any] = {
            "name": self.name,
            "category_id": self.category_id,
            "npos": self.npos,
            "vs_score": kept_points(vs_score, curve_points(self.recall, best, max_points)),
        }
        if raw:
            # the best threshold keeps tp + fp detections: the raw curve's point at that rank
            best_rank = None if best is None else int(self.tp[best] + self.fp[best]) - 1
            columns = {
                "score": self.raw_score,
                "precision": self.raw_precision,
                "recall": self.raw_recall,
                "envelope": self.envelope,
            }
            d["raw"] = kept_points(columns, curve_points(self.raw_recall, best_rank, max_points))
        return d


def _curve(name: str, cid: Any, npos: int, score: np.ndarray, is_tp: np.ndarray, beta: float) -> ScoreCurve:
    """Curves from one class's non-ignored detections, already in rank order."""
    n = len(score)
    # every ranked detection is a point of the raw curve; tied scores enter the threshold curve at once
    raw_tp, raw_fp, _ = cumulative_tp_fp(is_tp)
    seen = raw_tp + raw_fp  # i + 1: every non-ignored detection is a TP or a FP
    raw_precision = raw_tp / seen
    raw_recall = raw_tp / npos if npos else np.full(n, np.nan)
    envelope = np.maximum.accumulate(raw_precision[::-1])[::-1] if n else np.zeros(0)
    tp, fp, last = cumulative_tp_fp(is_tp, scores=score, ties="group")
    precision = tp / (tp + fp)
    recall = tp / npos if npos else np.full(len(last), np.nan)
    return ScoreCurve(
        name=name,
        category_id=cid,
        npos=int(npos),
        beta=beta,
        thresholds=score[last].astype(np.float64),
        tp=tp,
        fp=fp,
        precision=precision,
        recall=recall,
        fbeta=_fbeta(precision, recall, tp, beta),
        raw_score=score.astype(np.float64),
        raw_tp=raw_tp,
        raw_precision=raw_precision,
        raw_recall=raw_recall,
        envelope=envelope,
    )


@dataclass(frozen=True)
class ScoreCurves:
    """Per-class and pooled score-threshold curves at one IoU threshold and area range.

    Attributes
    ----------
    iou, area, beta :
        The slice taken and the F-beta weight.
    classes : tuple of ScoreCurve
        One per category, in category order.
    micro : ScoreCurve
        All classes' detections ranked together, against the total ground truth.
    """

    iou: float
    area: str
    beta: float
    classes: tuple[ScoreCurve, ...]
    micro: ScoreCurve

    def best_points(self) -> OperatingPoints:
        """Each class's best-F-beta point, the pooled curve's best point (micro) and their macro average."""
        points = [c.best() for c in self.classes]
        micro = dataclasses.replace(self.micro.best(), name="micro")
        return OperatingPoints(
            self.iou, self.area, self.beta, None, tuple(points), micro, macro_point(points, math.nan, self.beta)
        )

    def points_at(self, score_thr: float) -> OperatingPoints:
        """Every class, micro and macro at one score threshold (``score >= score_thr`` kept)."""
        thr = _check_threshold(score_thr)
        points = [c.at(thr) for c in self.classes]
        micro = dataclasses.replace(self.micro.at(thr), name="micro")
        macro = macro_point(points, thr, self.beta)
        return OperatingPoints(self.iou, self.area, self.beta, thr, tuple(points), micro, macro)

    def to_dict(self, raw: bool = True, max_points: int | None = None) -> dict[str, Any]:
        """Plain lists; each class's and the micro curve as :meth:`ScoreCurve.to_dict` gives them."""
        return {
            "iou": self.iou,
            "area": self.area,
            "beta": self.beta,
            "classes": [c.to_dict(raw, max_points) for c in self.classes],
            "micro": self.micro.to_dict(raw, max_points),
        }


# --------------------------------------------------------------------------------------
# public functions


@renamed_keywords(iou="iou_thr")
def score_curves(
    source: EvalResult | Outcomes, iou_thr: float | None = None, area: str | None = "all", beta: float = 1.0
) -> ScoreCurves:
    """Precision, recall and F-beta against the score threshold, per class and pooled.

    Parameters
    ----------
    source : EvalResult or Outcomes
        A result that recorded its outcomes (COCO bbox/segm/keypoints, VOC),
        or the outcomes themselves.
    iou_thr : float, optional
        One of the evaluated IoU thresholds (matched within 1e-9). Default:
        0.5 when evaluated, else the first threshold.
    area : str or None, default "all"
        One of the evaluated area-range labels (VOC has only ``"all"``);
        None: ``"all"`` when evaluated, else the first label.
    beta : float, default 1.0
        Weight of recall in F-beta; must be finite and > 0.

    Returns
    -------
    ScoreCurves
        ``classes`` (one :class:`ScoreCurve` per category) and ``micro``.

    Raises
    ------
    ValueError
        For ``beta <= 0``, an IoU or area that was not evaluated (the message
        lists the evaluated ones), or a result without outcomes.

    Examples
    --------
    >>> res = deteval.evaluate("results.json", "instances_val2017.json")  # doctest: +SKIP
    >>> curves = score_curves(res, iou_thr=0.5)  # doctest: +SKIP
    >>> curves.micro.best().threshold  # doctest: +SKIP
    """
    beta = _check_beta(beta)
    out, by_image = _outcomes(source)
    t, a = _indices(out, iou_thr, area)
    state = np.asarray(out.state)[:, a, t]
    keep = state != 2
    category = np.asarray(out.category)[keep].astype(np.int64)
    image = np.asarray(out.image)[keep].astype(np.int64)
    score = np.asarray(out.score, dtype=np.float64)[keep]
    is_tp = state[keep] == 1
    n_cat = len(out.category_ids)
    npos = np.asarray(out.npos)[:, a].astype(np.int64)

    pooled, order = _rank(category, image, score, by_image)
    offsets = np.searchsorted(category[order], np.arange(n_cat + 1), side="left")
    classes = []
    for k in range(n_cat):
        rows = order[offsets[k] : offsets[k + 1]]
        cid = out.category_ids[k]
        cid = cid.item() if hasattr(cid, "item") else cid
        classes.append(_curve(out.category_names[k], cid, int(npos[k]), score[rows], is_tp[rows], beta))
    micro = _curve("all classes", None, int(npos.sum()), score[pooled], is_tp[pooled], beta)
    return ScoreCurves(float(np.asarray(out.iou_thrs)[t]), str(out.area_labels[a]), beta, tuple(classes), micro)


@renamed_keywords(iou="iou_thr")
def best_operating_points(
    source: EvalResult | Outcomes, iou_thr: float | None = None, area: str | None = "all", beta: float = 1.0
) -> OperatingPoints:
    """Per class, the score threshold that maximises F-beta, with P, R, F, TP, FP there.

    Ties in F-beta go to the highest threshold (fewest detections kept).
    ``micro`` is the best point of the pooled curve (one threshold for all
    classes); ``macro`` averages the per-class best points over the classes
    with ground truth (macro-F = mean of per-class best F). Parameters as
    :func:`score_curves`.

    Returns
    -------
    OperatingPoints
    """
    return score_curves(source, iou_thr, area, beta).best_points()


@renamed_keywords(iou="iou_thr")
def operating_points_at(
    source: EvalResult | Outcomes,
    score_thr: float,
    iou_thr: float | None = None,
    area: str | None = "all",
    beta: float = 1.0,
) -> OperatingPoints:
    """P, R, F-beta, TP and FP per class, micro and macro, keeping detections with ``score >= score_thr``.

    Parameters
    ----------
    score_thr : float
        Must be finite. A class that keeps nothing has precision NaN (0 in macro-P).
    source, iou_thr, area, beta :
        As :func:`score_curves`.

    Returns
    -------
    OperatingPoints
    """
    thr = _check_threshold(score_thr)
    return score_curves(source, iou_thr, area, beta).points_at(thr)
