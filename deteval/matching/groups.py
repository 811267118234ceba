"""Grouping of rows by (image, category): CSR offsets that every kernel walks."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, partial

import numpy as np

from deteval.jit import njit, num_threads, run_chunks, run_tasks
from deteval.tuning import TUNING
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
        """Start of each group's ``D x G`` block of pairs in a flat overlap array (G + 1,), int64."""
        return self._pair_offsets

    @cached_property
    def _pair_offsets(self) -> np.ndarray:  # the overlaps and the matching both need it
        offsets = np.zeros(len(self.image) + 1, np.int64)
        np.cumsum(np.diff(self.dt_offsets) * np.diff(self.gt_offsets), out=offsets[1:])
        return offsets


def counting_sort(keys: np.ndarray, order: np.ndarray | None, n_bins: int) -> np.ndarray:
    """``order`` (int64) stably re-sorted by ``keys[order]`` (integers in ``[0, n_bins)``); ``order`` None:
    every row, as ``np.arange(len(keys))`` would (without that array).

    Large inputs take a counting sort kernel; below 50,000 rows numpy's stable
    argsort gives the same order without the kernel's compile on a first run.
    """
    every_row = order is None
    n = len(keys) if every_row else len(order)
    if n < TUNING.kernel_sort_rows:  # numpy below: a small evaluation does not compile the kernel
        return np.argsort(keys, kind="stable") if every_row else order[np.argsort(keys[order], kind="stable")]
    return _counting_sort(keys, _NO_ROWS if every_row else order, every_row, n_bins)


_NO_ROWS = np.empty(0, np.int64)


@njit(cache=True, nogil=True)
def _counting_sort(keys, order, every_row, n_bins):  # pragma: no cover - numba
    n = len(keys) if every_row else len(order)
    start = np.zeros(n_bins + 1, np.int64)
    for p in range(n):
        start[keys[p if every_row else order[p]] + 1] += 1
    for b in range(n_bins):
        start[b + 1] += start[b]
    out = np.empty(n, np.int64)
    for p in range(n):
        i = p if every_row else order[p]
        out[start[keys[i]]] = i
        start[keys[i]] += 1
    return out


_SIGN = np.uint64(1 << 63)
_BYTE = np.uint64(255)


@njit(cache=True)
def _radix_sort_by_score_desc(rows, score):  # pragma: no cover - numba
    """:func:`sort_by_score_desc` as a byte-wise LSD radix sort (stable, so ties keep their order).

    The scores' bits are mapped to unsigned keys whose ascending order is descending
    score, with -0.0 read as 0.0 (they tie in a comparison). Returns False, leaving
    ``rows`` as they were, if a score is NaN: comparisons order NaN in no consistent way.
    """
    n = len(rows)
    val = np.empty(n)
    for i in range(n):
        s = score[rows[i]]
        if s != s:
            return False
        val[i] = s + 0.0  # -0.0 + 0.0 is 0.0
    key = val.view(np.uint64)
    for i in range(n):
        u = key[i]
        key[i] = u if u & _SIGN else ~u & ~_SIGN
    key_buf = np.empty(n, np.uint64)
    row_buf = np.empty_like(rows)
    src_k, src_r, dst_k, dst_r = key, rows, key_buf, row_buf
    hist = np.empty(256, np.int64)
    for byte in range(8):
        shift = np.uint64(8 * byte)
        for b in range(256):
            hist[b] = 0
        for i in range(n):
            hist[np.int64((src_k[i] >> shift) & _BYTE)] += 1
        if hist[np.int64((src_k[0] >> shift) & _BYTE)] == n:
            continue  # every key has this byte: the pass would keep the order
        start = 0
        for b in range(256):
            c = hist[b]
            hist[b] = start
            start += c
        for i in range(n):
            b = np.int64((src_k[i] >> shift) & _BYTE)
            dst_k[hist[b]] = src_k[i]
            dst_r[hist[b]] = src_r[i]
            hist[b] += 1
        src_k, src_r, dst_k, dst_r = dst_k, dst_r, src_k, src_r
    if src_r is not rows:
        for i in range(n):  # an element loop: numba's array-to-array slice assignment costs 3 s to compile
            rows[i] = src_r[i]
    return True


@njit(cache=True)
def sort_by_score_desc(rows, score):  # pragma: no cover - numba
    """Stable in-place sort of ``rows`` by descending ``score[rows]``: ties keep their order.

    Insertion sort for short runs, then bottom-up merges (written out: numba's
    generic mergesort costs seconds of compilation on every cold start). Rows
    already in order (detectors write each image's results by score) are left
    after one pass.
    """
    n = len(rows)
    i = 1
    while i < n and score[rows[i]] <= score[rows[i - 1]]:
        i += 1
    if i >= n:
        return
    run = 16
    for lo in range(0, n, run):
        hi = min(lo + run, n)
        for i in range(lo + 1, hi):
            r = rows[i]
            s = score[r]
            j = i - 1
            while j >= lo and score[rows[j]] < s:
                rows[j + 1] = rows[j]
                j -= 1
            rows[j + 1] = r
    if n <= run:
        return
    buf = np.empty_like(rows)
    src, dst = rows, buf
    width = run
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if score[src[j]] > score[src[i]]:  # strictly greater: the left run wins ties
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
                k += 1
            while i < mid:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < hi:
                dst[k] = src[j]
                j += 1
                k += 1
        src, dst = dst, src
        width *= 2
    if src is not rows:
        for i in range(n):  # an element loop: numba's array-to-array slice assignment costs 3 s to compile
            rows[i] = src[i]


@njit(cache=True, nogil=True)
def _sort_slices_range(lo, hi, rows, offsets, score, radix_min):  # pragma: no cover - numba
    # shorter slices than radix_min: the merge sort is quicker than 8 histogram passes
    for k in range(lo, hi):
        part = rows[offsets[k] : offsets[k + 1]]
        if len(part) < radix_min or not _radix_sort_by_score_desc(part, score):
            sort_by_score_desc(part, score)


def sort_slices_by_score_desc(rows: np.ndarray, offsets: np.ndarray, score: np.ndarray) -> None:
    """:func:`sort_by_score_desc` on each slice ``rows[offsets[k]:offsets[k + 1]]``, in place, on threads.

    Slices of 256 rows or more take a byte-wise radix sort (three times faster on a
    category's detections); its kernel compiles in about 1 s, so callers keep it for
    large inputs and sort small ones with :func:`sort_by_score_desc` inside their kernels.
    """
    run_chunks(_sort_slices_range, len(offsets) - 1, np.diff(offsets), rows, offsets, score, TUNING.radix_min)


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
