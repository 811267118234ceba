"""Paired comparison of two models on the same ground truth, by the bootstrap of :mod:`deteval.analysis.intervals`.

Both models are evaluated once (one matching pass each); replicate ``b`` resamples the images once, by
the bootstrap's rule, and re-accumulates both models on those same images. For every stat:

- ``a``, ``b``: the two models' values; ``delta = b - a``;
- ``interval``: the percentile interval of the replicates' deltas (over the replicates where both
  values are defined, not -1), at ``level``;
- ``p_value``: the two-sided bootstrap p-value of "no difference", ``min(1, 2 * min(P(delta* <= 0),
  P(delta* >= 0)))`` over those replicates' deltas ``delta*`` (a model compared with itself: every
  delta is 0, so p = 1).

Per class, the difference of each category's AP (``b - a``), sorted by its size, largest first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deteval.analysis.intervals import check_replicates, replay_of_result, stats_of_replicates
from deteval.errors import InputError
from deteval.result import EvalResult, jsonable
from deteval.text import display_width, pad, printable

__all__ = ["ComparisonResult", "compare_results"]


@dataclass
class ComparisonResult:
    """Two models' stats, their differences with bootstrap intervals and p-values, and per-class deltas."""

    names: tuple[str, ...]
    a: dict[str, float]
    b: dict[str, float]
    delta: dict[str, float]
    intervals: dict[str, tuple[float, float]]
    p_values: dict[str, float]
    per_class: list[dict[str, Any]]
    n: int
    seed: int
    level: float
    replicates_a: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, 0)))
    replicates_b: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, 0)))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the settings, one row per stat, the per-class deltas."""
        return jsonable({
            "n": self.n,
            "seed": self.seed,
            "level": self.level,
            "stats": [
                {"stat": k, "a": self.a[k], "b": self.b[k], "delta": self.delta[k], "low": self.intervals[k][0],
                 "high": self.intervals[k][1], "p_value": self.p_values[k]}
                for k in self.names
            ],
            "per_class": self.per_class,
        })  # fmt: skip

    def format_table(self, top: int = 10) -> str:
        """The stats table, then the ``top`` largest per-class AP differences."""
        pct = f"{100 * self.level:g}%"
        lines = [f"Paired bootstrap ({self.n} replicates, seed {self.seed}); delta = B - A, {pct} interval"]
        w = max([len(k) for k in self.names] + [4])
        lines.append(f"  {'stat':<{w}}  {'A':>7}  {'B':>7}  {'delta':>8}  {'low':>8}  {'high':>8}  {'p':>6}")
        for k in self.names:
            lo, hi = self.intervals[k]
            lines.append(
                f"  {k:<{w}}  {self.a[k]:7.4f}  {self.b[k]:7.4f}  {self.delta[k]:+8.4f}  {_n(lo)}  {_n(hi)}  "
                f"{self.p_values[k]:6.3f}"
            )
        if self.per_class:
            lines.append(f"Per-class AP delta (B - A), largest {min(top, len(self.per_class))}:")
            rows = self.per_class[:top]
            cw = max([display_width(printable(str(r["name"]))) for r in rows] + [5])
            lines.append(f"  {'class':<{cw}}  {'AP A':>7}  {'AP B':>7}  {'delta':>8}")
            for row in rows:
                name = pad(printable(str(row["name"])), cw)
                lines.append(f"  {name}  {row['a']:7.4f}  {row['b']:7.4f}  {row['delta']:+8.4f}")
        return "\n".join(lines)


def _n(v: float) -> str:
    return f"{v:+8.4f}" if math.isfinite(v) else f"{'nan':>8}"


def _p_value(deltas: np.ndarray) -> float:
    if len(deltas) == 0:
        return math.nan
    le, ge = np.mean(deltas <= 0), np.mean(deltas >= 0)
    return float(min(1.0, 2.0 * min(le, ge)))


def compare_results(
    result_a: EvalResult, result_b: EvalResult, n: int = 1000, seed: int = 0, level: float = 0.95
) -> ComparisonResult:
    """Compare two results of :func:`deteval.evaluate` (of a protocol that provides replay) on the same
    ground truth and parameters (module docstring)."""
    n = check_replicates(n)
    if not 0 < level < 1:
        raise InputError("level", None, f"the interval's level must lie strictly between 0 and 1, not {level!r}")
    ra, rb = replay_of_result(result_a), replay_of_result(result_b)
    same = (
        len(ra.image_ids) == len(rb.image_ids)
        and np.array_equal(ra.image_ids, rb.image_ids)
        and np.array_equal(ra.file_order, rb.file_order)
        and list(result_a.stats) == list(result_b.stats)
    )
    if not same:
        raise InputError("compare", None, "both results must come from the same ground truth and parameters")
    if len(ra.file_order) == 0:
        raise InputError("compare", None, "the ground truth has no images to resample")
    reps_a, reps_b = stats_of_replicates([result_a, result_b], n, seed)
    point_a = {**result_a.stats, **(getattr(result_a, "extra_stats", {}) or {})}
    point_b = {**result_b.stats, **(getattr(result_b, "extra_stats", {}) or {})}
    names = tuple(point_a)
    lo_q, hi_q = (1 - level) / 2, (1 + level) / 2
    intervals, p_values = {}, {}
    for i, k in enumerate(names):
        ok = (reps_a[:, i] > -1) & (reps_b[:, i] > -1)
        d = reps_b[ok, i] - reps_a[ok, i]
        intervals[k] = tuple(float(v) for v in np.quantile(d, [lo_q, hi_q])) if len(d) else (math.nan, math.nan)
        p_values[k] = _p_value(d)
    return ComparisonResult(
        names=names,
        a=point_a,
        b=point_b,
        delta={k: point_b[k] - point_a[k] for k in names},
        intervals=intervals,
        p_values=p_values,
        per_class=_per_class_deltas(result_a, result_b),
        n=int(n),
        seed=seed,
        level=level,
        replicates_a=reps_a,
        replicates_b=reps_b,
    )


def _defined(ap: float | None) -> bool:
    """A class's AP exists: not -1 (COCO, LVIS: no ground truth), not None (VOC: no positives)."""
    return ap is not None and ap > -1


def _per_class_deltas(result_a: EvalResult, result_b: EvalResult) -> list[dict[str, Any]]:
    """Each category's AP in both results and ``b - a``, largest difference first (categories without
    ground truth, AP -1 or None, left out; none where the rows are not categories: CityPersons' setups,
    CrowdHuman's JI thresholds)."""
    by_id = {row["category_id"]: row for row in result_b.per_class if "category_id" in row}
    rows = []
    for row in result_a.per_class:
        other = by_id.get(row.get("category_id"))
        if other is None or "AP" not in row or not _defined(row["AP"]) or not _defined(other["AP"]):
            continue
        rows.append({"category_id": row["category_id"], "name": row["name"], "a": row["AP"], "b": other["AP"],
                     "delta": other["AP"] - row["AP"]})  # fmt: skip
    rows.sort(key=lambda r: -abs(r["delta"]))
    return rows
