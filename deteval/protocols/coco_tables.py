"""The per-detection matches and per-image counts of one COCO matching pass, as pycocotools' ``evalImgs``
holds them at area range ``all`` (``result.matches``, ``result.per_image``; ``deteval --matches
--per-image``).

Nothing is matched again: the rows are read off the matching kernel's outcomes and, for the matches, the
ground truth each detection took and the overlap it was taken at (``match_pipeline(..., keep_gt=True)``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval.matching.coco import FP, IGNORED, TP
from deteval.result import ImageTable, MatchTable, default_iou_index
from deteval.types import Detections, GroundTruth

__all__ = ["all_area_index", "image_table", "match_table"]


def all_area_index(area_labels: tuple[str, ...]) -> int:
    """The area range the tables read: ``all``, else the first."""
    return area_labels.index("all") if "all" in area_labels else 0


def _gt_ignored(gt: GroundTruth, ignore: np.ndarray, area_range: np.ndarray) -> np.ndarray:
    """pycocotools' ``gtIgnore`` in one area range: ignored, or its area outside the range (a NaN area is inside)."""
    lo, hi = float(area_range[0]), float(area_range[1])
    return ignore | (gt.area < lo) | (gt.area > hi)


def image_table(matched: Any, gt: GroundTruth, params: Any) -> ImageTable:
    """One row per ground-truth image, by ascending id: the ground truth that counts, the evaluated
    detections, and at IoU .50 (else the first threshold), area ``all``, their true and false positives."""
    a = all_area_index(params.area_labels)
    n_img = len(gt.images)
    groups = matched.groups
    det_image = np.repeat(groups.image, np.diff(groups.dt_offsets))
    counted = ~_gt_ignored(gt, matched.gt_ignore, params.area_ranges[a])
    state = matched.state[:, a, default_iou_index(params.iou_thrs)]
    num_gt = np.bincount(gt.image[counted], minlength=n_img)
    tp = np.bincount(det_image[state == TP], minlength=n_img)
    columns = {
        "image_id": gt.images.ids,
        "num_gt": num_gt,
        "num_dt": np.bincount(det_image, minlength=n_img),
        "tp": tp,
        "fp": np.bincount(det_image[state == FP], minlength=n_img),
        "fn": num_gt - tp,
    }
    return ImageTable(columns)


def match_table(matched: Any, dets: Detections, gt: GroundTruth, params: Any, id0_unmatched: bool) -> MatchTable:
    """Every evaluated detection's row and every untaken ground truth's row, per IoU threshold (see
    :class:`~deteval.result.MatchTable`). ``id0_unmatched``: a match to annotation id 0 reads as none
    (pycocotools records matches by id), as the matching's rules say.

    Rows run threshold by threshold, then group by group in pycocotools' order (category, then image),
    within a group the detections by score, then the untaken ground truth in ``gtIds`` order (ignored last).
    """
    groups, pos = matched.groups, matched.match_gt
    a = all_area_index(params.area_labels)
    thrs = np.asarray(params.iou_thrs, np.float64)
    n_thr, n_det, n_gt = len(thrs), len(groups.dt_rows), len(gt)
    dt_rows = groups.dt_rows
    det_index = dt_rows if dets.file_row is None else dets.file_row[dt_rows]
    # each match's ground-truth row (-1: none), and which of them reads as a match
    gt_row = np.where(pos >= 0, groups.gt_rows[np.maximum(pos, 0)] if n_gt else -1, -1)
    took = gt_row >= 0
    shown = took & (gt.ann_id[np.maximum(gt_row, 0)] != 0) if id0_unmatched and n_gt else took
    taken = np.zeros((n_gt, n_thr), bool)
    rows, cols = np.nonzero(took)
    taken[gt_row[rows, cols], cols] = True
    gt_ignore = _gt_ignored(gt, matched.gt_ignore, params.area_ranges[a])
    det_state = matched.state[:, a, :]  # (N, T)

    # within a threshold: group by group, the detections (in score order already), then the untaken ground
    # truth in gtIds order (group, not ignored before ignored, file order)
    det_group = np.repeat(np.arange(len(groups), dtype=np.int64), np.diff(groups.dt_offsets))
    gt_group = np.empty(n_gt, np.int64)
    gt_group[groups.gt_rows] = np.repeat(np.arange(len(groups), dtype=np.int64), np.diff(groups.gt_offsets))
    gt_in_order = groups.gt_rows[np.argsort(gt_group[groups.gt_rows] * 2 + gt_ignore[groups.gt_rows], kind="stable")]
    det_ids, no_det = np.arange(n_det, dtype=np.int64), np.full(n_det, -1, np.int64)
    parts: dict[str, list[np.ndarray]] = {"t": [], "det": [], "gt": []}
    for t in range(n_thr):
        free = gt_in_order[~taken[gt_in_order, t]]
        at = np.searchsorted(det_group, gt_group[free], side="right")  # after its group's detections
        parts["det"].append(np.insert(det_ids, at, -1))  # equal positions keep their order
        parts["gt"].append(np.insert(no_det, at, free))
        parts["t"].append(np.full(n_det + len(free), t, np.int64))
    t_of, det, gt_free = (np.concatenate(parts[k]) for k in ("t", "det", "gt"))
    is_det = det >= 0
    d, g = np.maximum(det, 0), np.maximum(gt_free, 0)
    # a detection's row reads its match; a ground truth's row reads itself
    row_gt = np.where(is_det, gt_row[d, t_of] if n_det else -1, gt_free)
    image = np.where(is_det, dets.image[dt_rows[d]] if n_det else 0, gt.image[g] if n_gt else 0)
    category = np.where(is_det, dets.category[dt_rows[d]] if n_det else 0, gt.category[g] if n_gt else 0)
    null_gt = np.where(is_det, ~shown[d, t_of] if n_det else True, False)
    iou = matched.match_iou[d, t_of] if n_det else np.zeros(len(t_of))
    score = dets.score[dt_rows[d]] if n_det else np.zeros(len(t_of))
    if dets.nan_scores:  # the -inf scores stand for NaN ones: shown as null
        score = np.where(score == -np.inf, np.nan, score)
    ignored = np.where(is_det, det_state[d, t_of] == IGNORED if n_det else False, gt_ignore[g] if n_gt else False)
    columns = {
        "iou_thr": thrs[t_of],
        "det_index": np.where(is_det, det_index[d] if n_det else -1, -1).astype(np.int64),
        "image_id": gt.images.ids[image] if len(gt.images) else np.zeros(len(t_of), np.int64),
        "category_id": gt.categories.ids[category] if len(gt.categories) else np.zeros(len(t_of), np.int64),
        "score": score,
        "gt_id": gt.ann_id[np.maximum(row_gt, 0)] if n_gt else np.zeros(len(t_of), np.int64),
        "iou": iou,
        "ignored": ignored.astype(bool),
    }
    nulls = {"det_index": ~is_det, "score": ~is_det, "gt_id": null_gt, "iou": ~is_det | null_gt}
    return MatchTable(columns, nulls)
