"""Which points of a long curve are kept when a curve file is bounded (``--curves``; ``--curves-raw`` keeps all).

A curve of a million ranked detections is a million points; a reader needs its shape. The kept points are
the curve's own (values unchanged), listed with their positions in the full curve.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def curve_points(recall: np.ndarray, best: int | None, max_points: int | None) -> np.ndarray | None:
    """The positions a curve of ``len(recall)`` points keeps when bounded to ``max_points``; None: all of them.

    Kept: the first and last points, ``best`` (the best F-beta point, when there is one), about half the
    rest on an even grid of ranks and half at the first point reaching each of an even grid of recall
    levels (the top of each step of a PR curve; ranks only where recall is undefined). Ascending,
    without repeats, at most ``max_points`` (at least 3).
    """
    if max_points is not None and (isinstance(max_points, bool) or int(max_points) < 3):
        raise ValueError(f"max_points must be at least 3 (first, last and best points), got {max_points!r}")
    n = len(recall)
    if max_points is None or n <= max_points:
        return None
    budget = max_points - 3
    by_recall = budget // 2 if not np.isnan(recall[-1]) else 0
    ranks = np.rint(np.linspace(0, n - 1, budget - by_recall)).astype(np.int64)
    levels = np.linspace(recall[0], recall[-1], by_recall) if by_recall else np.zeros(0)
    at_levels = np.minimum(np.searchsorted(recall, levels, side="left"), n - 1)
    must = [0, n - 1] if best is None else [0, n - 1, best]
    return np.unique(np.concatenate([ranks, at_levels, np.asarray(must, np.int64)]))


def kept_points(columns: dict[str, np.ndarray], keep: np.ndarray | None) -> dict[str, Any]:
    """The columns at the positions ``keep`` with ``index``: ``keep`` (None: the columns as they are)."""
    if keep is None:
        return columns
    return {**{name: values[keep] for name, values in columns.items()}, "index": keep}
