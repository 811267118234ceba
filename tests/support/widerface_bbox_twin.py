"""A numpy twin of WiderFace-Evaluation's Cython ``bbox_overlaps`` (``box_overlaps.pyx``), for the tests.

The same double operations in the same order on each pair: ``iw = min(b2, q2) - max(b0, q0) + 1``, then
``ih``, then ``ua = (b2 - b0 + 1) * (b3 - b1 + 1) + box_area - iw * ih`` and ``iw * ih / ua`` where both
are positive, 0 elsewhere; a zero union raises ZeroDivisionError as the Cython (cdivision off) does.
``tests/parity/test_widerface_box_overlaps.py`` shows it bit-identical to the compiled module.
"""

from __future__ import annotations

import numpy as np


def _pymin(a, b):  # Python's min(a, b): b only if strictly below a
    return np.where(b < a, b, a)


def _pymax(a, b):
    return np.where(b > a, b, a)


def bbox_overlaps(boxes: np.ndarray, query_boxes: np.ndarray) -> np.ndarray:
    boxes = np.asarray(boxes, np.float64)
    query_boxes = np.asarray(query_boxes, np.float64)
    if boxes.ndim != 2 or query_boxes.ndim != 2:
        raise ValueError("Buffer has wrong number of dimensions")
    b0, b1, b2, b3 = (boxes[:, i : i + 1] for i in range(4))
    q0, q1, q2, q3 = (query_boxes[None, :, i] for i in range(4))
    box_area = (q2 - q0 + 1) * (q3 - q1 + 1)
    iw = _pymin(b2, q2) - _pymax(b0, q0) + 1
    ih = _pymin(b3, q3) - _pymax(b1, q1) + 1
    both = (iw > 0) & (ih > 0)
    with np.errstate(all="ignore"):
        ua = (b2 - b0 + 1) * (b3 - b1 + 1) + box_area - iw * ih
        if np.any(both & (ua == 0)):
            raise ZeroDivisionError("float division")
        out = np.where(both, iw * ih / np.where(both, ua, 1.0), 0.0)
    return np.ascontiguousarray(out, np.float64)
