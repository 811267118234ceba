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


@dataclass(frozen=True)
class Masks:
    """Run-length masks, one per row: ``counts[offsets[i]:offsets[i+1]]`` is row i."""

    counts: np.ndarray  # uint32, all rows' runs
    offsets: np.ndarray  # int64 (N + 1,)
    height: np.ndarray  # int64 (N,)
    width: np.ndarray  # int64 (N,)

    def __len__(self) -> int:
        return len(self.height)

    def take(self, rows: np.ndarray) -> Masks:
        parts = [self.counts[self.offsets[r] : self.offsets[r + 1]] for r in rows]
        lengths = np.array([len(p) for p in parts], np.int64)
        return Masks(
            counts=np.concatenate(parts).astype(np.uint32) if parts else np.zeros(0, np.uint32),
            offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
            height=self.height[rows],
            width=self.width[rows],
        )


@njit(cache=True)
def _decode_strings(buf, starts, ends, out, out_off):  # pragma: no cover - numba
    """Decode each ``buf[starts[i]:ends[i]]`` into ``out[out_off[i]:]``; returns run counts (-1: malformed)."""
    n_runs = np.zeros(len(starts), np.int64)
    for i in range(len(starts)):
        p, m, o = starts[i], 0, out_off[i]
        while p < ends[i]:
            value, shift, more = 0, 0, True
            while more:
                if p >= ends[i]:
                    m = -1
                    break
                c = np.int64(buf[p]) - 48
                if c < 0 or c >= 64:
                    m = -1
                    break
                value |= (c & 0x1F) << shift
                more = (c & 0x20) != 0
                p += 1
                shift += 5
                if not more and (c & 0x10) != 0:
                    value -= np.int64(1) << shift  # sign-extend
            if m < 0:
                break
            if m > 2:
                value += out[o + m - 2]
            out[o + m] = value
            m += 1
        n_runs[i] = m
    return n_runs


def decode_rle_strings(strings: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Runs of COCO compressed RLE strings (``counts`` as pycocotools writes them).

    Each run is a little-endian base-32 number in chars ``'0' + 5 bits``; bit
    0x20 of a char says another follows, bit 0x10 of the last is the sign.
    From the fourth run on, a run is stored as its difference to the run two
    before it. Returns ``(runs, n_runs)``: int64 runs of string i at
    ``runs[sum(n_runs[:i]):][:n_runs[i]]``, ``n_runs[i] == -1`` when malformed.
    """
    lengths = np.array([len(x) for x in strings], np.int64)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    buf = np.frombuffer(b"".join(strings), np.uint8)
    out = np.zeros(int(lengths.sum()), np.int64)  # a run takes at least one char
    n_runs = _decode_strings(buf, starts, ends, out, starts)
    keep = np.concatenate([np.arange(s, s + max(n, 0)) for s, n in zip(starts, n_runs)]) if len(strings) else []
    return out[np.asarray(keep, np.int64)], n_runs


def _check_size(seg: dict, name: str, record: str) -> tuple[int, int]:
    size = seg.get("size")
    if not (isinstance(size, (list, tuple)) and len(size) == 2 and all(type(v) is int and v >= 0 for v in size)):
        raise InputError(name, record, f"RLE 'size' must be [height, width], got {size!r}")
    return size[0], size[1]


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


def masks_from_segmentations(
    segs: list[Any], heights: np.ndarray, widths: np.ndarray, name: str, listname: str, records: list
) -> Masks:
    """Flat RLE for each segmentation, as pycocotools' ``annToRLE`` reads it.

    Polygons are rasterised at the image's size (``heights``/``widths`` per
    row); RLE keeps its own ``size``. Errors name the record: malformed RLE,
    runs not summing to height*width, polygons of fewer than 3 points.
    """
    from pycocotools import mask as mask_utils

    n = len(segs)
    hs, ws = np.zeros(n, np.int64), np.zeros(n, np.int64)
    strings: list[bytes] = [b""] * n
    lists: dict[int, np.ndarray] = {}

    def record(i: int) -> str:
        rid = records[i].get("id") if isinstance(records[i], dict) else None
        return f"{listname}[{i}]" + (f" (id={rid!r})" if rid is not None else "")

    for i, seg in enumerate(segs):
        if isinstance(seg, list):
            h, w = int(heights[i]), int(widths[i])
            _check_polygons(seg, h, w, name, record(i))
            strings[i] = mask_utils.merge(mask_utils.frPyObjects(seg, h, w))["counts"]
        elif isinstance(seg, dict):
            h, w = _check_size(seg, name, record(i))
            counts = seg.get("counts")
            if isinstance(counts, list):
                if not all(type(c) is int for c in counts):
                    raise InputError(name, record(i), "uncompressed RLE 'counts' must be integers")
                lists[i] = np.array(counts, dtype=np.int64)
            elif isinstance(counts, (str, bytes)):
                strings[i] = counts.encode("ascii", "replace") if isinstance(counts, str) else counts
            else:
                rule = f"RLE 'counts' must be a list or a string, got {type(counts).__name__}"
                raise InputError(name, record(i), rule)
        else:
            raise InputError(name, record(i), f"segmentation must be polygons or RLE, got {type(seg).__name__}")
        hs[i], ws[i] = h, w

    runs, n_runs = decode_rle_strings(strings)
    bad = np.flatnonzero(n_runs < 0)
    if len(bad):
        raise InputError(name, record(int(bad[0])), "malformed compressed RLE string")
    parts = np.split(runs, np.cumsum(n_runs)[:-1]) if n else []
    for i, arr in lists.items():
        parts[i] = arr
    lengths = np.array([len(p) for p in parts], np.int64)
    flat = np.concatenate(parts) if n else np.zeros(0, np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    csum = np.concatenate([[0], np.cumsum(flat)])
    sums = csum[offsets[1:]] - csum[offsets[:-1]]
    negative = np.zeros(n, bool)
    negative[np.repeat(np.arange(n), lengths)[flat < 0]] = True
    for i in np.flatnonzero(negative | (sums != hs * ws)):
        if negative[i]:
            raise InputError(name, record(int(i)), "RLE has a negative run")
        rule = f"RLE runs sum to {int(sums[i])}, not height*width = {hs[i]}*{ws[i]} = {hs[i] * ws[i]}"
        raise InputError(name, record(int(i)), rule)
    return Masks(counts=flat.astype(np.uint32), offsets=offsets, height=hs, width=ws)
