"""COCO's matching pipeline, once: what the ``coco``, ``lvis`` and ``crowdpose`` protocols and the
pycocotools shim run between loading and accumulation.

:func:`match_pipeline` takes the ground truth's ignore flags, groups by (image, category) with the
per-group cut, computes the overlaps, matches greedily at every threshold and area range, and counts
the positives per category. What the reference tools do differently is a field of :class:`MatchRules`:

================  ==================  ==================  ===============  ===================
rule              pycocotools         deteval fixed mode  lvis-api         xtcocotools (crowd)
================  ==================  ==================  ===============  ===================
``crowd``         iscrowd read        iscrowd read        not read         iscrowd read
``honour_ignore`` no (iscrowd wins)   yes                 yes              no
``id0_unmatched`` yes (ids record)    no                  yes (ids record) no (-1 records)
``mask_area``     no (box's area)     yes                 no               no
================  ==================  ==================  ===============  ===================

:func:`matches_record` turns the outcome into :class:`CocoMatches`, the flat arrays accumulation reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from deteval.errors import InputError
from deteval.types import Detections, GroundTruth
from deteval.vocabulary import IOU_TYPES

__all__ = ["CocoMatches", "MatchRules", "Matched", "ignore_flags", "match_pipeline", "matches_record", "overlaps_of"]


@dataclass(frozen=True, eq=False)
class CocoMatches:
    """The outcome of matching: everything accumulation needs, as flat arrays.

    Shards of a dataset (batches, processes, Dask partitions) concatenate
    row-wise, with ``npig`` and ``ndet`` summed, once their image indices
    refer to one shared, id-sorted image table.
    """

    det_category: np.ndarray  # int32 (N,), 0 for all when categories are pooled
    det_image: np.ndarray  # int32 (N,), ascending with the image id
    det_rank: np.ndarray  # int32 (N,), rank by score within (image, category)
    det_score: np.ndarray  # float64 (N,)
    state: np.ndarray  # int8 (N, A, T): FP 0, TP 1, ignored 2
    npig: np.ndarray  # int64 (K, A): ground truth that counts, per category and area range
    ndet: np.ndarray  # int64 (K,): detections per category, before the max-dets cut
    nan_scores: bool = False  # Detections.nan_scores: the -inf scores stand for NaN ones
    match_iou: np.ndarray | None = None  # float64 (N, T): each match's overlap in area "all", when params.keep_iou
    # the per-detection and per-image tables (deteval.result.MatchTable, ImageTable), when asked for; not merged
    tables: Any = None


@dataclass(frozen=True)
class MatchRules:
    """How a reference tool reads what it matches (see the module's table)."""

    crowd: bool = True  # iscrowd read: a crowd ground truth is ignored and may match any number of detections
    honour_ignore: bool = False  # the ground truth's ``ignore`` field marks it ignored
    id0_unmatched: bool = True  # a match to annotation id 0 reads as none (the tool records matches by id)
    mask_area: bool = False  # a mask result's area is its mask's, not its box's (pycocotools reads the box's)


@dataclass(frozen=True, eq=False)
class Matched:
    """One run of :func:`match_pipeline`."""

    groups: Any  # deteval.matching.groups.Groups
    ious: np.ndarray  # flat, per group D x G (row-major)
    state: np.ndarray  # int8 (N, A, T)
    match_iou: np.ndarray | None  # float64 (N, T), when asked for (iou_area)
    gt_ignore: np.ndarray  # bool per ground truth row
    npig: np.ndarray  # int64 (K, A)
    match_gt: np.ndarray | None = None  # int64 (N, T): position in groups.gt_rows of each match, -1 none (keep_gt)


def _need(container: Any, key: str, iou_type: str) -> Any:
    if getattr(container, key) is None:
        raise InputError(container.source, None, f"loaded without {key}: load it with iou_type={iou_type!r}")
    return getattr(container, key)


def ignore_flags(gt: GroundTruth, iou_type: str, rules: MatchRules) -> np.ndarray:
    """Which ground truth is ignored (never a positive; a detection matched to it is ignored)."""
    if rules.crowd:
        ignore = (gt.crowd | gt.ignore) if rules.honour_ignore else gt.crowd
    else:
        ignore = gt.ignore if rules.honour_ignore else np.zeros(len(gt), bool)
    if IOU_TYPES[iou_type].ignores_unlabelled:  # a person without a labelled keypoint
        ignore = ignore | (_need(gt, "num_keypoints", iou_type) == 0)
    return ignore


# --------------------------------------------------------------------------------------
# the overlap of each iou type (deteval.iou_types names them): blocks of every group's D x G pairs


def _box_overlaps(blocks, dets, gt, crowd, kpt_sigmas):
    from deteval.geometry.boxes import box_iou_blocks

    return box_iou_blocks(*blocks, gt.boxes, crowd, dets.boxes)


def _mask_overlaps(blocks, dets, gt, crowd, kpt_sigmas):
    from deteval.geometry.masks import mask_iou_blocks

    return mask_iou_blocks(*blocks, _need(gt, "masks", "segm"), crowd, _need(dets, "masks", "segm"))


def _obb_overlaps(blocks, dets, gt, crowd, kpt_sigmas):
    from deteval.geometry.obb import obb_iou_blocks, poly_iou_blocks

    gt_obb, dt_obb = _need(gt, "obb", "obb"), _need(dets, "obb", "obb")
    if gt_obb.shape[1] != dt_obb.shape[1]:
        raise InputError(dets.source, None, "oriented boxes (N, 5) and quadrilaterals (N, 8) mixed")
    blocks_of = poly_iou_blocks if gt_obb.shape[1] == 8 else obb_iou_blocks  # the Evaluator's box_format "poly"
    return blocks_of(*blocks, gt_obb, crowd, dt_obb)


def _oks_overlaps(blocks, dets, gt, crowd, kpt_sigmas):
    from deteval.geometry.keypoints import oks_blocks

    gt_kpts, dt_kpts = _need(gt, "keypoints", "keypoints"), _need(dets, "keypoints", "keypoints")
    k = len(kpt_sigmas)
    for c, who in ((gt_kpts, gt.source), (dt_kpts, dets.source)):
        if len(c) and c.shape[1] != 3 * k:
            raise InputError(who, None, f"keypoints have {c.shape[1] // 3} points but there are {k} sigmas")
    return oks_blocks(*blocks, gt_kpts, gt.boxes, gt.area, dt_kpts, kpt_sigmas)


# keyed by IouType.overlap
OVERLAPS = {"box_iou": _box_overlaps, "mask_iou": _mask_overlaps, "obb_iou": _obb_overlaps, "oks": _oks_overlaps}


def overlaps_of(
    groups: Any, dets: Detections, gt: GroundTruth, iou_type: str, crowd: np.ndarray, kpt_sigmas: Any = None
) -> np.ndarray:
    """The overlap of every (detection, ground truth) pair of every group, ``crowd`` marking the crowd
    ground truth: box, mask or oriented-box IoU, or OKS (with ``kpt_sigmas``)."""
    blocks = (groups.gt_rows, groups.gt_offsets, groups.dt_rows, groups.dt_offsets, groups.pair_offsets())
    return OVERLAPS[IOU_TYPES[iou_type].overlap](blocks, dets, gt, crowd, kpt_sigmas)


def match_pipeline(
    dets: Detections,
    gt: GroundTruth,
    *,
    iou_type: str,
    iou_thrs: np.ndarray,
    area_ranges: np.ndarray,
    rules: MatchRules,
    use_cats: bool = True,
    max_det: int | None = None,
    kpt_sigmas: np.ndarray | None = None,
    iou_area: int | None = None,
    no_overlaps: bool = False,
    ignored_if_unmatched: np.ndarray | None = None,
    keep_gt: bool = False,
) -> Matched:
    """Ignore flags, grouping (each group cut to ``max_det`` by score), overlaps, greedy matching at every
    threshold and area range, and the positives per category (one when ``use_cats`` is False).

    ``iou_area`` (an area range's index) also keeps each match's overlap there, and with ``keep_gt`` the
    ground truth it took (``Matched.match_gt``); ``no_overlaps`` matches
    nothing (pycocotools' pooled keypoints); ``ignored_if_unmatched`` (a mask of ``dets``' rows) turns those
    rows' false positives into ignored ones (lvis-api's categories not exhaustively annotated).
    """
    from deteval.accumulation.accumulate import positives_per_category
    from deteval.matching.coco import match_groups
    from deteval.matching.groups import group_by_image_category

    gt_ignore = ignore_flags(gt, iou_type, rules)
    gt_crowd = gt.crowd if rules.crowd else np.zeros(len(gt), bool)
    gt_counts = gt.ann_id != 0 if rules.id0_unmatched else np.ones(len(gt), bool)
    groups = group_by_image_category(gt, dets, use_cats=use_cats, max_det=max_det)
    if no_overlaps:
        ious = np.full(int(groups.pair_offsets()[-1]), -np.inf)
    else:
        ious = overlaps_of(groups, dets, gt, iou_type, gt_crowd, kpt_sigmas)
    dt_area = dets.mask_area if rules.mask_area and IOU_TYPES[iou_type].has_mask_area else dets.area
    state = match_groups(
        groups, ious, gt.area, gt_crowd, gt_ignore, gt_counts, dt_area, iou_thrs, area_ranges, iou_area=iou_area,
        keep_gt=keep_gt,
    )  # fmt: skip
    match_gt = None
    if keep_gt:
        state, match_iou, match_gt = state
    else:
        state, match_iou = state if iou_area is not None else (state, None)
    if ignored_if_unmatched is not None:
        from deteval.matching.federated import ignore_unmatched

        ignore_unmatched(state, ignored_if_unmatched[groups.dt_rows])
    n_cat = len(gt.categories) if use_cats else 1
    gt_cat = gt.category if use_cats else np.zeros(len(gt), np.int32)
    npig = positives_per_category(gt_cat, gt.area, gt_ignore, area_ranges, n_cat)
    return Matched(groups, ious, state, match_iou, gt_ignore, npig, match_gt)


def matches_record(
    matched: Matched, dets: Detections, n_cat: int, use_cats: bool = True, nan_scores: bool = False
) -> CocoMatches:
    """The :class:`CocoMatches` of a :func:`match_pipeline` run on ``dets`` (``n_cat``: the categories' count)."""
    from deteval.jit import run_tasks

    groups = matched.groups
    dt_cat = dets.category if use_cats else np.zeros(len(dets), np.int32)
    per_group = np.diff(groups.dt_offsets)  # each group's image and category repeated: no random reads
    # numpy releases the GIL in each: side by side on threads
    det_category, det_image, det_score, ndet = run_tasks([
        partial(np.repeat, groups.category if use_cats else np.zeros(len(groups), np.int32), per_group),
        partial(np.repeat, groups.image, per_group),
        partial(np.take, dets.score, groups.dt_rows),
        partial(np.bincount, dt_cat, minlength=n_cat),
    ])  # fmt: skip
    return CocoMatches(
        det_category=det_category,
        det_image=det_image,
        det_rank=groups.dt_rank,
        det_score=det_score,
        state=matched.state,
        npig=matched.npig,
        ndet=ndet.astype(np.int64),
        nan_scores=nan_scores,
        match_iou=matched.match_iou,
    )
