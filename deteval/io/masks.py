"""COCO segmentations (polygons, uncompressed and compressed RLE) into flat run-length arrays.

Every mask becomes a run of ``counts`` (alternating 0-runs and 1-runs over the
column-major pixels, starting with 0s) in one flat uint32 array, with CSR
offsets and the mask's height and width. Polygons are rasterised by
:mod:`deteval.io.polygons`, which reproduces ``pycocotools.mask`` exactly (its
sub-pixel rounding defines COCO's masks); compressed RLE strings are decoded here.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

import numpy as np

from deteval.errors import InputError, accepted
from deteval.io.json_source import python_values
from deteval.jit import njit
from deteval.rle import U32, Masks

__all__ = ["POLYGON_LIMIT", "decode_rle_strings", "masks_from_segmentations", "place_runs", "run_totals"]

# pycocotools rasterises polygons at 5x with int arithmetic and walks the boundary pixel by pixel:
# coordinates near 4e8 overflow it (a crash), and far smaller ones already take gigabytes
POLYGON_LIMIT = 1e6


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
def run_totals(runs, offsets):  # pragma: no cover - numba
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


@njit(cache=True)
def place_runs(flat, offsets, rows, values, src_off):  # pragma: no cover - numba
    """``flat[offsets[rows[i]]:...] = values[src_off[i]:src_off[i + 1]]`` for each i."""
    for i in range(rows.size):
        o = offsets[rows[i]]
        for j in range(src_off[i], src_off[i + 1]):
            flat[o + j - src_off[i]] = values[j]


def _any_per_row(flags: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    rows = np.zeros(len(offsets) - 1, bool)
    hit = np.flatnonzero(flags)
    if len(hit):
        rows[np.searchsorted(offsets, hit, side="right") - 1] = True
    return rows


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
    if h < 0 or w < 0:
        raise InputError(name, record, "a polygon needs the image's height and width in the ground truth 'images'")
    if w == 0 and h > 0:  # pycocotools' rasteriser gives runs that do not sum to 0 pixels: no mask to score
        raise InputError(name, record, f"a polygon on an image of width 0 (and height {h}) has no mask")
    if not seg:
        raise InputError(name, record, "empty polygon list")
    for part in seg:
        if not isinstance(part, list) or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in part):
            raise InputError(name, record, "a polygon must be a list of numbers [x1, y1, x2, y2, ...]")
        if len(part) < 6 or len(part) % 2:
            rule = f"a polygon needs at least 3 points (6 numbers, even count), got {len(part)}"
            raise InputError(name, record, rule)
        # integers clamped (still beyond the limit): one beyond float64 must not overflow the conversion
        values = np.array([min(max(v, -2 * POLYGON_LIMIT), 2 * POLYGON_LIMIT) if type(v) is int else v for v in part])
        if not np.isfinite(values).all():
            raise InputError(name, record, "a polygon has a non-finite coordinate")
        if np.abs(values).max() > POLYGON_LIMIT:
            rule = f"a polygon coordinate beyond ±{POLYGON_LIMIT:g} (pycocotools' rasteriser overflows)"
            raise InputError(name, record, rule)


def _polygon_coords(segs: list, rows: list[int], hs: np.ndarray, ws: np.ndarray):
    """All polygon rows' coordinates at once, when every one passes ``_check_polygons``:
    (coords float64, numbers per part, parts per row); ``None`` when some row may not."""
    if not rows or (hs[rows] <= 0).any() or (ws[rows] <= 0).any():
        return None
    objs = [segs[i] for i in rows]
    per_row = np.fromiter(map(len, objs), np.int64, len(objs))
    parts = list(chain.from_iterable(objs))
    if per_row.min() == 0 or set(map(type, parts)) != {list}:
        return None
    lengths = np.fromiter(map(len, parts), np.int64, len(parts))
    if lengths.min() < 6 or (lengths % 2).any() or not set(map(type, chain.from_iterable(parts))) <= {int, float}:
        return None
    try:
        coords = np.fromiter(chain.from_iterable(parts), np.float64, int(lengths.sum()))
    except OverflowError:  # an integer beyond float64
        return None
    if not np.isfinite(coords).all() or np.abs(coords).max() > POLYGON_LIMIT:
        return None
    return coords, lengths, per_row


def _rasterise_polygons(segs: list, rows: list[int], hs: np.ndarray, ws: np.ndarray, coords) -> dict:
    """Runs of the polygon rows (checked): {row: runs} for the few pycocotools rasterises, and
    (rows, runs, offsets) for the rest, rasterised by :mod:`deteval.io.polygons`."""
    from deteval.io.polygons import MAX_PIXELS, polygon_runs

    if coords is None:  # numbers of other types (numpy scalars ...): read one part at a time
        parts = [part for i in rows for part in segs[i]]
        lengths = np.array([len(part) for part in parts], np.int64)
        coords = np.concatenate([np.asarray(part, np.float64) for part in parts])
        coords = (coords, lengths, np.array([len(segs[i]) for i in rows], np.int64))
    values, lengths, per_row = coords
    rows_arr = np.asarray(rows, np.int64)
    h, w = hs[rows_arr], ws[rows_arr]
    small = (h <= MAX_PIXELS) & (w <= MAX_PIXELS) & (h * np.minimum(w, MAX_PIXELS) <= MAX_PIXELS)  # no overflow
    if small.all():
        runs, offsets = polygon_runs(values, lengths, per_row, hs[rows_arr], ws[rows_arr])
        return {"rows": rows_arr, "runs": runs, "offsets": offsets, "other": {}}
    # images beyond 2**31 pixels (pycocotools' 32-bit indices): pycocotools itself
    from pycocotools import mask as mask_utils

    other = {}
    for i in rows_arr[~small].tolist():
        rles = mask_utils.frPyObjects(segs[i], int(hs[i]), int(ws[i]))
        counts = rles[0]["counts"] if len(segs[i]) == 1 else mask_utils.merge(rles)["counts"]
        other[i] = decode_rle_strings([counts])[0]
    keep = np.repeat(small, per_row)  # parts of the rows rasterised here
    keep_values = np.repeat(keep, lengths)
    runs, offsets = polygon_runs(
        values[keep_values], lengths[keep], per_row[small], hs[rows_arr[small]], ws[rows_arr[small]]
    )
    return {"rows": rows_arr[small], "runs": runs, "offsets": offsets, "other": other}


def masks_from_segmentations(
    segs: list[Any],
    heights: np.ndarray,
    widths: np.ndarray,
    name: str,
    listname: str,
    records: list,
    strict: bool = False,
) -> Masks:
    """Flat RLE for each segmentation, as pycocotools' ``annToRLE`` reads it.

    Polygons are rasterised at the image's size (``heights``/``widths`` per
    row) by :mod:`deteval.io.polygons`, bit-identical to pycocotools; RLE keeps
    its own ``size``. Errors name the record: malformed RLE, runs not summing to
    height*width, negative runs, polygons of fewer than 3 points.

    A polygon on an image whose ``height`` is 0 is an empty mask of that size, as pycocotools
    rasterises it (it overlaps nothing), with one :class:`DetevalWarning` for them all; with
    ``strict`` an :class:`~deteval.errors.InputError`. (A width of 0 with a height is refused:
    pycocotools' runs there do not sum to the image's 0 pixels.) Numbers held as numpy or torch values are
    read as Python's (:func:`deteval.io.json_source.python_values`).
    """
    segs = python_values(segs)

    def record(i: int) -> str:
        rid = records[i].get("id") if isinstance(records[i], dict) else None
        return f"{listname}[{i}]" + (f" (id={rid!r})" if rid is not None else "")

    def check_polygon_rows(rows: list[int]) -> None:
        for i in rows:
            _check_polygons(segs[i], int(hs[i]), int(ws[i]), name, record(i))

    n = len(segs)
    hs, ws = np.zeros(n, np.int64), np.zeros(n, np.int64)
    strings: list[bytes] = [b""] * n
    lists: dict[int, np.ndarray] = {}
    polygon_rows: list[int] = []
    empty_rows: list[int] = []  # polygons on images of size 0
    try:
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
                    if not set(map(type, counts)) <= {int}:
                        raise InputError(name, record(i), "uncompressed RLE 'counts' must be integers")
                    if counts and max(counts) > U32:  # before int64 conversion, which may overflow
                        raise InputError(name, record(i), "RLE has a run beyond 2**32 - 1 (pycocotools stores uint32)")
                    lists[i] = np.array(counts, dtype=np.int64)
                else:
                    rule = f"RLE 'counts' must be a list or a string, got {type(counts).__name__}"
                    raise InputError(name, record(i), rule)
                if not (
                    type(size) in (list, tuple) and len(size) == 2 and type(size[0]) is int and type(size[1]) is int
                ):
                    raise InputError(name, record(i), f"RLE 'size' must be [height, width], got {size!r}")
                if size[0] < 0 or size[1] < 0:
                    raise InputError(name, record(i), f"RLE 'size' must be [height, width], got {size!r}")
                if size[0] * size[1] >= 2**63:
                    rule = f"RLE 'size' {size!r} is too large: height*width must fit in 64 bits"
                    raise InputError(name, record(i), rule)
                hs[i], ws[i] = size
            elif isinstance(seg, list):
                h, w = int(heights[i]), int(widths[i])  # truncated, as pycocotools' frPyObjects takes them
                if h * w >= 2**63 or max(h, w) >= 2**63:
                    size = f"{heights[i]:g}x{widths[i]:g}"
                    raise InputError(name, record(i), f"the image's size {size} is too large for a polygon")
                hs[i], ws[i] = h, w
                if h == 0 and w >= 0:  # an image of height 0: pycocotools' mask is one empty run
                    empty_rows.append(i)
                    lists[i] = np.zeros(1, np.int64)
                    continue
                polygon_rows.append(i)  # checked all at once below
            else:
                raise InputError(name, record(i), f"segmentation must be polygons or RLE, got {type(seg).__name__}")
    except InputError:
        check_polygon_rows(polygon_rows)  # a bad polygon before this record is the first error
        raise

    if empty_rows:
        check_polygon_rows(empty_rows)
        i = empty_rows[0]
        what = (
            f"{listname} are polygons on an image of height 0: empty masks that overlap nothing "
            "(as pycocotools rasterises them)"
        )
        rule = f"a polygon on an image of size {hs[i]}x{ws[i]}"
        accepted(name, strict, len(empty_rows), what, record(i), rule)
    polygons = None
    if polygon_rows:
        coords = _polygon_coords(segs, polygon_rows, hs, ws)
        if coords is None:
            check_polygon_rows(polygon_rows)  # raises for the first bad one (if any)
        polygons = _rasterise_polygons(segs, polygon_rows, hs, ws, coords)
        lists.update(polygons.pop("other"))

    runs, n_runs = decode_rle_strings(strings)
    bad = np.flatnonzero(n_runs < 0)
    if len(bad):
        raise InputError(name, record(int(bad[0])), "malformed compressed RLE string")
    if lists or polygons is not None:
        # three sources of runs: the strings (every row, empty but for compressed RLE), the
        # uncompressed lists and the polygons; each placed as a block per row
        lengths = n_runs.copy()
        pieces = [(np.arange(n), runs, np.concatenate([[0], np.cumsum(n_runs)]))]
        if polygons is not None:
            rows, poly_off = polygons["rows"], polygons["offsets"]
            lengths[rows] = np.diff(poly_off)
            pieces.append((rows, polygons["runs"], poly_off))
        if lists:
            rows = np.fromiter(lists, np.int64, len(lists))
            arrays = [lists[i] for i in rows.tolist()]
            lengths[rows] = [len(a) for a in arrays]
            list_off = np.concatenate([[0], np.cumsum([len(a) for a in arrays])]).astype(np.int64)
            pieces.append((rows, np.concatenate(arrays) if arrays else np.zeros(0, np.int64), list_off))
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        flat = np.empty(offsets[-1], np.int64)
        for rows, values, src_off in pieces:
            if src_off[-1]:
                place_runs(flat, offsets, rows, values, src_off)
    else:
        offsets = np.concatenate([[0], np.cumsum(n_runs)]).astype(np.int64)
        flat = runs
    total, ones, negative = run_totals(flat, offsets)
    too_long = _any_per_row(flat > U32, offsets)
    for i in np.flatnonzero(negative | too_long | (total != hs * ws)):
        if negative[i]:
            raise InputError(name, record(int(i)), "RLE has a negative run")
        if too_long[i]:
            raise InputError(name, record(int(i)), "RLE has a run beyond 2**32 - 1 (pycocotools stores uint32)")
        rule = f"RLE runs sum to {int(total[i])}, not height*width = {hs[i]}*{ws[i]} = {hs[i] * ws[i]}"
        raise InputError(name, record(int(i)), rule)
    return Masks(counts=flat.astype(np.uint32), offsets=offsets, height=hs, width=ws, area=ones.astype(np.float64))
