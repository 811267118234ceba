"""A results file scanned in pieces, on threads: cut at commas between records, joined in file order."""

from __future__ import annotations

import mmap
import re
import sys
import threading
from contextlib import suppress
from functools import partial

import numpy as np

from deteval.io.scan.lexer import MAX_DEPTH
from deteval.io.scan.result_records import M_READ, min_record_bytes, scan_result_records
from deteval.jit import SharedTasks
from deteval.tuning import TUNING

_RECORD_GAP = re.compile(rb"\}[ \t\n\r]*,[ \t\n\r]*\{")
_MADV_POPULATE_READ = 22  # Linux's; Python's mmap does not name it


def cut_pieces(raw: bytes, threads: int) -> list[tuple[int, int]]:
    """Byte ranges covering ``raw`` but for the commas between them: a few per thread for a large file.

    Each cut is a comma between ``}`` and ``{`` near an even share of the bytes. It
    separates two records when the piece before it scans as whole records; a comma that
    does not (one inside a string, or between nested objects) fails that scan.
    """
    n_pieces = max(1, min(TUNING.pieces_per_thread * threads, len(raw) // TUNING.piece_bytes))
    bounds, lo = [], 0
    for k in range(1, n_pieces):
        gap = _RECORD_GAP.search(raw, max(lo, len(raw) * k // n_pieces))
        if gap is None:
            break
        comma = raw.find(b",", gap.start())
        bounds.append((lo, comma))
        lo = comma + 1
    return [*bounds, (lo, len(raw))]


class PieceScan:
    """:func:`scan_result_records` over each piece of ``raw`` (byte ranges ``bounds``), taken by ``helpers`` pool
    threads and by the caller of :meth:`rows`, whichever is free. Each piece's rows are moved down behind
    the previous piece's as soon as every piece before it is scanned, by the thread that scanned it last."""

    def __init__(
        self, raw: bytes, buf: np.ndarray, mode: int, width: int, bounds: list[tuple[int, int]], helpers: int
    ) -> None:
        """``width``: the numbers in a row of ``bbox`` (4, an oriented box's 5, keypoints' 4 + 3K)."""
        self.raw, self.buf, self.mode, self.width, self.bounds = raw, buf, mode, width, bounds
        caps = [(hi - lo) // min_record_bytes(width) + 1 for lo, hi in bounds]
        self.first = np.concatenate([[0], np.cumsum(caps)]).astype(np.int64)
        cap = int(self.first[-1])
        # each column sized for the most records the bytes could hold, in a map of its own: a piece's rows
        # are written in its stretch, then moved down, their pages there given back (and the tail's, joined)
        shapes = ((cap,), (cap,), (cap, self.width), (cap,), (cap,), (cap if mode == M_READ else 0, 7))
        dtypes = (np.int64, np.int64, np.float64, np.float64, np.int64, np.int64)
        self.maps = [_mapped(shape, dtype) for shape, dtype in zip(shapes, dtypes)]
        self.image_id, self.category_id, self.bbox, self.score, self.present, self.rle = (a for a, _ in self.maps)
        # (kind, slot, start, end) for Python, at most one per number; pages touched only if used
        self.spans = [np.empty(((width + 1) * c, 4), np.int64) for c in caps]
        self.scans: list = [None] * len(bounds)
        self.placed = self.nrec = 0  # pieces, and their rows, in place
        self.placed_spans: list[np.ndarray] = []
        self.lock = threading.Lock()
        self.tasks = SharedTasks([partial(self._scan, k) for k in range(len(bounds))], helpers)

    def _scan(self, k: int) -> None:
        (lo, hi), rows = self.bounds[k], slice(self.first[k], self.first[k + 1])
        load_pages(self.raw, lo, hi)
        scan = scan_result_records(
            self.buf[lo:hi], k == 0, k == len(self.bounds) - 1, self.mode, self.image_id[rows],
            self.category_id[rows], self.bbox[rows], self.score[rows], self.present[rows], self.rle[rows],
            self.spans[k], np.empty(MAX_DEPTH, np.uint8),
        )  # fmt: skip
        if self.mode != M_READ:  # masks read: their strings are read from the file's pages, as evaluated
            release_pages(self.raw, lo, hi)
        self.scans[k] = scan  # done: another thread may place it from here on
        with self.lock:  # in file order: a piece's place is known once the pieces before it are placed
            while self.placed < len(self.bounds) and self.scans[self.placed] is not None:
                if not self.scans[self.placed][0]:
                    break  # a failed piece: rows() scans the whole file again
                self._place(self.placed)
                self.placed += 1

    def _place(self, k: int) -> None:
        """Piece ``k``'s rows moved down over the gap the spare capacity before it left."""
        (lo, _), (_, n_rows, n_spans) = self.bounds[k], self.scans[k]
        src = slice(self.first[k], self.first[k] + n_rows)
        dst = slice(self.nrec, self.nrec + n_rows)
        for column, mapped in self.maps:
            if len(column) and src != dst:
                column[dst] = column[src]  # the rows of later pieces lie beyond: they are not touched
                if self.mode == M_READ:  # the ground truth's masks are made meanwhile: the peak is the sum
                    row = column[:1].nbytes  # (boxes: giving pages back costs more time than they weigh)
                    release_range(mapped, max(src.start, dst.stop) * row, src.stop * row)
        if len(self.rle):
            self.rle[dst, 2:4] += lo  # the counts strings' places in the file
        s = self.spans[k][:n_spans]
        s[:, 1] += np.where(s[:, 0] == 0, self.width * self.nrec, self.nrec)  # a box coordinate's slot, or a score's
        s[:, 2:] += lo
        self.placed_spans.append(s)
        self.nrec += n_rows

    def rows(self):
        """``(image_id, category_id, bbox, score, present, rle, spans)`` in file order, the pieces joined (masks
        read: ``rle[i, 2:4]`` the place of row i's counts string in the file); if any piece fails, the whole
        file scanned again as one. ``None`` where that declines."""
        self.tasks.results()
        if self.placed < len(self.bounds):
            if len(self.bounds) == 1:
                return None
            return PieceScan(self.raw, self.buf, self.mode, self.width, [(0, len(self.raw))], 0).rows()
        for column, mapped in self.maps:
            release_range(mapped, self.nrec * column[:1].nbytes, None)
        columns = (column[: self.nrec] for column, _ in self.maps)
        return (*columns, np.concatenate(self.placed_spans))


def _mapped(shape: tuple[int, ...], dtype: type = np.float64) -> tuple[np.ndarray, mmap.mmap | None]:
    """An array (zeros until written) in an anonymous memory map of its own, and the map.

    Sized for the most records the bytes could hold, such a column is written in each piece's
    stretch and the rows then moved down together: :func:`release_range` gives back what is left.
    """
    count, size = int(np.prod(shape)), np.dtype(dtype).itemsize
    if not hasattr(mmap, "MAP_PRIVATE"):  # not POSIX: an ordinary array, nothing given back
        return np.empty(shape, dtype), None
    # private: pages given back are freed (a shared map's would stay allocated, out of this process's count)
    mapped = mmap.mmap(-1, max(count * size, 1), flags=mmap.MAP_PRIVATE)
    return np.frombuffer(mapped, dtype, count).reshape(shape), mapped


def release_range(mapped: mmap.mmap | None, start: int, end: int | None) -> None:
    """The whole pages of a private anonymous map's bytes ``start..end-1`` (to its end if ``end`` is None)
    freed: read again, they are zeros."""
    if mapped is None or not hasattr(mmap, "MADV_DONTNEED"):
        return
    start = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE
    end = len(mapped) if end is None else min(end, len(mapped)) // mmap.PAGESIZE * mmap.PAGESIZE
    if end > start:
        with suppress(OSError, ValueError):  # advice only
            mapped.madvise(mmap.MADV_DONTNEED, start, end - start)


def load_pages(raw, lo: int, hi: int) -> None:
    """The pages of a memory-mapped file's bytes ``lo..hi-1`` mapped at once (``MADV_POPULATE_READ``, Linux
    5.14+), not one fault at a time: a file mapped without them has in memory only the pieces being scanned."""
    if isinstance(raw, mmap.mmap) and hi > lo and sys.platform.startswith("linux"):
        start = lo // mmap.PAGESIZE * mmap.PAGESIZE
        with suppress(OSError, ValueError):  # advice only: older kernels fault the pages in as they are read
            raw.madvise(_MADV_POPULATE_READ, start, hi - start)


def release_pages(raw, lo: int, hi: int) -> None:
    """The whole pages of a memory-mapped file's bytes ``lo..hi-1`` dropped from this process's memory: a
    piece scanned is read again only for a rare number Python converts, from the page cache. Without
    them the peak memory of a large load is lower (the ground truth is read meanwhile)."""
    if not isinstance(raw, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
        return
    start = -(-lo // mmap.PAGESIZE) * mmap.PAGESIZE
    end = hi // mmap.PAGESIZE * mmap.PAGESIZE
    if end > start:
        with suppress(OSError, ValueError):  # advice only
            raw.madvise(mmap.MADV_DONTNEED, start, end - start)
