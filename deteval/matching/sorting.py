"""The stable sorts every stage ranks with: counting sorts of small integer keys, and the
descending-score sort (merge and radix) whose tie order is that of a stable comparison sort.

A low module of its own: grouping (``deteval.matching.groups``) and ranking
(``deteval.accumulation.accumulate``) both sort with these kernels, and neither should reach
into the other for them.
"""

from __future__ import annotations

import numpy as np

from deteval.jit import njit, run_chunks
from deteval.tuning import TUNING


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
    return counting_sort_kernel(keys, _NO_ROWS if every_row else order, every_row, n_bins)


_NO_ROWS = np.empty(0, np.int64)


@njit(cache=True, nogil=True)
def counting_sort_kernel(keys, order, every_row, n_bins):  # pragma: no cover - numba
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
def radix_sort_by_score_desc(rows, score):  # pragma: no cover - numba
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
def sort_slices_range(lo, hi, rows, offsets, score, radix_min):  # pragma: no cover - numba
    # shorter slices than radix_min: the merge sort is quicker than 8 histogram passes
    for k in range(lo, hi):
        part = rows[offsets[k] : offsets[k + 1]]
        if len(part) < radix_min or not radix_sort_by_score_desc(part, score):
            sort_by_score_desc(part, score)


def sort_slices_by_score_desc(rows: np.ndarray, offsets: np.ndarray, score: np.ndarray) -> None:
    """:func:`sort_by_score_desc` on each slice ``rows[offsets[k]:offsets[k + 1]]``, in place, on threads.

    Slices of 256 rows or more take a byte-wise radix sort (three times faster on a
    category's detections); its kernel compiles in about 1 s, so callers keep it for
    large inputs and sort small ones with :func:`sort_by_score_desc` inside their kernels.
    """
    run_chunks(sort_slices_range, len(offsets) - 1, np.diff(offsets), rows, offsets, score, TUNING.radix_min)
