"""Confidence calibration of a detector: expected and maximum calibration error, as hotcoco 1.3.0 defines them.

``calibration(result)`` reads the evaluation's per-detection outcomes (one matching pass: no
re-matching) and computes what hotcoco 1.3.0's ``COCOeval.calibration(n_bins, iou_threshold)``
computes (read from hotcoco's source, ``crates/hotcoco/src/eval/calibration.rs``, and checked
against the wheel on the shared pairs and generated datasets: ``tests/parity/test_calibration.py``):

* **Which detections.** Those COCO's evaluation kept (per image and category, the ``max_dets[-1]``
  highest scores), in the area range ``all`` (else the first range), at the IoU threshold
  ``iou_thr``, which must be one of the evaluation's thresholds (within 1e-9). A detection
  *ignored* there (matched to a crowd region, or area outside the range) is left out; every other
  one is *correct* when it is a true positive.
* **Scores** of the counted detections must lie in [0, 1] (hotcoco 1.3.0 raises otherwise; an
  ignored or cut detection may have any score).
* **Bins.** ``n_bins`` equal bins over [0, 1]: a detection of score ``s`` falls in bin
  ``min(int(s * n_bins), n_bins - 1)`` (truncated; a score of 1 in the last bin). Bin ``i``
  reports ``[i / n, (i + 1) / n)``, the mean score (``avg_confidence``), the fraction correct
  (``avg_accuracy``) and the count.
* **ECE** = ``sum_bins count / N * |accuracy - confidence|`` over the non-empty bins, **MCE** the
  largest such gap; both 0 when there is no detection. Per category: the ECE of the category's
  detections alone (categories with at least one counted detection), keyed by name, as hotcoco's
  Python result.

Sums run in hotcoco 1.3.0's order (images by id, then categories, then score order), so the figures are
equal to hotcoco's up to the last bit; the tests allow 1e-12 for the order of the final sums.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deteval.result import EvalResult, Outcomes

__all__ = ["Calibration", "calibration"]


@dataclass(frozen=True)
class Calibration:
    """The result of :func:`calibration`; arrays hold one entry per bin."""

    ece: float
    mce: float
    n_bins: int
    iou_thr: float
    num_detections: int
    bin_lower: np.ndarray
    bin_upper: np.ndarray
    avg_confidence: np.ndarray
    avg_accuracy: np.ndarray
    count: np.ndarray
    per_category: dict[str, float] = field(default_factory=dict)  # category name -> ECE

    def _columns(self) -> tuple[np.ndarray, ...]:
        return self.bin_lower, self.bin_upper, self.avg_confidence, self.avg_accuracy, self.count

    def to_dict(self) -> dict[str, Any]:
        """hotcoco's dict: ``ece``, ``mce``, ``bins`` (one dict per bin), ``per_category`` ..."""
        bins = [
            {
                "bin_lower": float(lo),
                "bin_upper": float(hi),
                "avg_confidence": float(c),
                "avg_accuracy": float(a),
                "count": int(n),
            }
            for lo, hi, c, a, n in zip(
                self.bin_lower, self.bin_upper, self.avg_confidence, self.avg_accuracy, self.count
            )
        ]
        return {
            "ece": self.ece,
            "mce": self.mce,
            "iou_threshold": self.iou_thr,
            "n_bins": self.n_bins,
            "num_detections": self.num_detections,
            "bins": bins,
            "per_category": dict(self.per_category),
        }

    def format_table(self, worst: int = 10) -> str:
        """The bins, then the ``worst`` categories by ECE."""
        lines = [
            f"Calibration (IoU={self.iou_thr:.2f}, {self.n_bins} bins, {self.num_detections} detections): "
            f"ECE {self.ece:.4f}  MCE {self.mce:.4f}",
            f"{'bin':>12} {'conf':>7} {'acc':>7} {'count':>8}",
        ]
        for lo, hi, c, a, n in zip(*self._columns()):
            label = f"[{lo:.2f}, {hi:.2f})"
            lines.append(f"{label:>12} {c:7.3f} {a:7.3f} {int(n):8d}" if n else f"{label:>12} {'-':>7} {'-':>7} {0:8d}")
        if self.per_category and worst:
            lines.append(f"per-category ECE (worst {min(worst, len(self.per_category))}):")
            for name, v in sorted(self.per_category.items(), key=lambda kv: -kv[1])[:worst]:
                lines.append(f"  {name:<24} {v:.4f}")
        return "\n".join(lines)


def _outcomes(result: EvalResult) -> Outcomes:
    if not isinstance(result, EvalResult) or result.outcomes is None:
        raise ValueError("calibration needs an evaluation result with per-detection outcomes (coco or lvis protocol)")
    return result.outcomes


def threshold_index(iou_thrs: np.ndarray, iou_thr: float, who: str) -> int:
    """Index of ``iou_thr`` among the evaluation's thresholds (within 1e-9, as hotcoco looks it up)."""
    hit = np.flatnonzero(np.abs(np.asarray(iou_thrs, np.float64) - float(iou_thr)) < 1e-9)
    if not hit.size:
        raise ValueError(
            f"{who}: IoU threshold {iou_thr:g} is not one of the evaluation's {np.asarray(iou_thrs).tolist()}"
        )
    return int(hit[0])


def area_all_index(out: Outcomes) -> int:
    """The area range ``all``, else the first (hotcoco's choice)."""
    return out.area_labels.index("all") if "all" in out.area_labels else 0


def _bins(score: np.ndarray, correct: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per bin: count, mean score, fraction correct (0, 0 for an empty bin); sums in the given order."""
    with np.errstate(invalid="ignore"):
        raw = score * n_bins
    # Rust's `as usize`: truncation, negative and NaN to 0, then clamped to the last bin
    idx = np.where(raw >= 1, np.minimum(np.trunc(np.where(raw >= 1, raw, 0)), n_bins - 1), 0).astype(np.int64)
    count = np.bincount(idx, minlength=n_bins)
    # bincount sums its weights sequentially, in array order: hotcoco's loop
    # (float64 even with no detection: bincount of nothing gives int64)
    conf = np.bincount(idx, weights=score, minlength=n_bins).astype(np.float64)
    acc = np.bincount(idx, weights=correct.astype(np.float64), minlength=n_bins).astype(np.float64)
    nz = count > 0
    conf[nz] /= count[nz]
    acc[nz] /= count[nz]
    return count, conf, acc


def _ece_mce(count: np.ndarray, conf: np.ndarray, acc: np.ndarray, total: int) -> tuple[float, float]:
    ece = mce = 0.0
    if total == 0:
        return ece, mce
    for n, c, a in zip(count.tolist(), conf.tolist(), acc.tolist()):
        if n > 0:
            gap = abs(a - c)
            ece += (n / total) * gap
            mce = max(mce, gap)
    return ece, mce


MAX_BINS = 100_000  # beyond any useful histogram; its per-class arrays stay a few MB


def calibration(result: EvalResult, n_bins: int = 10, iou_thr: float = 0.5) -> Calibration:
    """Expected (ECE) and maximum (MCE) calibration error of an evaluation's detections, per bin and category.

    Parameters
    ----------
    result : EvalResult
        A ``coco`` evaluation result: its ``outcomes`` are read, nothing is re-matched. (Other results
        with outcomes, e.g. ``lvis``, are read the same way; only ``coco`` is checked against hotcoco.)
    n_bins : int, default 10
        Equal-width score bins over [0, 1].
    iou_thr : float, default 0.5
        The IoU at which a detection is correct; one of the evaluation's ``iou_thrs``.

    Returns
    -------
    Calibration
        ``.ece``, ``.mce``, the per-bin arrays, ``.per_category`` (name -> ECE), ``.to_dict()``
        (hotcoco's dict), ``.format_table()``.

    Raises
    ------
    ValueError
        No outcomes in the result, ``n_bins < 1``, an ``iou_thr`` the evaluation did not use, or a
        counted detection's score outside [0, 1].
    """
    out = _outcomes(result)
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    if n_bins > MAX_BINS:
        raise ValueError(f"n_bins must be at most {MAX_BINS:,}, got {n_bins:,}")
    n_bins = int(n_bins)
    t = threshold_index(out.iou_thrs, iou_thr, "calibration")
    a = area_all_index(out)
    state = out.state[:, a, t]
    keep = np.flatnonzero(state != 2)
    # hotcoco 1.3.0 walks its per-image records image by image (by id), then category, detections by score
    if _grouped(out.image, out.category, out.score):
        order = keep
    elif _grouped(out.category, out.image, out.score):  # the coco matching's order: a stable sort by image
        order = keep[np.argsort(out.image[keep], kind="stable")]
    else:
        order = keep[np.argsort(_walk_position(out)[keep], kind="stable")]
    score, correct, cat = out.score[order], state[order] == 1, out.category[order]
    outside = ~((score >= 0) & (score <= 1))
    if outside.any():  # hotcoco 1.3.0 refuses them too: logits would all land in the end bins
        raise ValueError(
            f"calibration needs scores in [0, 1]; found {score[outside][0]!r} ({int(outside.sum())} of {len(score)} "
            "counted detections outside): apply a sigmoid or softmax first"
        )
    count, conf, acc = _bins(score, correct, n_bins)
    ece, mce = _ece_mce(count, conf, acc, len(order))
    per_category = {}
    by_cat = np.argsort(cat, kind="stable")  # each category's detections, in the walk's order
    bounds = np.searchsorted(cat[by_cat], np.arange(len(out.category_names) + 1))
    for k in range(len(out.category_names)):
        sel = by_cat[bounds[k] : bounds[k + 1]]
        if len(sel):
            c_count, c_conf, c_acc = _bins(score[sel], correct[sel], n_bins)
            per_category[out.category_names[k]] = _ece_mce(c_count, c_conf, c_acc, len(sel))[0]
    lo = np.arange(n_bins) / n_bins
    return Calibration(
        ece=float(ece),
        mce=float(mce),
        n_bins=n_bins,
        iou_thr=float(iou_thr),
        num_detections=len(order),
        bin_lower=lo,
        bin_upper=np.arange(1, n_bins + 1) / n_bins,
        avg_confidence=conf,
        avg_accuracy=acc,
        count=count,
        per_category=per_category,
    )


def _grouped(major: np.ndarray, minor: np.ndarray, score: np.ndarray) -> bool:
    """Whether rows run by ``major``, then ``minor``, then descending score (O(N), no sort)."""
    key = major.astype(np.int64) * (int(minor.max(initial=0)) + 1) + minor.astype(np.int64)
    step = np.diff(key)
    with np.errstate(invalid="ignore"):  # -inf - -inf (NaN scores): not grouped, sorted instead
        return bool((step >= 0).all() and (np.diff(score)[step == 0] <= 0).all())


def _walk_position(out: Outcomes) -> np.ndarray:
    """Each detection's place in hotcoco's walk: image, category, descending score, ties in the outcomes' order."""
    order = np.lexsort((np.arange(len(out.score)), -out.score, out.category, out.image))
    pos = np.empty(len(order), np.int64)
    pos[order] = np.arange(len(order))
    return pos
