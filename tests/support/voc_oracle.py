"""An independent VOC oracle: py-faster-rcnn's ``voc_eval.py`` rules (docs/protocols.md, "VOC matching"), written
plainly over Python lists, for the tests that need VOC numbers on generated or resampled data.

The rules, per class: the positives are its non-difficult ground truth; detections are sorted by
descending score as voc_eval.py sorts them, ``np.argsort(-confidence)`` over the class's rows in file
order, with the order of equal scores numpy < 1.25 gave (``ties="argsort"``: numpy itself where it is older
than 1.25, else deteval's emulation, which tests/unit/matching/test_argsort_classic.py holds to numpy
1.24's permutations), or stably (``ties="item"``: ties keep file order); each detection takes its
first-maximum-IoU ground truth in its image (+1 pixel, IoU > thr): difficult -> neither TP nor FP, free ->
TP (taken), taken -> FP; below the threshold (or no ground truth) -> FP. Precision is
``tp / max(tp + fp, eps)`` (detectron2's guard); AP is the 11-point or all-point rule; mAP is the mean over
the classes with positives. It shares no code with deteval but the emulated sort; its numbers are checked
against the stored voc_eval reference on voc100 (tests/parity/test_bootstrap_voc.py).
"""

from __future__ import annotations

import numpy as np

EPS = float(np.finfo(np.float64).eps)


def _iou(d, g, off):
    iw = max(min(d[2], g[2]) - max(d[0], g[0]) + off, 0.0)
    ih = max(min(d[3], g[3]) - max(d[1], g[1]) + off, 0.0)
    inter = iw * ih
    union = (d[2] - d[0] + off) * (d[3] - d[1] + off) + (g[2] - g[0] + off) * (g[3] - g[1] + off) - inter
    return inter / union


def _ap(rec: np.ndarray, prec: np.ndarray, use_07: bool) -> float:
    if use_07:
        ap = 0.0
        for t in np.arange(0.0, 1.1, 0.1):
            p = np.max(prec[rec >= t]) if np.sum(rec >= t) else 0.0
            ap = ap + p / 11.0
        return ap
    mrec = np.concatenate(([0.0], rec, [1.0]))
    mpre = np.concatenate(([0.0], prec, [0.0]))
    for i in range(len(mpre) - 1, 0, -1):
        mpre[i - 1] = max(mpre[i - 1], mpre[i])
    i = np.where(mrec[1:] != mrec[:-1])[0]
    return float(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1]))


NUMPY_CLASSIC = tuple(int(p) for p in np.__version__.split(".")[:2]) < (1, 25)


def argsort_desc(scores: list[float]) -> list[int]:
    """``np.argsort(-np.array(scores))`` as numpy < 1.25 computed it."""
    keys = -np.array(scores, dtype=np.float64)
    if NUMPY_CLASSIC:
        return np.argsort(keys).tolist()
    from deteval.matching.argsort_classic import classic_argsort

    return classic_argsort(keys).tolist()


def class_ap(gts, dets, cls, thr: float, use_07: bool, plus_one: bool = True, ties: str = "argsort"):
    """AP of class ``cls`` (None without positives). ``gts``: (image, class, box, difficult) rows;
    ``dets``: (image, class, score, box) rows in file order; boxes ``x1 y1 x2 y2``; ``ties``: ``"argsort"``
    (voc_eval.py's order) or ``"item"`` (stable)."""
    off = 1.0 if plus_one else 0.0
    by_image: dict = {}
    for im, c, box, diff in gts:
        if c == cls:
            by_image.setdefault(im, []).append([box, diff, False])
    npos = sum(1 for im, c, _, diff in gts if c == cls and not diff)
    if npos == 0:
        return None
    mine = [d for d in dets if d[1] == cls]
    if ties == "argsort":
        mine = [mine[i] for i in argsort_desc([d[2] for d in mine])]
    else:
        mine = sorted(mine, key=lambda d: -d[2])  # Python's sort is stable
    tp, fp = np.zeros(len(mine)), np.zeros(len(mine))
    for k, (im, _, _, box) in enumerate(mine):
        objs = by_image.get(im, [])
        ovmax, jmax = -np.inf, -1
        for j, (g, _, _) in enumerate(objs):
            ov = _iou(box, g, off)
            if ov > ovmax:
                ovmax, jmax = ov, j
        if jmax >= 0 and ovmax > thr:
            if objs[jmax][1]:
                continue  # difficult: neither
            if not objs[jmax][2]:
                tp[k] = 1.0
                objs[jmax][2] = True
            else:
                fp[k] = 1.0
        else:
            fp[k] = 1.0
    tp, fp = np.cumsum(tp), np.cumsum(fp)
    rec = tp / float(npos)
    prec = tp / np.maximum(tp + fp, EPS)
    return _ap(rec, prec, use_07)


def mean_ap(gts, dets, n_cls: int, thr: float, use_07: bool, plus_one: bool = True, ties: str = "argsort") -> float:
    """mAP over the classes with positives (-1 when none has any)."""
    aps = [class_ap(gts, dets, c, thr, use_07, plus_one, ties) for c in range(n_cls)]
    aps = [a for a in aps if a is not None]
    return float(np.mean(aps)) if aps else -1.0
