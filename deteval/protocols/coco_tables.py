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
from deteval.protocols.coco_params import all_area_index
from deteval.result import ImageTable, MatchTable, default_iou_index
from deteval.types import Detections, GroundTruth

__all__ = ["image_table", "match_table"]


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
    # each threshold's block: where its detections' rows and its untaken ground truth's rows go (a ground truth
    # goes before the detection its group ends at: np.insert's positions)
    det_ids = np.arange(n_det, dtype=np.int64)
    det_pos, gt_pos, free_rows, start = [], [], [], 0
    for t in range(n_thr):
        free = gt_in_order[~taken[gt_in_order, t]]
        at = np.searchsorted(det_group, gt_group[free], side="right")  # after its group's detections
        det_pos.append(start + det_ids + np.searchsorted(at, det_ids, side="right"))
        gt_pos.append(start + at + np.arange(len(free), dtype=np.int64))
        free_rows.append(free)
        start += n_det + len(free)

    def column(dtype: Any, of_dets, of_gt) -> np.ndarray:
        """One column: ``of_dets(t)`` on the detections' rows of threshold ``t`` (N values, or one),
        ``of_gt(t, free)`` on its untaken ground truth's."""
        out = np.empty(start, dtype)
        for t in range(n_thr):
            out[det_pos[t]] = of_dets(t)
            out[gt_pos[t]] = of_gt(t, free_rows[t])
        return out

    # what a detection's row reads whatever the threshold, once per detection
    det_image, det_cat, score = dets.image[dt_rows], dets.category[dt_rows], dets.score[dt_rows]
    if dets.nan_scores:  # the -inf scores stand for NaN ones: shown as null
        score = np.where(score == -np.inf, np.nan, score)
    ann_id = gt.ann_id if n_gt else np.zeros(1, np.int64)
    image = column(np.int64, lambda t: det_image, lambda t, f: gt.image[f])
    category = column(np.int64, lambda t: det_cat, lambda t, f: gt.category[f])
    is_gt = column(bool, lambda t: False, lambda t, f: True)
    null_gt = column(bool, lambda t: ~shown[:, t], lambda t, f: False)
    columns = {
        "iou_thr": column(np.float64, lambda t: thrs[t], lambda t, f: thrs[t]),
        "det_index": column(np.int64, lambda t: det_index, lambda t, f: -1),
        "image_id": gt.images.ids[image] if len(gt.images) else np.zeros(start, np.int64),
        "category_id": gt.categories.ids[category] if len(gt.categories) else np.zeros(start, np.int64),
        "score": column(np.float64, lambda t: score, lambda t, f: np.nan),
        "gt_id": column(ann_id.dtype, lambda t: ann_id[np.maximum(gt_row[:, t], 0)], lambda t, f: ann_id[f]),
        "iou": column(np.float64, lambda t: matched.match_iou[:, t], lambda t, f: np.nan),
        "ignored": column(bool, lambda t: det_state[:, t] == IGNORED, lambda t, f: gt_ignore[f]),
    }
    nulls = {"det_index": is_gt, "score": is_gt, "gt_id": null_gt, "iou": is_gt | null_gt}
    return MatchTable(columns, nulls)
