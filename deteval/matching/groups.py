"""Grouping of rows by (image, category): CSR offsets that every kernel walks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deteval.types import Detections, GroundTruth


@dataclass(frozen=True)
class Groups:
    """Rows of ground truth and detections ordered group by group.

    Groups are ordered category-major (category, then image ascending), the
    order pycocotools walks ``evalImgs``; with ``use_cats=False`` there is one
    group per image and ``category`` is -1. Within a group, ground truth keeps
    file order (category-then-file order without categories) and detections
    are in descending score, ties in input order, cut to ``max_det``.
    Only groups holding at least one row exist.
    """

    gt_rows: np.ndarray  # int64, ground-truth row indices, group by group
    gt_offsets: np.ndarray  # int64 (G + 1,)
    dt_rows: np.ndarray  # int64, detection row indices, group by group
    dt_offsets: np.ndarray  # int64 (G + 1,)
    image: np.ndarray  # int32 (G,)
    category: np.ndarray  # int32 (G,), -1 without categories
    dt_rank: np.ndarray  # int32, rank of each dt_rows entry within its group

    def __len__(self) -> int:
        return len(self.image)

    def pair_offsets(self) -> np.ndarray:
        """Start of each group's ``D x G`` block of pairs in a flat overlap array (G + 1,)."""
        pairs = np.diff(self.dt_offsets) * np.diff(self.gt_offsets)
        return np.concatenate([[0], np.cumsum(pairs)]).astype(np.int64)


def group_by_image_category(
    gt: GroundTruth,
    dt: Detections,
    use_cats: bool = True,
    max_det: int | None = None,
) -> Groups:
    """Group rows by (image, category), or by image when ``use_cats`` is False.

    ``max_det`` keeps the first ``max_det`` detections of each group after the
    score sort (pycocotools cuts to ``maxDets[-1]`` before computing IoU).
    """
    n_img = np.int64(max(len(gt.images), 1))
    gi, gc = gt.image.astype(np.int64), gt.category.astype(np.int64)
    di, dc = dt.image.astype(np.int64), dt.category.astype(np.int64)
    if use_cats:
        gkey_gt, gkey_dt = gc * n_img + gi, dc * n_img + di
        # file order within a group: a stable sort on the group key alone
        gt_order = np.argsort(gkey_gt, kind="stable")
        # score order within a group, ties in input order
        dt_order = np.lexsort((-dt.score, gkey_dt))
    else:
        gkey_gt, gkey_dt = gi, di
        # pycocotools concatenates an image's rows category by category
        gt_order = np.lexsort((gc, gi))
        dt_order = np.lexsort((dc, -dt.score, di))

    keys = np.unique(np.concatenate([gkey_gt, gkey_dt]))
    gt_keys = gkey_gt[gt_order]
    dt_keys = gkey_dt[dt_order]
    bounds = np.append(keys, np.iinfo(np.int64).max)
    gt_offsets = np.searchsorted(gt_keys, bounds, side="left").astype(np.int64)
    dt_offsets = np.searchsorted(dt_keys, bounds, side="left").astype(np.int64)
    gt_offsets[-1] = len(gt_keys)
    dt_offsets[-1] = len(dt_keys)

    group_of_dt = np.repeat(np.arange(len(keys)), np.diff(dt_offsets))
    dt_rank = (np.arange(len(dt_order)) - dt_offsets[group_of_dt]).astype(np.int32)
    if max_det is not None:
        keep = dt_rank < max_det
        dt_order, dt_rank, group_of_dt = dt_order[keep], dt_rank[keep], group_of_dt[keep]
        counts = np.bincount(group_of_dt, minlength=len(keys))
        dt_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    if use_cats:
        category = (keys // n_img).astype(np.int32)
        image = (keys % n_img).astype(np.int32)
    else:
        category = np.full(len(keys), -1, np.int32)
        image = keys.astype(np.int32)
    return Groups(
        gt_rows=gt_order.astype(np.int64),
        gt_offsets=gt_offsets,
        dt_rows=dt_order.astype(np.int64),
        dt_offsets=dt_offsets,
        image=image,
        category=category,
        dt_rank=dt_rank,
    )
