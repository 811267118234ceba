"""numpy's floating-point reductions, reproduced in numba bit for bit, and a table's columns moved in place.

A kernel that must equal a reference tool calling ``np.sum`` or ``np.mean``
has to add in numpy's order: pairwise summation with 8 accumulators over
blocks of at most 128 items (``numpy/_core/src/umath/loops_utils.h.src``).
"""

from __future__ import annotations

import numpy as np

from deteval.jit import njit


@njit(cache=True)
def _block_sum(a, lo, n):  # pragma: no cover - numba
    # one leaf of numpy's pairwise summation (loops_utils.h): n <= 128
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    stop = n - n % 8
    while i < stop:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True)
def _pairwise(a):  # pragma: no cover - numba
    # numpy splits n > 128 at n2 = n/2 rounded down to a multiple of 8 and adds the halves;
    # an explicit stack replaces the recursion (numba's cache cannot hold recursive functions)
    n = len(a)
    if n <= 128:
        return _block_sum(a, 0, n)
    f_lo = np.empty(128, np.int64)
    f_n = np.empty(128, np.int64)
    f_combine = np.empty(128, np.bool_)
    vals = np.empty(128)
    top = 0
    nv = 0
    f_lo[0], f_n[0], f_combine[0] = 0, n, False
    top = 1
    while top > 0:
        top -= 1
        lo, m, combine = f_lo[top], f_n[top], f_combine[top]
        if combine:
            nv -= 1
            vals[nv - 1] = vals[nv - 1] + vals[nv]  # left + right
        elif m <= 128:
            vals[nv] = _block_sum(a, lo, m)
            nv += 1
        else:
            m2 = m // 2
            m2 -= m2 % 8
            f_lo[top], f_n[top], f_combine[top] = lo, m, True
            f_lo[top + 1], f_n[top + 1], f_combine[top + 1] = lo + m2, m - m2, False
            f_lo[top + 2], f_n[top + 2], f_combine[top + 2] = lo, m2, False
            top += 3
    return vals[0]


@njit(cache=True)
def grown(arr, need):  # pragma: no cover - numba
    """``arr``, or a copy at least ``need`` long (doubling) when it is shorter: a buffer a kernel fills."""
    if need <= arr.size:
        return arr
    out = np.empty(max(need, 2 * arr.size), arr.dtype)
    for i in range(arr.size):  # element loops: numba's array-to-array slice assignment costs 3 s to compile
        out[i] = arr[i]
    return out


@njit(cache=True)
def np_sum(a):  # pragma: no cover - numba
    """``np.sum`` of a contiguous float64 array, bit for bit (add.reduce from identity 0)."""
    return 0.0 + _pairwise(a)


@njit(cache=True, nogil=True)
def _shift_rows(flat, n_rows, width, start):  # pragma: no cover - numba
    # a row's values land at or before where they were read (row i at i*k <= i*width + start), so a
    # forward walk never overwrites what it has yet to read
    k = width - start
    for i in range(n_rows):
        src, dst = i * width + start, i * k
        for j in range(k):
            flat[dst + j] = flat[src + j]


def tail_columns(table: np.ndarray, start: int) -> np.ndarray:
    """``table[:, start:]`` as a C-contiguous array in ``table``'s own memory: the rows moved to its front,
    in place, so ``table`` is clobbered. numpy's copy would fault in a second table's pages (person-kp's
    results: 14 MB, ~4 ms)."""
    n, width = table.shape
    if not table.flags.c_contiguous or not table.flags.writeable:
        return np.ascontiguousarray(table[:, start:])
    flat = table.reshape(-1)
    _shift_rows(flat, n, width, start)
    return flat[: n * (width - start)].reshape(n, width - start)


def mean_valid(s: np.ndarray) -> float:
    """The mean of the entries above -1 (-1 marks "no value"), or -1 if there are none: pycocotools'
    ``_summarize``, as lvis-api and xtcocotools read it too. The valid entries are taken in C order, the
    order ``np.mean`` sums them in there."""
    valid = s[s > -1]
    return -1.0 if len(valid) == 0 else float(np.mean(valid))
