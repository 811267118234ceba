"""The order ``np.argsort(-score)`` gave before numpy 1.25: the tie order of ``voc_eval.py`` and its kin.

py-faster-rcnn's ``voc_eval.py`` (and detectron2's VOC evaluator, DOTA_devkit, mmdet's ``eval_map``) rank a
class's detections with ``np.argsort(-confidence)``: numpy's default, unstable sort. Every numpy before 1.25
ran one algorithm for it on float64, an introsort, so the order of equal scores (detectors write 6 decimals:
ties are common) was one fixed permutation, the one published numbers were made with. Newer numpy sends the
call to SIMD code that depends on the CPU, so the reference itself no longer repeats those numbers.

:func:`classic_argsort` is that introsort, written from its rules, over the keys ``-score``:

* the comparison is numpy's ``<`` for floats with NaN after every number (``a < b or (b != b and a == a)``);
  ``-0.0`` and ``0.0`` compare equal;
* ranges of more than 16 elements are partitioned around the median of their first, middle and last
  elements (ordered in place by three compare-and-swaps); the pivot is parked at the range's last but one
  place, two cursors move inwards from both ends, each stopping at an element not less (not greater) than the
  pivot, and swap; the pivot goes where the left cursor stopped;
* the larger part is put on a stack and the smaller one partitioned next; the stack keeps each pushed part's
  depth budget: ``2 * floor(log2 n)``, one less per partition. A part taken off the stack whose budget has
  gone negative is heap-sorted (a 1-based binary max-heap, built bottom-up, then its root swapped out
  repeatedly), which is where adversarial inputs (a median-of-3 killer sequence) end up;
* ranges of 16 elements or fewer are insertion-sorted (an element moves left past strictly greater keys).

Tests compare it with ``np.argsort`` under numpy 1.24 (``tests/unit/matching/test_argsort_classic.py``).
"""

from __future__ import annotations

import numpy as np

from deteval.jit import njit

__all__ = ["classic_argsort", "classic_argsort_desc", "classic_rank_slices"]

_SMALL = 15  # a range of pr - pl <= 15 (16 elements) is insertion-sorted


@njit(cache=True, nogil=True)
def _less(a, b):  # pragma: no cover - numba
    return a < b or (b != b and a == a)


@njit(cache=True, nogil=True)
def _msb(n):  # pragma: no cover - numba
    depth = 0
    n >>= 1
    while n > 0:
        depth += 1
        n >>= 1
    return depth


@njit(cache=True, nogil=True)
def _heap_sort(key, idx, lo, n):  # pragma: no cover - numba
    """Heap sort of ``key[lo:lo + n]`` (``idx`` moved alike), with the 1-based indexing of a binary heap."""
    base = lo - 1  # heap slot s is position base + s
    for top in range(n >> 1, 0, -1):
        tk, ti = key[base + top], idx[base + top]
        i, j = top, top << 1
        while j <= n:
            if j < n and _less(key[base + j], key[base + j + 1]):
                j += 1
            if _less(tk, key[base + j]):
                key[base + i], idx[base + i] = key[base + j], idx[base + j]
                i = j
                j += j
            else:
                break
        key[base + i], idx[base + i] = tk, ti
    while n > 1:
        tk, ti = key[base + n], idx[base + n]
        key[base + n], idx[base + n] = key[base + 1], idx[base + 1]
        n -= 1
        i, j = 1, 2
        while j <= n:
            if j < n and _less(key[base + j], key[base + j + 1]):
                j += 1
            if _less(tk, key[base + j]):
                key[base + i], idx[base + i] = key[base + j], idx[base + j]
                i = j
                j += j
            else:
                break
        key[base + i], idx[base + i] = tk, ti


@njit(cache=True, nogil=True, inline="always")
def _swap(key, idx, a, b):  # pragma: no cover - numba
    key[a], key[b] = key[b], key[a]
    idx[a], idx[b] = idx[b], idx[a]


@njit(cache=True, nogil=True)
def _introsort(key, idx):  # pragma: no cover - numba
    """Sort ``idx`` as numpy < 1.25's argsort sorted it by the keys; ``key`` (``keys[idx]``, a copy) is moved
    alongside, so comparisons read memory in order: the permutation is the one the indirect sort makes."""
    num = len(idx)
    stack = np.empty(2 * 64, np.int64)  # (pl, pr) pairs: the larger parts, at most log2(n) deep
    depths = np.empty(64, np.int64)
    sp = 0
    pl, pr = 0, num - 1
    cdepth = _msb(num) * 2
    while True:
        if cdepth < 0:
            _heap_sort(key, idx, pl, pr - pl + 1)
        else:
            while pr - pl > _SMALL:
                pm = pl + ((pr - pl) >> 1)
                if _less(key[pm], key[pl]):
                    _swap(key, idx, pm, pl)
                if _less(key[pr], key[pm]):
                    _swap(key, idx, pr, pm)
                if _less(key[pm], key[pl]):
                    _swap(key, idx, pm, pl)
                vp = key[pm]
                pi, pj = pl, pr - 1
                _swap(key, idx, pm, pj)
                while True:
                    pi += 1
                    while _less(key[pi], vp):
                        pi += 1
                    pj -= 1
                    while _less(vp, key[pj]):
                        pj -= 1
                    if pi >= pj:
                        break
                    _swap(key, idx, pi, pj)
                _swap(key, idx, pi, pr - 1)
                if pi - pl < pr - pi:  # the larger part waits on the stack
                    stack[2 * sp], stack[2 * sp + 1] = pi + 1, pr
                    pr = pi - 1
                else:
                    stack[2 * sp], stack[2 * sp + 1] = pl, pi - 1
                    pl = pi + 1
                cdepth -= 1
                depths[sp] = cdepth
                sp += 1
            for p in range(pl + 1, pr + 1):
                vk, vi = key[p], idx[p]
                q = p
                while q > pl and _less(vk, key[q - 1]):
                    key[q], idx[q] = key[q - 1], idx[q - 1]
                    q -= 1
                key[q], idx[q] = vk, vi
        if sp == 0:
            break
        sp -= 1
        pl, pr = stack[2 * sp], stack[2 * sp + 1]
        cdepth = depths[sp]


@njit(cache=True, nogil=True)
def _argsort_kernel(keys):  # pragma: no cover - numba
    idx = np.arange(len(keys))
    _introsort(keys.copy(), idx)
    return idx


@njit(cache=True, nogil=True)
def classic_rank_slices(rows, offsets, score):  # pragma: no cover - numba
    """Each slice ``rows[offsets[k]:offsets[k + 1]]`` re-ordered in place as ``slice[np.argsort(-score[slice])]``
    under numpy < 1.25."""
    for k in range(len(offsets) - 1):
        p0, p1 = offsets[k], offsets[k + 1]
        m = p1 - p0
        if m < 2:
            continue
        keys = np.empty(m)
        for i in range(m):
            keys[i] = -score[rows[p0 + i]]
        idx = np.arange(m)
        _introsort(keys, idx)
        part = rows[p0:p1].copy()
        for i in range(m):
            rows[p0 + i] = part[idx[i]]


def classic_argsort(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys)`` (kind ``"quicksort"``, the default) as numpy < 1.25 computed it on float64: int64 (n,).

    ``keys`` is read as a 1-D float64 array (a copy where it is not one).
    """
    keys = np.ascontiguousarray(keys, np.float64)
    if keys.ndim != 1:
        raise ValueError(f"keys must be 1-D, got shape {keys.shape}")
    return _argsort_kernel(keys)


def classic_argsort_desc(score: np.ndarray) -> np.ndarray:
    """``np.argsort(-score)`` as numpy < 1.25 computed it: the ranking of ``voc_eval.py``, int64 (n,)."""
    score = np.ascontiguousarray(score, np.float64)
    if score.ndim != 1:
        raise ValueError(f"score must be 1-D, got shape {score.shape}")
    return _argsort_kernel(-score)


KERNELS = (_argsort_kernel, classic_rank_slices)
