"""The ground truth's segmentations in the bytes (polygons, RLE) into flat arrays, then into masks."""

from __future__ import annotations

import numpy as np

from deteval.io.masks import POLYGON_LIMIT, place_runs, run_totals
from deteval.io.polygons import MAX_PIXELS, polygon_runs
from deteval.io.scan.lexer import KERNEL, byte_at, next_item, number_token, skip_ws
from deteval.io.scan.numbers import to_float
from deteval.io.scan.rle_text import masks_of, rle_counts, rle_key, rle_size
from deteval.jit import njit
from deteval.rle import U32, Masks

# a segmentation's row in `seg`: (h, w, a, b, count, kind), the first five laid out as the results'
# `rle` rows so that `masks_of` decodes the strings; h, w are 0 for polygons (the image's size)
_SEG_POLYGONS, _SEG_RUNS, _SEG_STRING = 1, 2, 3  # parts a:b of `parts`; runs a:b of `uruns`; chars a:b
_SPAN_COORDS = 3  # spans' kind for a polygon coordinate (0-2 are the lists' float columns)


@njit(**KERNEL)
def _polygons(buf, pos, n, seg, row, parts, coords, fill, spans, nspan):
    """Polygons ``[[x1, y1, x2, y2, ...], ...]`` at ``pos`` into ``coords`` (``float(token)`` each,
    or a span for Python) and ``parts`` (numbers per part); ``fill`` = (parts, coords) used so far.
    (end or -1, spans). An empty list, a part of fewer than 6 numbers or an odd count, anything
    but number tokens (19+ digit integers included) are -1: the general path's errors."""
    np_ = fill[0]
    nc = fill[1]
    first = np_
    pos = skip_ws(buf, pos + 1, n)
    if byte_at(buf, pos, n) == 93:
        return -1, nspan
    while True:
        if byte_at(buf, pos, n) != 91:
            return -1, nspan
        pos = skip_ws(buf, pos + 1, n)
        count = 0
        while True:
            start = pos
            pos, neg, is_float, mant, e10, too_long = number_token(buf, pos, n)
            if pos < 0 or (too_long and not is_float) or nc >= coords.size:
                return -1, nspan
            v = 0.0
            ok = False
            if not too_long:
                v, ok = to_float(neg, is_float, mant, e10)
            coords[nc] = v
            if not ok:  # Python converts it
                if nspan >= spans.shape[0]:
                    return -1, nspan
                spans[nspan, 0] = _SPAN_COORDS
                spans[nspan, 1] = nc
                spans[nspan, 2] = start
                spans[nspan, 3] = pos
                nspan += 1
            nc += 1
            count += 1
            pos, more = next_item(buf, pos, n, 93)
            if more < 0:
                return -1, nspan
            if more == 0:
                break
        if count < 6 or count % 2 == 1 or np_ >= parts.size:
            return -1, nspan
        parts[np_] = count
        np_ += 1
        pos, more = next_item(buf, pos, n, 93)
        if more < 0:
            return -1, nspan
        if more == 0:
            break
    seg[row, 0] = 0
    seg[row, 1] = 0
    seg[row, 2] = first
    seg[row, 3] = np_
    seg[row, 4] = np_ - first
    seg[row, 5] = _SEG_POLYGONS
    fill[0] = np_
    fill[1] = nc
    return pos, nspan


@njit(**KERNEL)
def _run_list(buf, pos, n, uruns, fill):
    """Uncompressed RLE counts ``[r1, r2, ...]`` at ``pos`` appended to ``uruns`` from ``fill[2]``:
    (end or -1, first, end index). Integer tokens in ``[0, 2**32)`` only (``-0``, ``1.0``, larger
    runs are the general path's)."""
    first = fill[2]
    k = first
    pos = skip_ws(buf, pos + 1, n)
    if byte_at(buf, pos, n) == 93:
        return pos + 1, first, k
    while True:
        pos, neg, is_float, mant, _e10, too_long = number_token(buf, pos, n)
        if pos < 0 or neg or is_float or too_long or mant > 0xFFFFFFFF or k >= uruns.size:
            return -1, first, k
        uruns[k] = mant
        k += 1
        pos, more = next_item(buf, pos, n, 93)
        if more < 0:
            return -1, first, k
        if more == 0:
            fill[2] = k
            return pos, first, k


@njit(**KERNEL)
def _gt_rle(buf, pos, n, seg, row, uruns, fill):
    """``{"size": [h, w], "counts": ...}`` at ``pos``, keys in either order and nothing else, the
    counts a compressed string (checked by ``rle_counts``) or a list of runs: end or -1."""
    if byte_at(buf, pos, n) != 123:
        return -1
    pos = skip_ws(buf, pos + 1, n)
    seen = 0
    while True:
        pos, bit = rle_key(buf, pos, n, seen)
        if pos < 0:
            return -1
        seen |= bit
        if bit == 1:
            pos, h, w = rle_size(buf, pos, n)
            seg[row, 0] = h
            seg[row, 1] = w
        elif byte_at(buf, pos, n) == 34:
            seg[row, 2] = pos + 1
            pos, runs, _total, _ones = rle_counts(buf, pos, n)  # decoded again by masks_of
            seg[row, 3] = pos - 1
            seg[row, 4] = runs
            seg[row, 5] = _SEG_STRING
        elif byte_at(buf, pos, n) == 91:
            pos, first, end = _run_list(buf, pos, n, uruns, fill)
            seg[row, 2] = first
            seg[row, 3] = end
            seg[row, 4] = end - first
            seg[row, 5] = _SEG_RUNS
        else:
            return -1
        if pos < 0:
            return -1
        pos, more = next_item(buf, pos, n, 125)
        if more < 0:
            return -1
        if more == 0:
            break
    if seen != 3:
        return -1
    return pos


@njit(**KERNEL)
def read_segmentation(buf, pos, n, segm, row, spans, nspan):
    """An annotation's segmentation at ``pos`` into ``segm`` = (seg, parts, coords, uruns, fill):
    its row ``seg[row]``, its numbers appended to the flat arrays. (end or -1, spans)."""
    seg, parts, coords, uruns, fill = segm
    c = byte_at(buf, pos, n)
    if c == 91:
        return _polygons(buf, pos, n, seg, row, parts, coords, fill, spans, nspan)
    if c == 123:
        return _gt_rle(buf, pos, n, seg, row, uruns, fill), nspan
    return -1, nspan


def gt_masks(seg: dict, heights: np.ndarray, widths: np.ndarray) -> Masks | None:
    """The scanned segmentations (``parse_gt_columns(raw, segm=True)["annotations"]["segmentation"]``)
    as :class:`Masks`, equal to what ``masks_from_segmentations`` makes of them, polygons
    rasterised at ``heights``/``widths`` (each annotation's image's, float64); or ``None`` for
    what the general path reads otherwise or reports: polygons without a positive integer image
    size, too large for the rasteriser or with a coordinate beyond ±1e6, RLE whose size is not
    its image's, runs not summing to ``h*w``, compressed runs that are negative or too large.
    """
    rows, buf = seg["seg"], seg["buf"]
    kind = rows[:, 5]
    poly = kind == _SEG_POLYGONS
    h = np.where(poly, heights, rows[:, 0])
    w = np.where(poly, widths, rows[:, 1])
    if (h != heights).any() or (w != widths).any():  # RLE of another size than its image's: the
        return None  # general path keeps the RLE's size; rare and suspect enough to leave to it
    if not ((h > 0) & (w > 0) & (h <= MAX_PIXELS) & (w <= MAX_PIXELS) & (h * w <= MAX_PIXELS))[poly].all():
        return None  # no image size (an error), or pycocotools' own rasteriser's (beyond 32-bit indices)
    if (h != np.floor(h)).any() or (w != np.floor(w)).any():
        return None
    hs, ws = h.astype(np.int64), w.astype(np.int64)
    coords = seg["coords"]
    if len(coords) and not (np.abs(coords).max() <= POLYGON_LIMIT):
        return None
    # each kind's runs and where they start, placed per row below
    lengths = rows[:, 4].copy()
    sources = []
    if poly.any():
        runs, offsets = polygon_runs(coords, seg["parts"], rows[poly, 4], hs[poly], ws[poly])
        lengths[poly] = np.diff(offsets)
        sources.append((np.flatnonzero(poly), runs, offsets))
    listed = kind == _SEG_RUNS
    if listed.any():
        values = seg["runs"]
        if len(values) and (values.min() < 0 or values.max() > U32):
            return None  # the general path reports the run
        sources.append((np.flatnonzero(listed), values, np.concatenate([[0], np.cumsum(lengths[listed])])))
    strings = np.flatnonzero(kind == _SEG_STRING)
    if len(strings):
        decoded = masks_of(buf, np.ascontiguousarray(rows[strings]))
        if decoded is None:
            return None
        sources.append((strings, decoded.counts, decoded.offsets))
    offsets = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.empty(offsets[-1], np.uint32)  # every source's runs checked to fit (polygons' always do)
    for where, values, src_off in sources:
        place_runs(flat, offsets, where, values, src_off.astype(np.int64))
    total, ones, _negative = run_totals(flat, offsets)
    if (total != hs * ws).any():
        return None
    return Masks(counts=flat, offsets=offsets, height=hs, width=ws, area=ones.astype(np.float64))
