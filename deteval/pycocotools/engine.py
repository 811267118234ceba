"""What ``COCOeval.evaluate()`` and ``accumulate()`` compute, on deteval's containers and kernels.

The COCO objects' records are read once into :class:`~deteval.types.GroundTruth` and
:class:`~deteval.types.Detections` (cached on the objects); ``evaluate()`` cuts them to the
``imgIds`` / ``catIds`` of its params, re-indexed on tables of exactly those ids (so that the
precision array's K axis is the sorted ``catIds`` and ties across images break by image id, as
in pycocotools), then groups, overlaps and matches with the ``coco`` protocol's pipeline (reached through the
registry, as every protocol is).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval import protocols
from deteval.types import Detections, GroundTruth, IdTable, take_rows
from deteval.vocabulary import IOU_TYPES as IOU_TYPE_TABLE

__all__ = ["Evaluated", "containers", "evaluate", "params_of"]


def containers(coco_gt: Any, coco_dt: Any, iou_type: str) -> tuple[Detections, GroundTruth]:
    """The ground truth and detections of two COCO objects, read once per object and iou type.

    A COCO object read from a file and not re-indexed since is read from that file again by deteval's
    loaders (the byte scanner on large files: faster than walking the records); any other is read from
    its ``.dataset``. Result records not made by ``loadRes`` keep their own ``area``, as pycocotools reads it.
    """
    from deteval.io.coco import load_coco_gt, load_coco_pair, load_coco_results

    key = ("gt", iou_type)
    gt = coco_gt._deteval_cache.get(key)
    if gt is None and coco_gt._deteval_file is not None and coco_dt._deteval_file is not None:
        # both files: the results are scanned on pool threads while the ground truth loads
        dets, gt = load_coco_pair(coco_dt._deteval_file, coco_gt._deteval_file, iou_type=iou_type)
        coco_gt._deteval_cache[key] = gt
        coco_dt._deteval_cache[("dt", iou_type, id(gt))] = (gt, dets)
        return dets, gt
    if gt is None:
        gt = load_coco_gt(coco_gt._deteval_file or coco_gt.dataset, iou_type=iou_type)
        coco_gt._deteval_cache[key] = gt
    key = ("dt", iou_type, id(gt))
    hit = coco_dt._deteval_cache.get(key)
    if hit is not None and hit[0] is gt:
        return hit[1], gt
    if coco_dt._deteval_file is not None:
        dets = load_coco_results(coco_dt._deteval_file, gt, iou_type=iou_type)
    else:
        records = coco_dt.dataset["annotations"]
        branch, added_box = coco_dt._deteval_loadres or (None, None)
        if added_box is not None and any(added_box):
            # loadRes gave these mask results their mask's box: read as it read them (area: the mask's)
            records = [{k: v for k, v in r.items() if k != "bbox"} if a else r for r, a in zip(records, added_box)]
        dets = load_coco_results(records, gt, iou_type=iou_type)
        if branch is None and len(dets) == len(records):  # pycocotools reads each record's own area
            dets = dataclasses.replace(dets, area=np.array([r["area"] for r in records], np.float64))
    coco_dt._deteval_cache[key] = (gt, dets)
    return dets, gt


def params_of(p: Any) -> Any:
    """The coco protocol's parameters from a (normalised) pycocotools ``Params``, unchecked: pycocotools checks
    none."""
    kpts = p.iouType == "keypoints"
    return protocols.get("coco").unchecked_params(
        iou_type=p.iouType,
        iou_thrs=np.asarray(p.iouThrs, np.float64).reshape(-1),
        rec_thrs=np.asarray(p.recThrs, np.float64).reshape(-1),
        max_dets=tuple(int(m) for m in p.maxDets),
        area_ranges=np.asarray(p.areaRng, np.float64).reshape(-1, 2),
        area_labels=tuple(str(a) for a in p.areaRngLbl),
        use_cats=bool(p.useCats),
        compat=True,
        kpt_sigmas=np.asarray(p.kpt_oks_sigmas, np.float64).reshape(-1) if kpts else None,
    )


def _reindex(ids: np.ndarray, table: IdTable) -> tuple[np.ndarray, np.ndarray]:
    """For each id of ``ids``: its index in ``table`` and whether it is there."""
    if len(ids) == 0 or len(table) == 0:
        return np.zeros(len(ids), np.int32), np.zeros(len(ids), bool)
    try:
        return table.lookup(ids)
    except TypeError:  # ids of mixed kinds: none match
        return np.zeros(len(ids), np.int32), np.zeros(len(ids), bool)


def _subset(dets: Detections, gt: GroundTruth, img_ids: list, cat_ids: list, use_cats: bool):
    """The rows on ``img_ids`` (and of ``cat_ids``), indexed on tables of exactly those ids."""
    images = IdTable(np.asarray(img_ids)) if len(img_ids) else IdTable(gt.images.ids[:0])
    if use_cats:
        categories = IdTable(np.asarray(cat_ids)) if len(cat_ids) else IdTable(gt.categories.ids[:0])
    else:
        # pooled: an image's rows come category by category in catIds' own order (first occurrence)
        order = list(dict.fromkeys(cat_ids))
        categories = IdTable(np.asarray(order) if order else gt.categories.ids[:0])
    same_images = np.array_equal(images.ids, gt.images.ids)
    same_cats = np.array_equal(categories.ids, gt.categories.ids)
    if same_images and same_cats:
        return dets, gt, None
    img_pos, img_ok = _reindex(gt.images.ids, images)
    if use_cats:
        cat_pos, cat_ok = _reindex(gt.categories.ids, categories)
    else:
        where = {c: i for i, c in enumerate(order)}
        found = [where.get(c) for c in gt.categories.ids.tolist()]
        cat_ok = np.array([f is not None for f in found], bool)
        cat_pos = np.array([f or 0 for f in found], np.int32)
    out = []
    for rows in (gt, dets):
        keep = np.flatnonzero(img_ok[rows.image] & cat_ok[rows.category])
        part = take_rows(rows, keep)
        out.append(dataclasses.replace(part, image=img_pos[part.image].astype(np.int32),
                                       category=cat_pos[part.category].astype(np.int32)))  # fmt: skip
    gt_part = dataclasses.replace(out[0], images=images, categories=categories)
    return out[1], gt_part, keep  # keep: the detections' rows kept


@dataclass
class Evaluated:
    """One ``evaluate()``: the containers cut to the params, the groups, overlaps and outcomes."""

    dets: Detections
    gt: GroundTruth
    params: Any  # the coco protocol's
    groups: Any
    ious: np.ndarray  # flat, per group D x G (row-major)
    no_overlaps: bool  # pycocotools computed none (keypoints with pooled categories)
    state: np.ndarray  # int8 (N, A, T)
    gt_ignore: np.ndarray  # bool per gt row: crowd (and, for keypoints, no labelled keypoint)
    npig: np.ndarray  # int64 (K, A)
    dt_kept: np.ndarray | None  # the rows of all the detections that these are (None: all of them)


def evaluate(coco_gt: Any, coco_dt: Any, p: Any) -> Evaluated:
    """Group, overlap and match the records of ``p.imgIds`` / ``p.catIds``, pycocotools' way."""
    from deteval.jit import warm

    params = params_of(p)
    # the matching and accumulation kernels load on a thread of their own while the files are read
    warm(IOU_TYPE_TABLE[params.iou_type].kernel_group)
    dets, gt = containers(coco_gt, coco_dt, p.iouType)
    dets, gt, dt_kept = _subset(dets, gt, p.imgIds, p.catIds, params.use_cats)
    # pycocotools' computeOks looks up category -1 for pooled keypoints and finds no ground truth: nothing matches
    no_overlaps = params.iou_type == "keypoints" and not params.use_cats
    m = protocols.get("coco").match_record(dets, gt, params, no_overlaps)
    return Evaluated(dets, gt, params, m.groups, m.ious, no_overlaps, m.state, m.gt_ignore, m.npig, dt_kept)


def accumulate(ev: Evaluated, rec_thrs: np.ndarray, max_dets: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """precision, recall and scores of an evaluation, with ``rec_thrs`` (read at accumulate time, as pycocotools)."""
    from deteval.accumulation.accumulate import accumulate as accumulate_kernel

    g = ev.groups
    per_group = np.diff(g.dt_offsets)
    category = np.repeat(g.category if ev.params.use_cats else np.zeros(len(g), np.int32), per_group)
    image = np.repeat(g.image, per_group)
    precision, recall, scores = accumulate_kernel(
        category, image, g.dt_rank, ev.dets.score[g.dt_rows], ev.state, ev.npig,
        np.asarray(max_dets, np.int64), np.asarray(rec_thrs, np.float64).reshape(-1),
    )  # fmt: skip
    if ev.dets.nan_scores:
        protocols.get("coco").shown_nan_scores(scores)
    return precision, recall, scores
