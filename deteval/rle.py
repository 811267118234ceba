"""Run-length masks: the container every layer shares, and the RLE primitives io and geometry both use.

A mask is a run of ``counts`` (alternating 0-runs and 1-runs over the
column-major pixels, starting with 0s), as COCO's RLE holds it. This module sits
below :mod:`deteval.io` (which makes masks from files) and :mod:`deteval.geometry`
(which overlaps them), so that neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from deteval.jit import njit, run_chunks

U32 = 0xFFFFFFFF  # pycocotools counts pixels in 32-bit unsigned ints


@dataclass(frozen=True, eq=False)
class Masks:
    """Run-length masks, one per row: ``counts[offsets[i]:offsets[i+1]]`` is row i."""

    counts: np.ndarray  # uint32, all rows' runs
    offsets: np.ndarray  # int64 (N + 1,)
    height: np.ndarray  # int64 (N,)
    width: np.ndarray  # int64 (N,)
    area: np.ndarray  # float64 (N,), pixels of each mask

    def __len__(self) -> int:
        return len(self.height)

    def take(self, rows: np.ndarray) -> Masks:
        """The masks ``rows``, in that order."""
        counts, offsets = _take_spans(self.counts, self.offsets[:-1][rows], self.offsets[1:][rows])
        return Masks(counts, offsets, self.height[rows], self.width[rows], self.area[rows])

    def extents(self, rows: np.ndarray | None = None) -> np.ndarray:
        """:func:`rle_extents` of the masks ``rows`` (all by default)."""
        m = self if rows is None else self.take(rows)
        return rle_extents(m.counts, m.offsets, m.height, m.width)


@dataclass(frozen=True, eq=False)
class CompressedMasks:
    """Run-length masks kept as COCO's compressed RLE text, one string per row: the results file's
    ``counts`` strings where the byte scanner found them (checked, their areas taken), a quarter of
    the memory of their runs. The mask overlap decodes each string where it is needed
    (:func:`deteval.geometry.masks.mask_iou_blocks`); :attr:`counts` decodes them all, once, for
    every other use, so that these stand wherever :class:`Masks` do.

    ``text`` is usually the file's own bytes, memory-mapped (``backing``: its ``check()`` raises if the
    file was rewritten since, and is called before the strings are read); a copy holds just the strings
    (:meth:`compact`, which pickling uses).
    """

    text: np.ndarray  # uint8: row i's string is text[text_start[i]:text_end[i]] as the file holds it (\\ is 2 chars)
    text_start: np.ndarray  # int64 (N,)
    text_end: np.ndarray  # int64 (N,)
    offsets: np.ndarray  # int64 (N + 1,): where row i's runs are in :attr:`counts`
    height: np.ndarray  # int64 (N,)
    width: np.ndarray  # int64 (N,)
    area: np.ndarray  # float64 (N,), pixels of each mask
    backing: Any = None  # the memory-mapped file ``text`` lies in (its ``check()``), or None

    def __len__(self) -> int:
        return len(self.height)

    def strings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(text, text_start, text_end)``, once the file they lie in is checked unchanged; the text read-only
        (as a file's is: one type for the kernels)."""
        if self.backing is not None:
            self.backing.check()
        text = self.text.view()
        text.flags.writeable = False
        return text, self.text_start, self.text_end

    @cached_property
    def counts(self) -> np.ndarray:
        """uint32, all rows' runs (decoded on first use)."""
        counts = np.empty(self.offsets[-1], np.uint32)
        text, start, end = self.strings()
        run_chunks(_decode_range, len(self), end - start, text, start, end, counts, self.offsets)
        return counts

    def extents(self, rows: np.ndarray | None = None) -> np.ndarray:
        """:func:`rle_extents` of the masks ``rows`` (all by default), each decoded into scratch."""
        rows = np.arange(len(self)) if rows is None else np.asarray(rows)
        rows = np.flatnonzero(rows) if rows.dtype == bool else rows
        rows = np.ascontiguousarray(rows, np.int64)
        out = np.zeros((len(rows), 4))
        text, start, end = self.strings()
        cost = end[rows] - start[rows]
        masks = (text, start, end, self.offsets, self.height, self.width)
        run_chunks(_text_extents_range, len(rows), cost, rows, *masks, out)
        return out

    def take(self, rows: np.ndarray) -> CompressedMasks:
        """The masks ``rows``, in that order (their strings where they are)."""
        runs = np.diff(self.offsets)[rows]
        offsets = np.zeros(len(runs) + 1, np.int64)
        np.cumsum(runs, out=offsets[1:])
        return CompressedMasks(
            self.text, self.text_start[rows], self.text_end[rows], offsets,
            self.height[rows], self.width[rows], self.area[rows], self.backing,
        )  # fmt: skip

    def compact(self) -> CompressedMasks:
        """These masks with a text of their own: just their strings, one after another."""
        text, at = _take_spans(*self.strings())
        return CompressedMasks(text, at[:-1], at[1:], self.offsets, self.height, self.width, self.area)

    def __reduce__(self):
        # pickled with its strings only: not the whole file (nor its map, which cannot be pickled)
        m = self.compact()
        return CompressedMasks, (m.text, m.text_start, m.text_end, m.offsets, m.height, m.width, m.area)


def concat_masks(parts: list[Masks]) -> Masks:
    """The rows of ``parts``, one after another, as one :class:`Masks`."""
    if not parts:
        empty = np.zeros(0, np.int64)
        return Masks(np.zeros(0, np.uint32), np.zeros(1, np.int64), empty, empty, np.zeros(0))
    starts = np.cumsum([0] + [int(p.offsets[-1]) for p in parts[:-1]])
    return Masks(
        np.concatenate([p.counts for p in parts]),
        np.concatenate([[0]] + [p.offsets[1:] + s for p, s in zip(parts, starts)]).astype(np.int64),
        *(np.concatenate([getattr(p, f) for p in parts]) for f in ("height", "width", "area")),
    )


def _take_spans(values: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``values[start[i]:end[i]]`` for each i, one after another, and their offsets."""
    lengths = end - start
    kept = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    # position of every kept value in the source: each span's start, then consecutive
    idx = np.repeat(start - kept[:-1], lengths) + np.arange(kept[-1])
    return values[idx], kept


@njit(cache=True)
def decode_counts(text, p, stop, out, o):  # pragma: no cover - numba
    """Decode the compressed RLE string ``text[p:stop]`` into ``out[o:]``: (runs, their sum, the sum
    of the odd ones, whether one is negative or beyond 2**32 - 1, which is then written as 0).

    pycocotools' ``rleFrString``: each run is a little-endian base-32 number in chars ``'0' + 5
    bits``, bit 0x20 saying another char follows and bit 0x10 of the last one the sign; from the
    fourth run on a run is stored as its difference to the run two before it. A backslash is read
    with the one that escapes it (JSON's ``\\\\``). The chars are taken as checked (``'0'`` to ``'o'``,
    every number ending within the string).
    """
    m = 0
    total = np.int64(0)
    ones = np.int64(0)
    bad = False
    prev2 = prev1 = np.int64(0)  # the last two runs
    while p < stop:
        c = np.int64(text[p])
        p += 2 if c == 92 else 1
        c -= 48
        if c < 32:  # one char, most runs: five bits and a sign
            value = c - 32 if c >= 16 else c
        else:
            value = c & 0x1F
            shift = 5
            more = True
            while more:
                c = np.int64(text[p])
                p += 2 if c == 92 else 1
                c -= 48
                value |= (c & 0x1F) << shift
                more = (c & 0x20) != 0
                shift += 5
                if not more and (c & 0x10) != 0:
                    value -= np.int64(1) << shift  # sign-extend
        if m > 2:
            value += prev2
        if value < 0 or value > U32:
            bad = True
            value = 0
        out[o + m] = value
        total += value
        if m & 1:
            ones += value
        prev2, prev1 = prev1, value
        m += 1
    return m, total, ones, bad


@njit(cache=True, nogil=True)
def _text_extents_range(lo, hi, rows, text, start, end, offsets, height, width, out):  # pragma: no cover - numba
    most = 0
    for k in range(lo, hi):
        most = max(most, offsets[rows[k] + 1] - offsets[rows[k]])
    runs = np.empty(most, np.uint32)
    for k in range(lo, hi):
        i = rows[k]
        m = decode_counts(text, start[i], end[i], runs, 0)[0]
        mask_extent(runs, 0, m, height[i], width[i], out[k])


@njit(cache=True, nogil=True)
def _decode_range(lo, hi, text, start, end, counts, offsets):  # pragma: no cover - numba
    for i in range(lo, hi):
        decode_counts(text, start[i], end[i], counts, offsets[i])


def rle_extents(counts: np.ndarray, offsets: np.ndarray, height: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Bounding box ``[x, y, w, h]`` (float64 ``(N, 4)``) of each mask, as pycocotools 2.0.11's ``toBbox``.

    Each non-empty 1-run spans pixels ``start .. end`` (column-major); the box
    takes their columns, and their rows too unless the run crosses a column,
    which makes the box full height. A mask without a (0-run, 1-run) pair has
    box zeros; one whose 1-runs are all empty keeps the initial ``xs = w``, ``ys = h`` and 32-bit
    wrapped sizes, as pycocotools' unsigned arithmetic leaves them. ``counts`` as the
    :class:`Masks` hold them (uint32); masks are done in ranges on threads.
    """
    counts = np.ascontiguousarray(counts, np.uint32)
    offsets = np.ascontiguousarray(offsets, np.int64)
    out = np.zeros((len(offsets) - 1, 4))
    run_chunks(
        _extents_range, len(out), np.diff(offsets), counts, offsets,
        np.ascontiguousarray(height, np.int64), np.ascontiguousarray(width, np.int64), out,
    )  # fmt: skip
    return out


@njit(cache=True, nogil=True)
def _extents_range(lo, hi, counts, offsets, height, width, out):  # pragma: no cover - numba
    for i in range(lo, hi):
        mask_extent(counts, offsets[i], offsets[i + 1], height[i], width[i], out[i])


@njit(cache=True)
def mask_extent(counts, start, stop, height, width, box):  # pragma: no cover - numba
    """toBbox of the mask ``counts[start:stop]`` into ``box`` (left as it is, zeros, when the mask
    has no (0-run, 1-run) pair or no rows)."""
    h = np.int64(height)
    m = (stop - start) // 2 * 2  # a trailing 0-run adds nothing
    if m == 0 or h == 0:
        return
    if not _extent_by_columns(counts, start, m, h, np.int64(width), box):
        _extent_wrapping(counts, start, m, h, np.int64(width), box)


@njit(cache=True)
def _extent_by_columns(counts, o, m, h, w, box):  # pragma: no cover - numba
    """The extent of one mask, following (column, row) along the runs: a division only where a run
    crosses columns, where toBbox divides at every 1-run. False (nothing written) if the runs
    reach 2**32, where toBbox's unsigned positions wrap: :func:`_extent_wrapping` then."""
    xs, ys, xe, ye = w, h, np.int64(0), np.int64(0)
    col = row = total = np.int64(0)
    for j in range(m):
        run = np.int64(counts[o + j])
        total += run
        if j & 1 and run > 0:
            end = row + run - 1  # the run's last pixel, as an offset from the top of this column
            xs = min(xs, col)
            if end < h:
                ys = min(ys, row)
                ye = max(ye, end)
                xe = max(xe, col)
            else:  # crosses a column: full height
                xe = max(xe, col + end // h)
                ys = 0
                ye = h - 1
        row += run
        if row >= h:  # into the next column, usually; further ones divide
            row -= h
            col += 1
            if row >= h:
                q = row // h
                col += q
                row -= q * h
    if total > U32:
        return False
    box[0] = xs
    box[1] = ys
    box[2] = (xe - xs + 1) & U32
    box[3] = (ye - ys + 1) & U32
    return True


@njit(cache=True)
def _extent_wrapping(counts, o, m, h, w, box):  # pragma: no cover - numba
    """toBbox step by step, positions in 32 bits as pycocotools keeps them."""
    xs, ys, xe, ye = w, h, np.int64(0), np.int64(0)
    cc = np.int64(0)
    for j in range(m):
        start = cc
        run = np.int64(counts[o + j])
        cc = (cc + run) & U32
        if j % 2 == 0 or run == 0:
            continue
        y0 = start % h
        x0 = (start - y0) // h
        end = (cc - 1) & U32
        y1 = end % h
        x1 = (end - y1) // h
        xs = min(xs, x0)
        xe = max(xe, x1)
        if x0 < x1:
            ys = 0
            ye = h - 1
        else:
            ys = min(ys, y0)
            ye = max(ye, y1)
    box[0] = xs
    box[1] = ys
    box[2] = (xe - xs + 1) & U32
    box[3] = (ye - ys + 1) & U32


def masks_from_binary(masks: np.ndarray) -> Masks:
    """Run-length :class:`Masks` of binary masks ``(n, height, width)`` (nonzero: inside): the runs
    ``pycocotools.mask.encode`` gives of them, bit for bit.

    The runs go column by column (COCO's order) but are found row by row, where the array is
    contiguous: a pixel ends a run where it differs from the one above it (or, at the top of a
    column, from the bottom of the column before), so the array is neither transposed nor written
    as strings. (pycocotools' string encoder also writes a byte past its buffer when every run takes
    six characters, which masks of 2**24 pixels a run can reach.)

    Parameters
    ----------
    masks : ndarray of shape (n, height, width)
        Any numeric or bool dtype; ``height * width`` at most ``2**32 - 1`` (runs are 32-bit).

    Raises
    ------
    ValueError
        Not three dimensions, or masks of more than ``2**32 - 1`` pixels.
    """
    arr = np.asarray(masks)
    if arr.ndim != 3:
        raise ValueError(f"masks must be an array of shape (n, height, width), got {arr.shape}")
    n, h, w = arr.shape
    if n and h * w > U32:
        raise ValueError(f"masks of {h}x{w} pixels: more than 2**32 - 1, which RLE's 32-bit runs cannot hold")
    if arr.dtype == np.bool_:
        arr = arr.view(np.uint8)
    elif arr.dtype != np.uint8:
        arr = (arr != 0).view(np.uint8)
    arr = np.ascontiguousarray(arr)
    if not arr.flags.writeable:  # one type for the kernels (a read-only array is another to numba)
        arr = arr.copy()
    changes_by_column = np.zeros((n, w), np.int64)
    changes_by_row = np.zeros((n, h), np.int64)
    changes = _count_changes(arr, changes_by_column, changes_by_row)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(changes + 1, out=offsets[1:])
    counts = np.empty(offsets[-1], np.uint32)
    area = np.empty(n, np.float64)
    _runs_from_changes(arr, changes_by_column, changes_by_row, changes, offsets, counts, area)
    return Masks(counts, offsets, np.full(n, h, np.int64), np.full(n, w, np.int64), area)


@njit(cache=True)
def _count_changes(m, by_column, by_row):  # pragma: no cover - numba
    """Pixels that differ from the one before them in column-major order, per column, per row and in all,
    of each mask (the first pixel is compared with 0)."""
    n, h, w = m.shape
    total = np.zeros(n, np.int64)
    if h == 0 or w == 0:
        return total
    for i in range(n):
        col, row_changes = by_column[i], by_row[i]
        top, bottom = m[i, 0], m[i, h - 1]
        c = np.int64(top[0] != 0)
        col[0] += c
        for x in range(1, w):
            d = np.int64(top[x] != bottom[x - 1])
            col[x] += d
            c += d
        row_changes[0] = c
        t = c
        for y in range(1, h):
            a, b = m[i, y], m[i, y - 1]
            c = 0
            for x in range(w):  # branch-free: it vectorises where compiled for the host CPU (numba's JIT)
                d = np.int64(a[x] != b[x])
                col[x] += d
                c += d
            row_changes[y] = c
            t += c
        total[i] = t
    return total


@njit(cache=True)
def _runs_from_changes(m, by_column, by_row, changes, offsets, counts, area):  # pragma: no cover - numba
    """Each mask's runs into ``counts[offsets[i]:offsets[i + 1]]`` and its pixels into ``area[i]``: the
    column-major positions of its changes, placed column by column, then differenced."""
    n, h, w = m.shape
    for i in range(n):
        k = changes[i]
        at = np.empty(k, np.int64)
        if k > 0:
            slot = np.empty(w, np.int64)
            s = 0
            for x in range(w):
                slot[x] = s
                s += by_column[i, x]
            top, bottom = m[i, 0], m[i, h - 1]
            if by_row[i, 0] > 0:
                if top[0] != 0:
                    at[slot[0]] = 0
                    slot[0] += 1
                for x in range(1, w):
                    if top[x] != bottom[x - 1]:
                        at[slot[x]] = x * h
                        slot[x] += 1
            for y in range(1, h):
                if by_row[i, y] == 0:  # most rows of a small object's mask
                    continue
                a, b = m[i, y], m[i, y - 1]
                for x in range(w):
                    if a[x] != b[x]:
                        at[slot[x]] = x * h + y
                        slot[x] += 1
        o, before, pixels = offsets[i], np.int64(0), np.int64(0)
        for j in range(k):
            counts[o + j] = at[j] - before
            if j % 2 == 1:
                pixels += at[j] - before
            before = at[j]
        counts[o + k] = h * w - before
        if k % 2 == 1:
            pixels += h * w - before
        area[i] = pixels
