"""A detection confusion matrix: which class the ground truth was detected as, or missed, or invented.

Convention (one matrix ``M`` of shape ``(K + 1, K + 1)``, ``K`` categories,
index ``K`` is *background*):

* **rows are ground-truth classes**, **columns are predicted classes**;
* ``M[i, j]`` (``i, j < K``): ground truth of class ``i`` matched by a detection
  predicted as class ``j`` (the diagonal: correct class);
* ``M[i, K]`` (last column): ground truth of class ``i`` that no detection
  matched (missed, a false negative);
* ``M[K, j]`` (last row): detections of class ``j`` that matched no ground truth
  (background false positives, duplicates included);
* ``M[K, K]`` is always 0.

So row ``i < K`` sums to the number of (non-crowd) ground truth of class ``i``
and column ``j < K`` to the number of detections of class ``j`` with
``score >= score_thr``.

Matching, image by image: detections with ``score >= score_thr`` are taken in
descending score order (a stable sort: ties keep input order); each is matched
to the unmatched ground truth with the highest IoU among those with
``IoU >= iou_thr``, **whatever the classes** (ties in IoU: the first ground
truth in file order). A detection without such a ground truth is a background
false positive, so a second detection of an already matched object (a
duplicate) lands in the last row.

Crowd ground truth (``iscrowd=1``) is left out entirely: it is neither a row
(never "missed") nor a match target, so a detection on a crowd region is a
background false positive. The ``ignore`` and ``difficult`` flags are not used.

Only boxes are supported (``iou_type="bbox"``); IoU is COCO's box IoU
(:func:`deteval.geometry.boxes.iou_xywh`, no +1 pixel). ``xyxy`` containers
(VOC) are converted to ``xywh`` first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from deteval.geometry.boxes import iou_xywh
from deteval.jit import njit
from deteval.types import Detections, GroundTruth

__all__ = ["ConfusionMatrix", "confusion_matrix", "parse_confusion_spec"]

BACKGROUND = "background"


@njit(cache=True)
def _confusion_kernel(dt_off, dt_boxes, dt_cat, gt_off, gt_boxes, gt_cat, iou_thr, n_cat):  # pragma: no cover
    m = np.zeros((n_cat + 1, n_cat + 1), np.int64)
    matched = np.zeros(gt_boxes.shape[0], np.bool_)
    for img in range(len(dt_off) - 1):
        g0, g1 = gt_off[img], gt_off[img + 1]
        for d in range(dt_off[img], dt_off[img + 1]):
            db = dt_boxes[d]
            best, best_iou = -1, -1.0
            for g in range(g0, g1):
                if matched[g]:
                    continue
                gb = gt_boxes[g]
                iou = iou_xywh(db[0], db[1], db[2], db[3], gb[0], gb[1], gb[2], gb[3], False)
                if iou >= iou_thr and iou > best_iou:
                    best, best_iou = g, iou
            if best >= 0:
                matched[best] = True
                m[gt_cat[best], dt_cat[d]] += 1
            else:
                m[n_cat, dt_cat[d]] += 1
        for g in range(g0, g1):
            if not matched[g]:
                m[gt_cat[g], n_cat] += 1
    return m


@dataclass(frozen=True)
class ConfusionMatrix:
    """A ``(K + 1) x (K + 1)`` detection confusion matrix (see the module doc for the convention).

    Attributes
    ----------
    matrix : int64 ndarray (K + 1, K + 1)
        Rows: ground-truth class, then *background* (unmatched detections).
        Columns: predicted class, then *background* (missed ground truth).
    labels : tuple of str
        The K category names, then ``"background"``.
    category_ids : ndarray (K,)
        The user's category ids.
    iou_thr, score_thr : float
        The matching IoU and the score cut.
    """

    matrix: np.ndarray
    labels: tuple[str, ...]
    category_ids: np.ndarray
    iou_thr: float
    score_thr: float

    @property
    def num_gt(self) -> np.ndarray:
        """Non-crowd ground truth per class (row sums), int64 (K,)."""
        return self.matrix[:-1].sum(axis=1)

    @property
    def num_det(self) -> np.ndarray:
        """Detections kept per class (column sums), int64 (K,)."""
        return self.matrix[:, :-1].sum(axis=0)

    def normalized(self, by: str = "row") -> np.ndarray:
        """The matrix as fractions: ``by="row"`` (of each class's ground truth; the background row
        of all unmatched detections) or ``by="col"`` (of each class's detections; the background
        column of all missed ground truth). Empty rows or columns give 0."""
        if by not in ("row", "col"):
            raise ValueError(f"by must be 'row' or 'col', got {by!r}")
        m = self.matrix.astype(np.float64)
        totals = m.sum(axis=1, keepdims=True) if by == "row" else m.sum(axis=0, keepdims=True)
        return np.divide(m, totals, out=np.zeros_like(m), where=totals > 0)

    def present(self) -> np.ndarray:
        """Indices of the classes with any ground truth or detection (non-zero row or column)."""
        used = (self.matrix[:-1].sum(axis=1) > 0) | (self.matrix[:, :-1].sum(axis=0) > 0)
        return np.flatnonzero(used)

    def format_table(self, normalize: str | None = None, hide_empty: bool = True, width: int = 10) -> str:
        """An aligned text table: a row per ground-truth class, a column per predicted class, background last.

        ``normalize`` is None (counts), ``"row"`` or ``"col"`` (fractions, 2
        decimals, see :meth:`normalized`); ``hide_empty`` leaves out classes
        with neither ground truth nor detections; column headers are names cut
        to ``width`` characters.
        """
        keep = [*(self.present() if hide_empty else range(len(self.labels) - 1)), len(self.labels) - 1]
        values = self.matrix if normalize is None else self.normalized(normalize)
        sub = values[np.ix_(keep, keep)]
        names = [self.labels[i] for i in keep]
        head = ["gt \\ pred"] + [n[:width] for n in names]
        body = [[names[r]] + [f"{v:d}" if normalize is None else f"{v:.2f}" for v in sub[r]] for r in range(len(keep))]
        w0 = max(len(r[0]) for r in [head, *body])
        wn = max([len(h) for h in head[1:]] + [len(c) for r in body for c in r[1:]])
        fmt = lambda row: "  ".join([row[0].ljust(w0), *(c.rjust(wn) for c in row[1:])])  # noqa: E731
        title = (
            f"Confusion matrix: rows = ground-truth class, columns = predicted class "
            f"(IoU >= {self.iou_thr:g}, score >= {self.score_thr:g}"
            + (f", normalised by {normalize}" if normalize else "")
            + "); last row: unmatched detections, last column: missed ground truth"
        )
        return "\n".join([title, fmt(head), *(fmt(r) for r in body)])

    def format_summary(self, top: int = 15) -> str:
        """Per class: ground truth found with the right class, with another class, missed; background
        false positives; then the ``top`` most frequent off-diagonal confusions."""
        k = len(self.labels) - 1
        m = self.matrix
        rows = [("class", "gt", "correct", "other cls", "missed", "dets", "bg FP")]
        for i in self.present():
            rows.append((self.labels[i], str(m[i, :k].sum() + m[i, k]), str(m[i, i]),
                         str(m[i, :k].sum() - m[i, i]), str(m[i, k]), str(m[:, i].sum()), str(m[k, i])))  # fmt: skip
        widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
        lines = [
            f"Confusion summary (IoU >= {self.iou_thr:g}, score >= {self.score_thr:g}; class-agnostic matching)",
            *("  ".join(v.ljust(w) if c == 0 else v.rjust(w) for c, (v, w) in enumerate(zip(r, widths))) for r in rows),
        ]
        off = m[:k, :k].copy()
        np.fill_diagonal(off, 0)
        flat = np.argsort(-off, axis=None, kind="stable")[:top]
        pairs = [(int(v // k), int(v % k)) for v in flat if off.flat[v] > 0]
        if pairs:
            lines.append("most frequent confusions (ground truth -> predicted):")
            lines += [f"  {self.labels[i]} -> {self.labels[j]}: {off[i, j]}" for i, j in pairs]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``labels``, ``category_ids``, ``matrix`` (nested lists), thresholds and the convention."""
        return {
            "convention": "rows: ground-truth class then background (unmatched detections); "
            "columns: predicted class then background (missed ground truth)",
            "iou_thr": self.iou_thr,
            "score_thr": self.score_thr,
            "labels": list(self.labels),
            "category_ids": [v.item() if hasattr(v, "item") else v for v in self.category_ids],
            "matrix": self.matrix.tolist(),
        }


def _xywh(boxes: np.ndarray, box_format: str) -> np.ndarray:
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    if box_format == "xywh":
        return np.ascontiguousarray(b)
    return np.ascontiguousarray(np.stack([b[:, 0], b[:, 1], b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], axis=1))


def _check_number(name: str, v: Any, lo: float, hi: float, lo_open: bool) -> float:
    if isinstance(v, bool) or not isinstance(v, Real) or not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v!r}")
    v = float(v)
    if v < lo or (lo_open and v == lo) or v > hi:
        raise ValueError(f"{name} must lie in {'(' if lo_open else '['}{lo:g}, {hi:g}], got {v!r}")
    return v


def confusion_matrix(
    dets: Detections,
    gt: GroundTruth,
    iou_thr: float = 0.5,
    score_thr: float = 0.25,
    iou_type: str = "bbox",
) -> ConfusionMatrix:
    """Count, image by image, which class each ground truth was detected as (see the module doc).

    Parameters
    ----------
    dets : Detections
        Loaded detections (e.g. from :func:`deteval.io.coco.load_coco_pair`),
        indexed against ``gt``'s image and category tables.
    gt : GroundTruth
        Loaded ground truth. Crowd annotations are left out.
    iou_thr : float, default 0.5
        A detection matches a ground truth with ``IoU >= iou_thr``; in (0, 1].
    score_thr : float, default 0.25
        Detections with ``score >= score_thr`` are kept; finite.
    iou_type : {"bbox"}
        Only boxes are supported; anything else raises ``ValueError``.

    Returns
    -------
    ConfusionMatrix
        Rows = ground-truth class (+ background row: unmatched detections);
        columns = predicted class (+ background column: missed ground truth).

    Examples
    --------
    >>> dets, gt = deteval.io.coco.load_coco_pair("results.json", "instances_val2017.json")  # doctest: +SKIP
    >>> cm = confusion_matrix(dets, gt, iou_thr=0.5, score_thr=0.25)  # doctest: +SKIP
    >>> print(cm.format_table())  # doctest: +SKIP
    """
    if iou_type != "bbox":
        raise ValueError(f"the confusion matrix compares boxes only (iou_type='bbox'), not iou_type={iou_type!r}")
    if not isinstance(dets, Detections) or not isinstance(gt, GroundTruth):
        raise TypeError(
            f"expected Detections and GroundTruth (load them with deteval.io.coco.load_coco_pair), "
            f"got {type(dets).__name__} and {type(gt).__name__}"
        )
    if "quad" in (dets.box_format, gt.box_format):  # DOTA's quadrilaterals: no axis-aligned box IoU applies
        raise ValueError("the confusion matrix compares axis-aligned boxes, not quadrilaterals (box_format 'quad')")
    iou_thr = _check_number("iou_thr", iou_thr, 0.0, 1.0, lo_open=True)
    score_thr = _check_number("score_thr", score_thr, -math.inf, math.inf, lo_open=False)
    n_cat, n_img = len(gt.categories), len(gt.images)
    if len(dets) and (
        dets.image.min() < 0 or dets.image.max() >= n_img or dets.category.min() < 0 or dets.category.max() >= n_cat
    ):
        raise ValueError("detections index images or categories outside the ground truth's tables")

    keep = np.flatnonzero(np.asarray(dets.score, np.float64) >= score_thr)
    order = keep[np.argsort(-np.asarray(dets.score, np.float64)[keep], kind="stable")]
    order = order[np.argsort(dets.image[order], kind="stable")]
    d_img = dets.image[order].astype(np.int64)
    dt_off = np.searchsorted(d_img, np.arange(n_img + 1), side="left").astype(np.int64)

    g_rows = np.flatnonzero(~np.asarray(gt.crowd, bool))
    g_rows = g_rows[np.argsort(gt.image[g_rows], kind="stable")]
    gt_off = np.searchsorted(gt.image[g_rows].astype(np.int64), np.arange(n_img + 1), side="left").astype(np.int64)

    matrix = _confusion_kernel(
        dt_off,
        _xywh(dets.boxes, dets.box_format)[order],
        dets.category[order].astype(np.int64),
        gt_off,
        _xywh(gt.boxes, gt.box_format)[g_rows],
        gt.category[g_rows].astype(np.int64),
        iou_thr,
        n_cat,
    )
    labels = tuple(gt.categories.name_of(k) for k in range(n_cat)) + (BACKGROUND,)
    return ConfusionMatrix(matrix, labels, np.asarray(gt.categories.ids), iou_thr, score_thr)


def parse_confusion_spec(spec: str) -> tuple[float, float]:
    """``"IOU:SCORE"``, ``"IOU"`` or ``":SCORE"`` -> ``(iou_thr, score_thr)``, defaults 0.5 and 0.25.

    Raises ``ValueError`` for anything else.
    """
    parts = str(spec).split(":")
    if len(parts) > 2:
        raise ValueError(f"expected IOU:SCORE (e.g. 0.5:0.25), got {spec!r}")
    try:
        iou = float(parts[0]) if parts[0] else 0.5
        score = float(parts[1]) if len(parts) == 2 and parts[1] else 0.25
    except ValueError:
        raise ValueError(f"expected IOU:SCORE of numbers (e.g. 0.5:0.25), got {spec!r}") from None
    _check_number("IoU", iou, 0.0, 1.0, lo_open=True)
    _check_number("score", score, -math.inf, math.inf, lo_open=False)
    return iou, score
