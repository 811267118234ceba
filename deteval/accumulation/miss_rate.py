"""Miss rate against false positives per image (FPPI): the curve pedestrian papers plot, MR^-2 its summary.

The pedestrian protocols (:mod:`deteval.protocols.citypersons`, :mod:`deteval.protocols.crowdhuman`) build
the curves from their results (``Protocol.miss_rate_curves``); this module holds what they share: one
curve's dict and the thinning of a long curve to at most ``max_points`` points.

A curve has one point per ranked detection that counts (ignored ones dropped): ``fppi`` (false positives so
far / images), ``miss_rate`` (1 - recall), ``score`` (the detection's); with ``points`` (the protocol's FPPI
points), ``miss_rate_at_points`` (what the MR averages) and ``MR``. Thinned curves keep the first and last
points, the points the FPPI points read and an even grid of ranks, with ``index``: their positions in the
full curve; the values are the full curve's.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def curve(
    fppi: np.ndarray,
    miss_rate: np.ndarray,
    score: np.ndarray,
    read: np.ndarray,
    points: np.ndarray,
    at_points: np.ndarray,
    mr: float,
    max_points: int | None = None,
    **more: np.ndarray,
) -> dict[str, Any]:
    """One curve's dict (see the module doc); ``read``: the indices the points read (-1: none); ``more``:
    further per-detection arrays (CrowdHuman's ``recall``, ``precision``), thinned alike."""
    arrays = {"fppi": fppi, "miss_rate": miss_rate, "score": score, **more}
    out: dict[str, Any] = {}
    n = len(fppi)
    if max_points is not None and n > max_points:
        if max_points < 3:
            raise ValueError(f"max_points must be at least 3, got {max_points}")
        grid = np.linspace(0, n - 1, max(max_points - len(points) - 2, 2)).round().astype(np.int64)
        index = np.unique(np.concatenate([[0, n - 1], read[read >= 0], grid]))[:max_points]
        if index[-1] != n - 1:
            index[-1] = n - 1
        arrays = {k: v[index] for k, v in arrays.items()}
        out["index"] = index
    out.update(arrays)
    out.update(points=np.asarray(points, np.float64), miss_rate_at_points=np.asarray(at_points, np.float64), MR=mr)
    return out
