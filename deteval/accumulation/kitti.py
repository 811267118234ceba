"""KITTI's score thresholds and AP: ``get_thresholds``, the envelope, R11 and R40 (OpenPCDet's rules).

* Thresholds (:func:`thresholds`): the candidate scores by descending value; with ``n`` counted ground
  truth and ``r`` the recall reached so far (starting at 0, growing by 1/40 at each kept score), the
  score of rank ``i`` (0-based) is kept when it is the last, or when ``(i + 2) / n - r`` is not below
  ``r - (i + 1) / n``: up to 41 thresholds, descending.
* Precision ``tp / (tp + fp)`` and recall ``tp / (tp + fn)`` at each threshold, 0 past the last of 41 slots,
  then each slot the maximum of itself and every slot after it (NaN, where ``tp + fp`` is 0, carries).
* R11 = the sum of slots 0, 4, ..., 40 (left to right) / 11 * 100; R40 = the sum of slots 1..40 / 40 * 100.
"""

from __future__ import annotations

import numpy as np

from deteval.jit import njit

__all__ = ["SLOTS", "ap_r11", "ap_r40", "envelope", "thresholds"]

SLOTS = 41


@njit(cache=True, nogil=True)
def _thresholds(desc, num_gt, out):  # pragma: no cover
    n = len(desc)
    step = 1 / (SLOTS - 1.0)
    recall = 0.0
    k = 0
    for i in range(n):
        left = (i + 1) / num_gt
        right = (i + 2) / num_gt if i < n - 1 else left
        if right - recall < recall - left and i < n - 1:
            continue
        if k == len(out):
            return -1
        out[k] = desc[i]
        k += 1
        recall += step
    return k


def thresholds(scores: np.ndarray, num_gt: int) -> np.ndarray:
    """float64, descending: the score thresholds of the candidate pass's true-positive ``scores``."""
    desc = np.sort(np.asarray(scores, np.float64))[::-1].copy()
    if len(desc) == 0:
        return desc
    out = np.empty(len(desc), np.float64)
    k = _thresholds(desc, int(num_gt), out)
    if k > SLOTS:  # more thresholds than slots: the reference fails indexing its arrays
        raise ValueError(f"{k} score thresholds, more than the {SLOTS} slots")
    return out[:k]


def envelope(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """float64 (..., 41): ``num / den`` in the first slots (0 after), each slot the max of it and all after it."""
    num, den = np.asarray(num, np.float64), np.asarray(den, np.float64)
    out = np.zeros((*num.shape[:-1], SLOTS), np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out[..., : num.shape[-1]] = num / den
    # maximum.accumulate from the right carries NaN as np.max of the tail does
    return np.maximum.accumulate(out[..., ::-1], axis=-1)[..., ::-1].copy()


def ap_r11(prec: np.ndarray) -> np.ndarray:
    """The 11-point AP in percent, summed left to right as the reference's ``get_mAP``."""
    total = 0
    for i in range(0, prec.shape[-1], 4):
        total = total + prec[..., i]
    return total / 11 * 100


def ap_r40(prec: np.ndarray) -> np.ndarray:
    """The 40-point AP in percent (slot 0 left out), summed left to right as the reference's ``get_mAP_R40``."""
    total = 0
    for i in range(1, prec.shape[-1]):
        total = total + prec[..., i]
    return total / 40 * 100
