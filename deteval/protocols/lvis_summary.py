"""lvis-api 0.5.3's results (``LVISEval.results``), its printed summary and deteval's per-class rows.

Each stat is lvis-api's ``_summarize``: the mean of the valid (> -1) entries of the selected part of
``precision[T,R,K,A]`` or ``recall[T,K,A]``, -1 if none; the selection is taken with the same numpy
indexing, so the entries are summed in the same order (the same float). APr/APc/APf select the
categories of each frequency; AP50/AP75 find their threshold by exact float equality.
"""

from __future__ import annotations

import numpy as np

from deteval.numeric import mean_valid
from deteval.types import IdTable

__all__ = ["STAT_NAMES", "lvis_stats", "per_class_rows", "summary_lines"]

# (name, is_ap, iou, area label, frequency index) in LVISEval.results order, for max_dets 300
_SPECS = (
    ("AP", True, None, "all", None),
    ("AP50", True, 0.5, "all", None),
    ("AP75", True, 0.75, "all", None),
    ("APs", True, None, "small", None),
    ("APm", True, None, "medium", None),
    ("APl", True, None, "large", None),
    ("APr", True, None, "all", 0),
    ("APc", True, None, "all", 1),
    ("APf", True, None, "all", 2),
    ("AR", False, None, "all", None),
    ("ARs", False, None, "small", None),
    ("ARm", False, None, "medium", None),
    ("ARl", False, None, "large", None),
)
STAT_NAMES = tuple(name if is_ap else f"{name}@300" for name, is_ap, *_ in _SPECS)


def _select(arr: np.ndarray, iou_thrs: np.ndarray, area_labels, iou, area, cats) -> np.ndarray:
    if iou is not None:
        arr = arr[np.where(iou == iou_thrs)[0]]
    a = [i for i, label in enumerate(area_labels) if label == area]
    if arr.ndim == 4:  # precision T,R,K,A
        return arr[:, :, :, a] if cats is None else arr[:, :, cats, a]
    return arr[:, :, a]  # recall T,K,A: lvis-api reads every category


def lvis_stats(
    precision: np.ndarray, recall: np.ndarray, frequency: np.ndarray, iou_thrs: np.ndarray, area_labels, max_dets: str
) -> dict[str, float]:
    """``LVISEval.results``: AP, AP50, AP75, APs, APm, APl, APr, APc, APf, AR@N, ARs@N, ARm@N, ARl@N.

    ``precision`` is (T, R, K, A), ``recall`` (T, K, A); ``frequency`` (K,) indexes r/c/f. ``max_dets``
    names the AR stats: ``"300"``, or the 2021 branch's ``"10000/cat"``.
    """
    out = {}
    for name, is_ap, iou, area, group in _SPECS:
        cats = None if group is None else list(np.flatnonzero(frequency == group))
        key = name if is_ap else f"{name}@{max_dets}"
        out[key] = mean_valid(_select(precision if is_ap else recall, iou_thrs, area_labels, iou, area, cats))
    return out


def summary_lines(
    stats: dict[str, float], iou_thrs: np.ndarray, max_dets: int, max_dets_per_cat: int = -1
) -> list[str]:
    """``LVISEval.print_results``: one line per stat, in its layout (the 2021 branch's for a cut per category)."""
    if max_dets_per_cat < 0:
        shown = f"{max_dets:>3d}"
    elif max_dets < 0:
        shown = f"{max_dets_per_cat}/cat"
    else:
        shown = f"{max_dets}/im,{max_dets_per_cat}/cat"
    lines = []
    for key, value in stats.items():
        title, kind = ("Average Precision", "(AP)") if "AP" in key else ("Average Recall", "(AR)")
        third = key[2] if len(key) > 2 else ""
        iou = f"{int(key[2:]) / 100:0.2f}" if third.isdigit() else f"{iou_thrs[0]:0.2f}:{iou_thrs[-1]:0.2f}"
        cats = third if third in ("r", "c", "f") else "all"
        area = third if third in ("s", "m", "l") else "all"
        lines.append(
            f" {title:<18} {kind} @[ IoU={iou:<9} | area={area:>6s} | maxDets={shown} catIds={cats:>3s}] = {value:0.3f}"
        )
    return lines


def per_class_rows(
    precision: np.ndarray,
    recall: np.ndarray,
    frequency: np.ndarray,
    npig: np.ndarray,
    ndet: np.ndarray,
    categories: IdTable,
    iou_thrs: np.ndarray,
    area_labels,
    max_dets: str,
) -> list[dict]:
    """One row per category: its frequency, the AP stats over that category alone (lvis-api's means
    restricted to it), AR@N, ground truth (area ``all``) and evaluated detections."""
    all_idx = list(area_labels).index("all")
    columns = {}
    for name, is_ap, iou, area, group in _SPECS:
        if group is None:
            key = name if is_ap else f"{name}@{max_dets}"
            columns[key] = _per_category_means(precision if is_ap else recall, iou_thrs, area_labels, iou, area)
    rows = []
    for k in range(len(categories)):
        row = {"category_id": categories.id_of(k), "name": categories.name_of(k), "frequency": "rcf"[frequency[k]]}
        row.update((key, float(values[k])) for key, values in columns.items())
        row["num_gt"] = int(npig[k, all_idx])
        row["num_det"] = int(ndet[k])
        rows.append(row)
    return rows


def _per_category_means(arr: np.ndarray, iou_thrs: np.ndarray, area_labels, iou, area) -> np.ndarray:
    """``mean_valid`` of each category's own entries, for every category at once.

    A category's entries at one area range are all valid or all -1 (no ground truth there): the mean of
    a whole row is then the mean of its valid entries, summed in the same (pairwise) order."""
    sel = _select(arr, iou_thrs, area_labels, iou, area, None)  # (T, R, K, 1) or (T, K, 1)
    k_axis = sel.ndim - 2
    sub = np.ascontiguousarray(np.moveaxis(sel[..., 0], k_axis, 0).reshape(sel.shape[k_axis], -1))
    if sub.shape[1] == 0:
        return np.full(sub.shape[0], -1.0)
    valid = sub > -1
    out = np.where(valid.any(axis=1), sub.mean(axis=1), -1.0)
    for k in np.flatnonzero(valid.any(axis=1) & ~valid.all(axis=1)):  # never from accumulate; exact anyway
        out[k] = mean_valid(sub[k])
    return out
