"""Run-length masks: the container every layer shares, and the RLE primitives io and geometry both use.

A mask is a run of ``counts`` (alternating 0-runs and 1-runs over the
column-major pixels, starting with 0s), as COCO's RLE holds it. This module sits
below :mod:`deteval.io` (which makes masks from files) and :mod:`deteval.geometry`
(which overlaps them), so that neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deteval.jit import njit, run_chunks

U32 = 0xFFFFFFFF  # pycocotools counts pixels in 32-bit unsigned ints


@dataclass(frozen=True)
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
        lengths = np.diff(self.offsets)[rows]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        # position of every kept run in the source: each mask's start, then consecutive
        idx = np.repeat(self.offsets[:-1][rows] - offsets[:-1], lengths) + np.arange(offsets[-1])
        return Masks(self.counts[idx], offsets, self.height[rows], self.width[rows], self.area[rows])


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
        h = np.int64(height[i])
        m = (offsets[i + 1] - offsets[i]) // 2 * 2  # a trailing 0-run adds nothing
        if m == 0 or h == 0:
            continue
        if not _extent_by_columns(counts, offsets[i], m, h, np.int64(width[i]), out[i]):
            _extent_wrapping(counts, offsets[i], m, h, np.int64(width[i]), out[i])


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
