"""IoU of ``x1 y1 x2 y2`` boxes in VOC's pixel convention.

VOC annotations are integer, 1-based, inclusive pixel corners: a box from
x1 to x2 covers ``x2 - x1 + 1`` pixels. The VOC devkit, py-faster-rcnn's
voc_eval.py and detectron2 all add that 1 to widths and heights (``offset=1``);
``offset=0`` gives the continuous-coordinate IoU.

The arithmetic follows the references operation by operation, so IoU values
(and therefore threshold tests at exactly 0.5) are bit-identical to theirs::

    iw = max(min(x2) - max(x1) + offset, 0);  ih = likewise
    inter = iw * ih
    union = (dw + offset) * (dh + offset) + (gw + offset) * (gh + offset) - inter
    iou = inter / union

as voc_eval.py's numpy expressions give it for every box it accepts, inverted ones (``x2 < x1``)
included: a union that goes negative gives a negative IoU (or -0.0), a union of 0 gives ``inf``
(``nan`` where the intersection is 0 too), and a NaN anywhere (``inf - inf`` of infinite
coordinates) propagates as through ``np.maximum``/``np.minimum``.
"""

from __future__ import annotations

import math

import numpy as np

from deteval.jit import njit


@njit(cache=True, inline="always")
def _np_maximum(a, b):  # pragma: no cover - numba
    """``np.maximum(a, b)``: NaN if either is (Python's ``max`` would drop a NaN second argument)."""
    if a != a or b != b:
        return a + b
    return a if a >= b else b


@njit(cache=True, inline="always")
def _np_minimum(a, b):  # pragma: no cover - numba
    """``np.minimum(a, b)``: NaN if either is."""
    if a != a or b != b:
        return a + b
    return a if a <= b else b


@njit(cache=True, inline="always")
def pixel_iou(d, g, offset):  # pragma: no cover - numba
    """IoU of two boxes given as length-4 arrays, as numpy computes ``inters / uni`` in voc_eval.py
    (module docstring): negative, ``inf`` or NaN where the boxes are inverted or degenerate."""
    # voc_eval's argument order (ground truth first): which of two equal zeros is taken is numpy's
    iw = _np_maximum(_np_minimum(g[2], d[2]) - _np_maximum(g[0], d[0]) + offset, 0.0)
    ih = _np_maximum(_np_minimum(g[3], d[3]) - _np_maximum(g[1], d[1]) + offset, 0.0)
    inter = iw * ih
    union = (d[2] - d[0] + offset) * (d[3] - d[1] + offset) + (g[2] - g[0] + offset) * (g[3] - g[1] + offset) - inter
    if union == 0.0:  # numpy's float division: +-inf, or NaN for 0 / 0 (numba's would raise)
        return math.copysign(math.inf, union) if inter > 0.0 else math.nan
    return inter / union


@njit(cache=True)
def _iou_matrix(dets, gts, offset):  # pragma: no cover - numba
    out = np.empty((dets.shape[0], gts.shape[0]))
    for i in range(dets.shape[0]):
        for j in range(gts.shape[0]):
            out[i, j] = pixel_iou(dets[i], gts[j], offset)
    return out


def iou_matrix(dets, gts, plus_one: bool = True) -> np.ndarray:
    """IoU of every detection box with every ground-truth box, float64 (D, G).

    Both inputs are ``x1 y1 x2 y2`` arrays (D, 4) and (G, 4); ``plus_one``
    selects VOC's inclusive pixel convention.
    """
    dets = np.ascontiguousarray(dets, dtype=np.float64).reshape(-1, 4)
    gts = np.ascontiguousarray(gts, dtype=np.float64).reshape(-1, 4)
    return _iou_matrix(dets, gts, 1.0 if plus_one else 0.0)
