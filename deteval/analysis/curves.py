"""Precision-recall curves read from COCO's accumulated arrays (no re-evaluation).

pycocotools stores, for every IoU threshold ``t``, recall threshold ``r``,
category ``k``, area range ``a`` and detection cap ``m``:

* ``precision[t, r, k, a, m]`` -- the *interpolated* precision at recall
  ``rec_thrs[r]`` (the monotone envelope: best precision at any recall
  ``>= rec_thrs[r]``), 0 past the highest recall reached;
* ``scores[t, r, k, a, m]`` -- the score of the detection where that
  precision was read (0 past the highest recall reached).

Both are -1 for a category with no ground truth in the area range.
:func:`pr_curves` slices those arrays for one ``(t, a, m)``; values are the
stored floats, unchanged.

The raw (non-interpolated) step curve and precision / recall / F-beta against
the score threshold come from the result's per-detection outcomes
(:attr:`EvalResult.outcomes <deteval.result.EvalResult.outcomes>`), through
:mod:`deteval.analysis.operating_points`; :func:`write_pr_curves` writes both kinds.

JSON written by :func:`write_pr_curves` (``deteval --curves PATH.json``):

* COCO results: the keys of :func:`pr_curves` (``iou``, ``area``,
  ``max_dets``, ``indices``, ``recall``, ``classes``, ``mean``), unchanged;
* every result with outcomes (COCO, VOC): ``protocol``, ``beta``,
  ``score_curves`` (:meth:`ScoreCurves.to_dict
  <deteval.analysis.operating_points.ScoreCurves.to_dict>`: per class and ``micro``,
  ``vs_score`` -- ``threshold``, ``tp``, ``fp``, ``precision``, ``recall``,
  ``fbeta`` at each distinct score, descending -- and ``raw`` -- ``score``,
  ``precision``, ``recall``, ``envelope`` per ranked detection) and
  ``operating_points`` (``best``: each class's best-F-beta point with micro
  and macro; ``at_threshold``: the same at a given score threshold, when one is
  given);
* with ``max_points`` (the command line's default: 1,000; ``--curves-raw``: None), a
  ``vs_score`` or ``raw`` curve longer than that keeps at most ``max_points`` of
  its points (:func:`~deteval.analysis.operating_points.curve_points`: first, last, best
  F-beta, an even grid of ranks and of recall) and gains ``index``, their
  positions in the full curve; the values are the full curve's at those points;
* VOC results have no 101-point arrays: only ``iou``, ``area`` and the
  score-based keys are written;
* the pedestrian protocols (citypersons, crowdhuman): ``protocol`` and ``miss_rate_curves``, the miss rate
  against false positives per image per setup (:mod:`deteval.accumulation.miss_rate`).

NaN (recall and F-beta of a class without ground truth, precision where
nothing is kept) is written as ``null``. For COCO the score curves use the
detections within the largest max-dets cut, whatever ``max_dets`` selects for
the 101-point arrays.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from deteval.analysis.operating_points import default_iou
from deteval.errors import renamed_keywords
from deteval.result import CocoResult, EvalResult, jsonable


def _axes(result: EvalResult) -> dict[str, np.ndarray]:
    if not isinstance(result, CocoResult):
        raise ValueError(
            f"PR curves need COCO's accumulated arrays; this {result.protocol!r} result is a {type(result).__name__}"
        )
    return result.arrays


@renamed_keywords(iou="iou_thr")
def curve_indices(
    result: EvalResult, iou_thr: float = 0.5, area: str = "all", max_dets: int | None = None
) -> tuple[int, int, int]:
    """The ``(t, a, m)`` indices into COCO's arrays for an IoU threshold, area label and detection cap.

    ``iou_thr`` matches a threshold to within 1e-9 (``np.linspace`` gives 0.8999999999999999
    for .90); ``max_dets=None`` picks the largest cap. Anything absent raises ``ValueError``.
    """
    ax = _axes(result)
    thrs = np.asarray(ax["iou_thrs"], dtype=np.float64)
    hit = np.flatnonzero(np.isclose(thrs, float(iou_thr), rtol=0.0, atol=1e-9))
    if hit.size == 0:
        allowed = [round(float(x), 4) for x in thrs]
        raise ValueError(f"IoU {iou_thr} is not an evaluated threshold; choose one of {allowed}")
    areas = [str(x) for x in ax["area_labels"]]
    if area not in areas:
        raise ValueError(f"area {area!r} is not an evaluated area range; choose one of {areas}")
    caps = [int(x) for x in ax["max_dets"]]
    md = caps[-1] if max_dets is None else int(max_dets)
    if md not in caps:
        raise ValueError(f"max_dets {md} was not evaluated; choose one of {caps}")
    return int(hit[0]), areas.index(area), caps.index(md)


@renamed_keywords(iou="iou_thr")
def pr_curves(
    result: EvalResult, iou_thr: float = 0.5, area: str = "all", max_dets: int | None = None
) -> dict[str, Any]:
    """Per-class and class-averaged interpolated PR curves at one IoU threshold.

    Returns a dict:

    * ``iou``, ``area``, ``max_dets`` and ``indices`` (``t``, ``a``, ``m``): the slice taken;
    * ``recall``: the recall grid, ``rec_thrs`` (101 points for COCO);
    * ``classes``: one dict per category, in category order: ``category_id``,
      ``name``, ``has_gt``, ``precision`` (= ``precision[t, :, k, a, m]``),
      ``scores`` (= ``scores[t, :, k, a, m]``) and ``AP`` (their mean over the
      recall grid, as pycocotools averages; -1 without ground truth);
    * ``mean``: ``precision`` -- at each recall point the mean over the classes
      whose value is not -1 (-1 where no class has one) -- ``num_classes``
      (how many were averaged at each point) and ``AP`` (its mean over the
      recall points that have a value; equals the COCO AP at this IoU, area
      and cap).

    Arrays are float64 numpy arrays holding the stored values unchanged.
    """
    ax = _axes(result)
    t, a, m = curve_indices(result, iou_thr, area, max_dets)
    prec = np.asarray(ax["precision"])[t, :, :, a, m]  # (R, K)
    scores = np.asarray(ax["scores"])[t, :, :, a, m]
    names = {row["category_id"]: row.get("name") for row in result.per_class}
    classes = []
    for k, cid in enumerate(np.asarray(ax["cat_ids"]).tolist()):
        p = prec[:, k].copy()
        valid = p > -1
        classes.append(
            {
                "category_id": cid,
                "name": names.get(cid) or str(cid),
                "has_gt": bool(valid.any()),
                "precision": p,
                "scores": scores[:, k].copy(),
                "AP": float(np.mean(p[valid])) if valid.any() else -1.0,
            }
        )
    valid = prec > -1
    counts = valid.sum(axis=1)
    sums = np.where(valid, prec, 0.0).sum(axis=1)
    mean = np.full(prec.shape[0], -1.0)
    np.divide(sums, counts, out=mean, where=counts > 0)
    has = counts > 0
    return {
        "iou": float(np.asarray(ax["iou_thrs"])[t]),
        "area": str(np.asarray(ax["area_labels"])[a]),
        "max_dets": int(np.asarray(ax["max_dets"])[m]),
        "indices": {"t": t, "a": a, "m": m},
        "recall": np.asarray(ax["rec_thrs"], dtype=np.float64).copy(),
        "classes": classes,
        "mean": {
            "precision": mean,
            "num_classes": counts.astype(np.int64),
            "AP": float(np.mean(mean[has])) if has.any() else -1.0,
        },
    }


@renamed_keywords(iou="iou_thr")
def all_curves(
    result: EvalResult,
    iou_thr: float | None = None,
    area: str = "all",
    max_dets: int | None = None,
    beta: float = 1.0,
    score_thr: float | None = None,
    raw: bool = True,
    max_points: int | None = None,
) -> dict[str, Any]:
    """Everything :func:`write_pr_curves` writes, as a dict of numpy arrays and numbers (see the module doc).

    ``iou_thr=None`` takes :func:`default_iou` (0.5 when evaluated). ``raw=False``
    leaves out the per-detection ``raw`` curves (the bulk of the file on a large
    dataset). ``max_points`` bounds each score curve, ``raw`` and ``vs_score``, per class and
    micro (see the module doc; None: every point). Raises ``ValueError`` for a result with neither
    COCO arrays nor outcomes, an IoU / area / cap that was not evaluated, or ``max_points < 3``.
    """
    from deteval import protocols
    from deteval.analysis.operating_points import score_curves

    if hasattr(result, "threshold_curves"):  # a protocol's own fixed-threshold curves (widerface, kitti)
        return result.threshold_curves()
    if result.protocol in protocols.available():  # the pedestrian protocols: miss rate against FPPI instead
        mr = protocols.get(result.protocol).miss_rate_curves(result, max_points)
        if mr is not None:
            return mr
    iou_thr = default_iou(result) if iou_thr is None else iou_thr
    out: dict[str, Any] = {}
    if isinstance(result, CocoResult):
        out.update(pr_curves(result, iou_thr, area, max_dets))
    elif result.outcomes is None:
        _axes(result)  # raises, naming what is missing
    if result.outcomes is not None:
        sc = score_curves(result, iou_thr=iou_thr, area=area, beta=beta)
        out.setdefault("iou", sc.iou)
        out.setdefault("area", sc.area)
        ops: dict[str, Any] = {"best": sc.best_points().to_dict()}
        if score_thr is not None:
            ops["at_threshold"] = sc.points_at(score_thr).to_dict()
        curves = sc.to_dict(raw, max_points)
        out.update(protocol=result.protocol, beta=sc.beta, score_curves=curves, operating_points=ops)
    return out


@renamed_keywords(iou="iou_thr")
def write_pr_curves(
    result: EvalResult,
    path: str | Path,
    iou_thr: float | None = None,
    area: str = "all",
    max_dets: int | None = None,
    beta: float = 1.0,
    score_thr: float | None = None,
    raw: bool = True,
    max_points: int | None = None,
) -> dict[str, Any]:
    """Write :func:`all_curves` as JSON (floats at ``repr`` precision, so exact; NaN as null); returns it.

    ``iou_thr=None`` takes :func:`default_iou` (0.5 when evaluated). Works for COCO
    results (101-point arrays and score curves) and for any result with
    outcomes, e.g. VOC (score curves only). ``raw`` and ``max_points`` as in :func:`all_curves`.
    """
    curves = all_curves(result, iou_thr, area, max_dets, beta=beta, score_thr=score_thr, raw=raw, max_points=max_points)
    Path(path).write_text(json_text(curves) + "\n")
    return curves


_NUMBERS = (int, float, bool, type(None))


def json_text(obj: Any) -> str:
    """``json.dumps(jsonable(obj), indent=1)``, the same text, with lists of numbers encoded by json's C encoder.

    json's ``indent`` turns off its C encoder; a curve's numbers are most of the text.
    """
    return _indented(obj, 0)


def _indented(obj: Any, level: int) -> str:
    if isinstance(obj, dict):
        items = [json.dumps(str(k)) + ": " + _indented(v, level + 1) for k, v in obj.items()]
        return _block("{", items, "}", level)
    if isinstance(obj, np.ndarray) and obj.ndim == 1 and obj.dtype.kind in "biuf":
        return _numbers(obj.tolist(), level)
    if isinstance(obj, np.ndarray):
        return _indented(obj.tolist(), level)
    if isinstance(obj, (list, tuple)):
        if all(type(v) in _NUMBERS for v in obj):
            return _numbers(obj, level)
        return _block("[", [_indented(v, level + 1) for v in obj], "]", level)
    return json.dumps(jsonable(obj))


def _block(open_: str, items: list[str], close: str, level: int) -> str:
    """``items`` one per line, indented as json's ``indent=1`` does."""
    if not items:
        return open_ + close
    inner = "\n" + " " * (level + 1)
    return open_ + inner + ("," + inner).join(items) + "\n" + " " * level + close


def _numbers(values: list | tuple, level: int) -> str:
    """Numbers (and None) laid out as :func:`_block` does; non-finite ones ``null``, as :func:`jsonable` makes them."""
    if not values:
        return "[]"
    text = json.dumps(list(values))[1:-1]  # "1, 2.5, NaN": no number's text holds ", " or the non-finite names
    if "N" in text or "I" in text:
        text = text.replace("-Infinity", "null").replace("Infinity", "null").replace("NaN", "null")
    inner = "\n" + " " * (level + 1)
    return "[" + inner + text.replace(", ", "," + inner) + "\n" + " " * level + "]"
