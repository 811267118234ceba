"""ultralytics 8.4's per-class AP, P and R (``ap_per_class``, ``compute_ap``, ``smooth`` in its metrics.py).

From every prediction's ``correct`` row (:func:`deteval.matching.yolo.match_yolo`), its float32 confidence and
class, and the labels' classes:

* predictions ranked by descending confidence (:func:`rank_by_confidence`), the classes those with labels
  (ascending); a class without predictions keeps AP, P and R 0 (and counts in the means);
* per class, ``tpc`` and ``fpc`` the running sums of its predictions' ``correct`` and ``1 - correct``,
  recall ``tpc / (n + 1e-16)``, precision ``tpc / (tpc + fpc)``;
* AP at each threshold: recall with sentinels ``[0, r..., r[-1], 1]``, precision ``[1, p..., 0, 0]``, its
  backward running maximum, then ``np.trapezoid(np.interp(np.linspace(0, 1, 101), r, p), ...)``;
* P and R: at IoU 0.5, precision and recall against confidence, ``np.interp(-x, -conf, ...)`` on 1,000 points
  ``x = np.linspace(0, 1, 1000)`` (``left`` 1 for P, 0 for R); F1 ``2pr / (p + r + 1e-16)`` averaged over the
  classes, smoothed by a box filter of 101 points (its ends padded with the first and last value), P and R
  read at its first maximum.

The arithmetic is numpy's, call for call, so the values are equal (``==``) to ultralytics'.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EPS = 1e-16
AP_X = np.linspace(0, 1, 101)  # the AP's 101 recall points
CURVE_X = np.linspace(0, 1, 1000)  # the confidence axis of the P, R and F1 curves
_TRAPEZOID = getattr(np, "trapezoid", None) or getattr(np, "trapz")  # noqa: B009 (numpy < 2 names it trapz)


def rank_by_confidence(conf: np.ndarray) -> np.ndarray:
    """int64: the predictions by descending confidence, equal confidences in input order.

    ultralytics ranks with ``np.argsort(-conf)``, whose order of equal values is numpy's and the CPU's;
    this stable order is what deteval gives them (the one place to change it).
    """
    return np.argsort(-np.asarray(conf), kind="stable")


@dataclass(frozen=True)
class YoloAP:
    """Per class with labels (``classes``, ascending): AP at each threshold, and P, R, F1 at the best mean F1."""

    classes: np.ndarray  # int64 (C,): class indices with labels
    n_labels: np.ndarray  # int64 (C,)
    ap: np.ndarray  # float64 (C, T)
    p: np.ndarray  # float64 (C,)
    r: np.ndarray  # float64 (C,)
    f1: np.ndarray  # float64 (C,)
    p_curve: np.ndarray  # float64 (C, 1000), against CURVE_X
    r_curve: np.ndarray
    f1_curve: np.ndarray
    best: int  # the index into CURVE_X where P, R and F1 are read


def smooth(y: np.ndarray, f: float = 0.05) -> np.ndarray:
    """A box filter ``round(len(y) * f * 2) // 2 + 1`` points wide (odd), ends padded with the end values."""
    nf = round(len(y) * f * 2) // 2 + 1
    pad = np.ones(nf // 2)
    return np.convolve(np.concatenate((pad * y[0], y, pad * y[-1]), 0), np.ones(nf) / nf, mode="valid")


def average_precision(recall: np.ndarray, precision: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """``(ap, envelope, recall with sentinels)`` of one class's curve at one threshold."""
    mrec = np.concatenate(([0.0], recall, [recall[-1] if len(recall) else 1.0], [1.0]))
    mpre = np.concatenate(([1.0], precision, [0.0], [0.0]))
    mpre = np.flip(np.maximum.accumulate(np.flip(mpre)))
    return _TRAPEZOID(np.interp(AP_X, mrec, mpre), AP_X), mpre, mrec


def yolo_ap_per_class(correct: np.ndarray, conf: np.ndarray, pred_cls: np.ndarray, target_cls: np.ndarray) -> YoloAP:
    """ultralytics' ``ap_per_class`` values (module docstring).

    ``correct``: bool (N, T); ``conf``: float32 (N,) (float64 holding float32 values gives the same);
    ``pred_cls``: (N,) class indices; ``target_cls``: one class index per label.
    """
    order = rank_by_confidence(conf)
    pred_cls = np.asarray(pred_cls)
    # each class's predictions in rank order, contiguous: a stable sort by class of the ranked rows
    order = order[np.argsort(pred_cls[order], kind="stable")]
    correct, conf, pred_cls = correct[order], np.asarray(conf)[order], pred_cls[order]
    classes, n_labels = np.unique(np.asarray(target_cls), return_counts=True)
    nc, n_t = len(classes), correct.shape[1]
    lo = np.searchsorted(pred_cls, classes, side="left")
    hi = np.searchsorted(pred_cls, classes, side="right")
    ap, p_curve, r_curve = np.zeros((nc, n_t)), np.zeros((nc, 1000)), np.zeros((nc, 1000))
    for ci in range(nc):
        if hi[ci] == lo[ci]:
            continue
        tp = correct[lo[ci] : hi[ci]]
        neg_conf = -conf[lo[ci] : hi[ci]]
        fpc = (1 - tp).cumsum(0)
        tpc = tp.cumsum(0)
        recall = tpc / (n_labels[ci] + EPS)
        precision = tpc / (tpc + fpc)
        r_curve[ci] = np.interp(-CURVE_X, neg_conf, recall[:, 0], left=0)
        p_curve[ci] = np.interp(-CURVE_X, neg_conf, precision[:, 0], left=1)
        for j in range(n_t):
            ap[ci, j] = average_precision(recall[:, j], precision[:, j])[0]
    f1_curve = 2 * p_curve * r_curve / (p_curve + r_curve + EPS)
    best = int(smooth(f1_curve.mean(0), 0.1).argmax()) if nc else 0
    take = (lambda a: a[:, best]) if nc else (lambda a: np.zeros(0))
    return YoloAP(
        classes=classes.astype(np.int64), n_labels=n_labels.astype(np.int64), ap=ap,
        p=take(p_curve), r=take(r_curve), f1=take(f1_curve),
        p_curve=p_curve, r_curve=r_curve, f1_curve=f1_curve, best=best,
    )  # fmt: skip


def mean_results(res: YoloAP) -> dict[str, float]:
    """ultralytics' ``Metric.mean_results()``: mean P, mean R, mAP50 and mAP50-95 (0 without classes)."""
    if not len(res.classes):
        return {"P": 0.0, "R": 0.0, "mAP50": 0.0, "mAP50-95": 0.0}
    return {
        "P": float(res.p.mean()),
        "R": float(res.r.mean()),
        "mAP50": float(res.ap[:, 0].mean()),
        "mAP50-95": float(res.ap.mean()),
    }
