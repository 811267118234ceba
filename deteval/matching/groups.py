"""Grouping of rows by (image, category): CSR offsets that every kernel walks."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, partial

import numpy as np

from deteval.jit import njit, num_threads, run_tasks
from deteval.matching.sorting import counting_sort, sort_by_score_desc
from deteval.tuning import TUNING
from deteval.types import Detections, GroundTruth


@dataclass(frozen=True, eq=False)
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
        """Start of each group's ``D x G`` block of pairs in a flat overlap array (G + 1,), int64."""
        return self._pair_offsets

    @cached_property
    def _pair_offsets(self) -> np.ndarray:  # the overlaps and the matching both need it
        offsets = np.zeros(len(self.image) + 1, np.int64)
        np.cumsum(np.diff(self.dt_offsets) * np.diff(self.gt_offsets), out=offsets[1:])
        return offsets


_INT64_MAX = np.iinfo(np.int64).max  # a global: np.iinfo inside a kernel makes its cache load import numba's arraymath


@njit(cache=True, nogil=True)
def _csr(gt_key, gt_order, dt_key, dt_order, dt_score, max_det, keys, gt_off, dt_off, dt_rank):  # pragma: no cover
    """Walk both sorted row lists once: groups present in either, their offsets, detection ranks and the cut.

    Detections arrive sorted by group only; each group's slice is sorted by score here, and the rows
    kept are moved to the front of ``dt_order``. Writes ``keys``, ``gt_off`` and ``dt_off`` (room for
    ``len(gt_order) + len(dt_order) + 1`` groups) and ``dt_rank``; returns (groups, rows kept).
    """
    n_gt, n_dt = len(gt_order), len(dt_order)
    i = j = kept = n = 0
    big = _INT64_MAX
    while i < n_gt or j < n_dt:
        key = min(gt_key[gt_order[i]] if i < n_gt else big, dt_key[dt_order[j]] if j < n_dt else big)
        keys[n] = key
        gt_off[n], dt_off[n] = i, kept
        while i < n_gt and gt_key[gt_order[i]] == key:
            i += 1
        j0 = j
        while j < n_dt and dt_key[dt_order[j]] == key:
            j += 1
        sort_by_score_desc(dt_order[j0:j], dt_score)
        j = j0
        rank = 0
        while j < n_dt and dt_key[dt_order[j]] == key:
            if rank < max_det:  # kept <= j: the rows kept move down within dt_order, ahead of the reads
                dt_order[kept] = dt_order[j]
                dt_rank[kept] = rank
                kept += 1
            rank += 1
            j += 1
        n += 1
    gt_off[n], dt_off[n] = i, kept
    return n, kept


def _csr_on_threads(gt_key, gt_order, dt_key, dt_order, dt_score, max_det):
    """:func:`_csr` over parts of the key range, one per thread, each writing where its rows could start;
    the parts' groups and rows kept are then moved down behind the previous part's."""
    n_gt, n_dt = len(gt_order), len(dt_order)
    n_parts = max(1, min(num_threads(), n_dt // TUNING.csr_rows_per_part))
    dt_cuts = [0]
    for p in range(1, n_parts):  # a part begins where a key does: no group is split
        j = max(p * n_dt // n_parts, dt_cuts[-1])
        key = dt_key[dt_order[j]]
        while j > dt_cuts[-1] and dt_key[dt_order[j - 1]] == key:
            j -= 1
        dt_cuts.append(j)
    dt_cuts.append(n_dt)
    split = np.array([dt_key[dt_order[j]] for j in dt_cuts[1:-1]], np.int64)
    gt_cuts = [0, *np.searchsorted(gt_key[gt_order], split).tolist(), n_gt]
    # part p's groups are written from gt_cuts[p] + dt_cuts[p] + p on: the most the parts before it can
    # hold, each with its closing offset
    base = [gt_cuts[p] + dt_cuts[p] + p for p in range(n_parts + 1)]
    keys = np.empty(n_gt + n_dt + n_parts, np.int64)
    gt_off = np.empty(n_gt + n_dt + n_parts + 1, np.int64)
    dt_off = np.empty(n_gt + n_dt + n_parts + 1, np.int64)
    dt_rank = np.empty(n_dt, np.int32)
    parts = [
        partial(
            _csr, gt_key, gt_order[gt_cuts[p] : gt_cuts[p + 1]], dt_key, dt_order[dt_cuts[p] : dt_cuts[p + 1]],
            dt_score, max_det, keys[base[p] :], gt_off[base[p] :], dt_off[base[p] :], dt_rank[dt_cuts[p] :],
        )  # fmt: skip
        for p in range(n_parts)
    ]
    done = run_tasks(parts)
    n, kept = done[0]  # the first part is in place
    for p in range(1, n_parts):
        n_p, kept_p = done[p]
        src, dst = slice(base[p], base[p] + n_p), slice(n, n + n_p)
        keys[dst] = keys[src]
        gt_off[dst] = gt_off[src] + gt_cuts[p]  # each part counts its rows from its own first
        dt_off[dst] = dt_off[src] + kept
        src, dst = slice(dt_cuts[p], dt_cuts[p] + kept_p), slice(kept, kept + kept_p)
        dt_order[dst] = dt_order[src]
        dt_rank[dst] = dt_rank[src]
        n, kept = n + n_p, kept + kept_p
    gt_off[n], dt_off[n] = n_gt, kept
    return keys[:n], gt_off[: n + 1], dt_off[: n + 1], dt_order[:kept], dt_rank[:kept]


def _pair_key(major: np.ndarray, minor: np.ndarray, n_minor: int) -> np.ndarray:
    """``major * n_minor + minor`` as int64, with one new array (the columns are int32)."""
    key = major.astype(np.int64)
    key *= n_minor
    key += minor
    return key


def group_by_image_category(
    gt: GroundTruth,
    dt: Detections,
    use_cats: bool = True,
    max_det: int | None = None,
) -> Groups:
    """Group rows by (image, category), or by image when ``use_cats`` is False.

    ``max_det`` keeps the first ``max_det`` detections of each group after the
    score sort (pycocotools cuts to ``maxDets[-1]`` before computing IoU).
    Rows are put in group order by stable counting sorts, then each group's
    detections are sorted by score (stable: ties keep input order).
    """
    n_img, n_cat = max(len(gt.images), 1), max(len(gt.categories), 1)
    # ground truth: (category, image, file order), detections: (category, image, input order); without
    # categories pycocotools concatenates an image's rows category by category: (image, category, order)
    major, minor = (n_cat, n_img) if use_cats else (n_img, n_cat)
    gt_pair = _pair_key(gt.category, gt.image, n_img) if use_cats else _pair_key(gt.image, gt.category, n_cat)
    dt_pair = _pair_key(dt.category, dt.image, n_img) if use_cats else _pair_key(dt.image, dt.category, n_cat)
    if n_img * n_cat <= TUNING.one_pass_bins_per_row * (len(gt) + len(dt)) + 4096:  # one pass, bins not beyond the rows
        gt_order = counting_sort(gt_pair, None, n_img * n_cat)
        dt_order = counting_sort(dt_pair, None, n_img * n_cat)
    else:  # two stable passes, minor key first
        gt_order = counting_sort(gt_pair // minor, counting_sort(gt_pair % minor, None, minor), major)
        dt_order = counting_sort(dt_pair // minor, counting_sort(dt_pair % minor, None, minor), major)
    gt_key, dt_key = (gt_pair, dt_pair) if use_cats else (gt.image.astype(np.int64), dt.image.astype(np.int64))
    cut = _INT64_MAX if max_det is None else int(max_det)
    score = np.ascontiguousarray(dt.score, np.float64)
    keys, gt_off, dt_off, dt_rows, dt_rank = _csr_on_threads(gt_key, gt_order, dt_key, dt_order, score, cut)
    return Groups(
        gt_rows=gt_order,
        gt_offsets=gt_off,
        dt_rows=dt_rows,
        dt_offsets=dt_off,
        image=(keys % n_img).astype(np.int32),
        category=(keys // n_img).astype(np.int32) if use_cats else np.full(len(keys), -1, np.int32),
        dt_rank=dt_rank,
    )
