"""COCO segmentations (polygons, uncompressed and compressed RLE) into flat run-length arrays.

Every mask becomes a run of ``counts`` (alternating 0-runs and 1-runs over the
column-major pixels, starting with 0s) in one flat uint32 array, with CSR
offsets and the mask's height and width. Polygons are rasterised by
``pycocotools.mask`` (its sub-pixel rounding defines COCO's masks, so nothing
else can be bit-identical); compressed RLE strings are decoded here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from deteval.errors import InputError

_U32 = 0xFFFFFFFF  # pycocotools counts pixels in 32-bit unsigned ints
_U32_MAX = _U32
# pycocotools rasterises polygons at 5x with int arithmetic and walks the boundary pixel by pixel:
# coordinates near 4e8 overflow it (a crash), and far smaller ones already take gigabytes
_POLYGON_LIMIT = 1e6


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


@njit(cache=True)
def _count_runs(buf, starts, ends):  # pragma: no cover - numba
    """Runs in each string ``buf[starts[i]:ends[i]]``: chars that end a number; -1 when malformed."""
    n = np.zeros(len(starts), np.int64)
    for i in range(len(starts)):
        more = False
        for p in range(starts[i], ends[i]):
            c = np.int64(buf[p]) - 48
            if c < 0 or c >= 64:
                n[i] = -1
                break
            more = (c & 0x20) != 0
            if not more:
                n[i] += 1
        if more:  # the last number never ended
            n[i] = -1
    return n


@njit(cache=True)
def _decode_into(buf, starts, ends, out, out_off):  # pragma: no cover - numba
    """Decode well-formed strings into ``out[out_off[i]:out_off[i+1]]``."""
    for i in range(len(starts)):
        p, m, o = starts[i], 0, out_off[i]
        while p < ends[i]:
            value, shift, more = np.int64(0), 0, True
            while more:
                c = np.int64(buf[p]) - 48
                value |= (c & 0x1F) << shift
                more = (c & 0x20) != 0
                p += 1
                shift += 5
                if not more and (c & 0x10) != 0:
                    value -= np.int64(1) << shift  # sign-extend
            if m > 2:
                value += out[o + m - 2]
            out[o + m] = value
            m += 1


@njit(cache=True)
def _run_totals(runs, offsets):  # pragma: no cover - numba
    """Per mask: sum of all runs, pixels (odd runs), and whether a run is negative."""
    n = len(offsets) - 1
    total = np.zeros(n, np.int64)
    ones = np.zeros(n, np.int64)
    negative = np.zeros(n, np.bool_)
    for i in range(n):
        for j in range(offsets[i], offsets[i + 1]):
            r = runs[j]
            if r < 0:
                negative[i] = True
            total[i] += r
            if (j - offsets[i]) % 2 == 1:
                ones[i] += r
    return total, ones, negative


def _any_per_row(flags: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    rows = np.zeros(len(offsets) - 1, bool)
    hit = np.flatnonzero(flags)
    if len(hit):
        rows[np.searchsorted(offsets, hit, side="right") - 1] = True
    return rows


@njit(cache=True)
def rle_extents(counts, offsets, height, width):  # pragma: no cover - numba
    """Bounding box ``[x, y, w, h]`` of each mask, as pycocotools 2.0.11's ``toBbox``.

    Each non-empty 1-run spans pixels ``start .. end`` (column-major); the box
    takes their columns, and their rows too unless the run crosses a column,
    which makes the box full height. A mask without a (0-run, 1-run) pair has
    box zeros; one whose 1-runs are all empty keeps the initial ``xs = w``, ``ys = h`` and 32-bit
    wrapped sizes, as pycocotools' unsigned arithmetic leaves them.
    """
    n = len(offsets) - 1
    out = np.zeros((n, 4))
    for i in range(n):
        h = np.int64(height[i])
        m = (offsets[i + 1] - offsets[i]) // 2 * 2  # a trailing 0-run adds nothing
        if m == 0 or h == 0:
            continue
        xs, ys, xe, ye = np.int64(width[i]), h, np.int64(0), np.int64(0)
        cc = np.int64(0)
        for j in range(m):
            start = cc
            run = np.int64(counts[offsets[i] + j])
            cc = (cc + run) & _U32
            if j % 2 == 0 or run == 0:
                continue
            y0 = start % h
            x0 = (start - y0) // h
            end = (cc - 1) & _U32
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
        out[i, 0] = xs
        out[i, 1] = ys
        out[i, 2] = (xe - xs + 1) & _U32
        out[i, 3] = (ye - ys + 1) & _U32
    return out


def decode_rle_strings(strings: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Runs of COCO compressed RLE strings (``counts`` as pycocotools writes them).

    Each run is a little-endian base-32 number in chars ``'0' + 5 bits``; bit
    0x20 of a char says another follows, bit 0x10 of the last is the sign.
    From the fourth run on, a run is stored as its difference to the run two
    before it. Returns ``(runs, n_runs)``: the int64 runs of all strings one
    after another, and each string's count (-1 when malformed, with no runs).
    """
    lengths = np.fromiter((len(x) for x in strings), np.int64, len(strings))
    ends = np.cumsum(lengths)
    starts = ends - lengths
    buf = np.frombuffer(b"".join(strings), np.uint8)
    n_runs = _count_runs(buf, starts, ends)
    ok = n_runs >= 0
    out_off = np.concatenate([[0], np.cumsum(np.where(ok, n_runs, 0))]).astype(np.int64)
    runs = np.empty(out_off[-1], np.int64)
    _decode_into(buf, starts[ok], ends[ok], runs, out_off[:-1][ok])
    return runs, n_runs


def _check_polygons(seg: list, h: int, w: int, name: str, record: str) -> None:
    if h <= 0 or w <= 0:
        raise InputError(name, record, "a polygon needs the image's height and width in the ground truth 'images'")
    if not seg:
        raise InputError(name, record, "empty polygon list")
    for part in seg:
        if not isinstance(part, list) or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in part):
            raise InputError(name, record, "a polygon must be a list of numbers [x1, y1, x2, y2, ...]")
        if len(part) < 6 or len(part) % 2:
            rule = f"a polygon needs at least 3 points (6 numbers, even count), got {len(part)}"
            raise InputError(name, record, rule)
        if not np.isfinite(part).all():
            raise InputError(name, record, "a polygon has a non-finite coordinate")
        if np.abs(part).max() > _POLYGON_LIMIT:
            rule = f"a polygon coordinate beyond ±{_POLYGON_LIMIT:g} (pycocotools' rasteriser overflows)"
            raise InputError(name, record, rule)


def masks_from_segmentations(
    segs: list[Any], heights: np.ndarray, widths: np.ndarray, name: str, listname: str, records: list
) -> Masks:
    """Flat RLE for each segmentation, as pycocotools' ``annToRLE`` reads it.

    Polygons are rasterised at the image's size (``heights``/``widths`` per
    row) by pycocotools, in one call per image size; RLE keeps its own
    ``size``. Errors name the record: malformed RLE, runs not summing to
    height*width, negative runs, polygons of fewer than 3 points.
    """
    from pycocotools import mask as mask_utils

    def record(i: int) -> str:
        rid = records[i].get("id") if isinstance(records[i], dict) else None
        return f"{listname}[{i}]" + (f" (id={rid!r})" if rid is not None else "")

    n = len(segs)
    hs, ws = np.zeros(n, np.int64), np.zeros(n, np.int64)
    strings: list[bytes] = [b""] * n
    lists: dict[int, np.ndarray] = {}
    polygons: dict[tuple[int, int], list[int]] = {}  # image size -> rows
    for i, seg in enumerate(segs):
        if type(seg) is dict:
            size = seg.get("size")
            counts = seg.get("counts")
            if type(counts) is str:
                try:
                    strings[i] = counts.encode("ascii")
                except UnicodeEncodeError:
                    raise InputError(name, record(i), "malformed compressed RLE string") from None
            elif isinstance(counts, bytes):
                strings[i] = counts
            elif isinstance(counts, list):
                if not all(type(c) is int for c in counts):
                    raise InputError(name, record(i), "uncompressed RLE 'counts' must be integers")
                if counts and max(counts) > _U32_MAX:  # before int64 conversion, which may overflow
                    raise InputError(name, record(i), "RLE has a run beyond 2**32 - 1 (pycocotools stores uint32)")
                lists[i] = np.array(counts, dtype=np.int64)
            else:
                rule = f"RLE 'counts' must be a list or a string, got {type(counts).__name__}"
                raise InputError(name, record(i), rule)
            if not (type(size) in (list, tuple) and len(size) == 2 and type(size[0]) is int and type(size[1]) is int):
                raise InputError(name, record(i), f"RLE 'size' must be [height, width], got {size!r}")
            if size[0] < 0 or size[1] < 0:
                raise InputError(name, record(i), f"RLE 'size' must be [height, width], got {size!r}")
            hs[i], ws[i] = size
        elif isinstance(seg, list):
            h, w = int(heights[i]), int(widths[i])
            _check_polygons(seg, h, w, name, record(i))
            polygons.setdefault((h, w), []).append(i)
            hs[i], ws[i] = h, w
        else:
            raise InputError(name, record(i), f"segmentation must be polygons or RLE, got {type(seg).__name__}")

    for (h, w), rows in polygons.items():
        parts = [part for i in rows for part in segs[i]]
        rles = mask_utils.frPyObjects(parts, h, w)  # one RLE per polygon part
        k = 0
        for i in rows:
            m = len(segs[i])
            strings[i] = rles[k]["counts"] if m == 1 else mask_utils.merge(rles[k : k + m])["counts"]
            k += m

    runs, n_runs = decode_rle_strings(strings)
    bad = np.flatnonzero(n_runs < 0)
    if len(bad):
        raise InputError(name, record(int(bad[0])), "malformed compressed RLE string")
    if lists:
        lengths = n_runs.copy()
        for i, arr in lists.items():
            lengths[i] = len(arr)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        flat = np.empty(offsets[-1], np.int64)
        src = np.concatenate([[0], np.cumsum(n_runs)])
        for i in range(n):  # few rows are uncompressed (crowd regions): place the rest as blocks
            flat[offsets[i] : offsets[i + 1]] = lists[i] if i in lists else runs[src[i] : src[i + 1]]
    else:
        offsets = np.concatenate([[0], np.cumsum(n_runs)]).astype(np.int64)
        flat = runs
    total, ones, negative = _run_totals(flat, offsets)
    too_long = _any_per_row(flat > _U32_MAX, offsets)
    for i in np.flatnonzero(negative | too_long | (total != hs * ws)):
        if negative[i]:
            raise InputError(name, record(int(i)), "RLE has a negative run")
        if too_long[i]:
            raise InputError(name, record(int(i)), "RLE has a run beyond 2**32 - 1 (pycocotools stores uint32)")
        rule = f"RLE runs sum to {int(total[i])}, not height*width = {hs[i]}*{ws[i]} = {hs[i] * ws[i]}"
        raise InputError(name, record(int(i)), rule)
    return Masks(counts=flat.astype(np.uint32), offsets=offsets, height=hs, width=ws, area=ones.astype(np.float64))
