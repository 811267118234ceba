"""One operating point (counts and rates at one score threshold), and a set of them: per class, micro and macro.

What :mod:`deteval.analysis.operating_points` reads off the score curves, and the table the CLI prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class OperatingPoint:
    """Counts and rates at one score threshold, for one class or an average.

    Attributes
    ----------
    name : str
        Category name, or ``"micro"`` / ``"macro"``.
    category_id : int, str or None
        The user's category id; None for averages.
    threshold : float
        Detections with ``score >= threshold`` are kept. NaN where there is no
        single threshold (a class without detections at its best point; the
        macro average of per-class best points).
    npos : int
        Ground truth that can be found (for averages: summed).
    tp, fp : int
        True and false positives kept (for averages: summed).
    precision, recall, fbeta : float
        As the module documents; NaN where undefined.
    beta : float
        The F-beta weight.
    """

    name: str
    category_id: Any
    threshold: float
    npos: int
    tp: int
    fp: int
    precision: float
    recall: float
    fbeta: float
    beta: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN stays NaN here; :func:`deteval.result.jsonable` writes it as null)."""
        return {
            "name": self.name,
            "category_id": self.category_id,
            "threshold": self.threshold,
            "npos": self.npos,
            "tp": self.tp,
            "fp": self.fp,
            "precision": self.precision,
            "recall": self.recall,
            "fbeta": self.fbeta,
        }


@dataclass(frozen=True)
class OperatingPoints:
    """Per-class operating points and their micro and macro averages.

    Attributes
    ----------
    iou, area, beta :
        The slice of the outcomes and the F-beta weight.
    threshold : float or None
        The user's score threshold; None for best-F-beta points (one threshold per class).
    classes : tuple of OperatingPoint
        One per category, in category order.
    micro, macro : OperatingPoint
        As the module documents. At best-F-beta points, ``micro`` is the
        pooled curve's own best point (one shared threshold) and ``macro``
        averages the per-class best points (threshold NaN).
    """

    iou: float
    area: str
    beta: float
    threshold: float | None
    classes: tuple[OperatingPoint, ...]
    micro: OperatingPoint
    macro: OperatingPoint

    @property
    def f_name(self) -> str:
        """``"F1"``, ``"F2"``, ``"F0.5"`` ...: the column name of F-beta."""
        return f"F{self.beta:g}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "iou": self.iou,
            "area": self.area,
            "beta": self.beta,
            "threshold": self.threshold,
            "classes": [c.to_dict() for c in self.classes],
            "micro": self.micro.to_dict(),
            "macro": self.macro.to_dict(),
        }

    def format_table(self, only_with_gt: bool = False) -> str:
        """An aligned text table: one row per class, then micro and macro.

        Rates with 3 decimals, ``-`` where undefined. ``only_with_gt`` leaves
        out the classes without ground truth.
        """
        rows = [c for c in self.classes if c.npos > 0 or not only_with_gt]
        head = ["class", "thr", "npos", "TP", "FP", "P", "R", self.f_name]

        def num(v: float) -> str:
            return "-" if v is None or math.isnan(v) else f"{v:.3f}"

        def line(p: OperatingPoint) -> list[str]:
            return [p.name, num(p.threshold), str(p.npos), str(p.tp), str(p.fp),
                    num(p.precision), num(p.recall), num(p.fbeta)]  # fmt: skip

        cells = [line(p) for p in rows]
        tail = [line(self.micro), line(self.macro)]
        widths = [max(len(h), *(len(r[i]) for r in cells + tail)) for i, h in enumerate(head)]

        def fmt(values: list[str]) -> str:
            return "  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths)))

        rule = fmt(["-" * w for w in widths])
        return "\n".join([fmt(head), rule, *(fmt(r) for r in cells), rule, *(fmt(r) for r in tail)])


def macro_point(points: list[OperatingPoint], threshold: float, beta: float) -> OperatingPoint:
    with_gt = [p for p in points if p.npos > 0]
    if not with_gt:
        return OperatingPoint("macro", None, threshold, 0, 0, 0, math.nan, math.nan, math.nan, beta)
    prec = [0.0 if math.isnan(p.precision) else p.precision for p in with_gt]
    return OperatingPoint(
        "macro",
        None,
        threshold,
        sum(p.npos for p in with_gt),
        sum(p.tp for p in with_gt),
        sum(p.fp for p in with_gt),
        float(np.mean(prec)),
        float(np.mean([p.recall for p in with_gt])),
        float(np.mean([p.fbeta for p in with_gt])),
        beta,
    )


