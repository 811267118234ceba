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
"""

from __future__ import annotations

import numpy as np

from deteval.jit import njit


@njit(cache=True, inline="always")
def pixel_iou(d, g, offset):  # pragma: no cover - numba
    """IoU of two boxes given as length-4 arrays; 0 when the union is not positive (degenerate boxes)."""
    iw = min(d[2], g[2]) - max(d[0], g[0]) + offset
    ih = min(d[3], g[3]) - max(d[1], g[1]) + offset
    iw = max(iw, 0.0)
    ih = max(ih, 0.0)
    inter = iw * ih
    union = (d[2] - d[0] + offset) * (d[3] - d[1] + offset) + (g[2] - g[0] + offset) * (g[3] - g[1] + offset) - inter
    if union <= 0.0:
        return 0.0
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
