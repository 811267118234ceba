"""Compressed RLE in the bytes: ``{"size": [h, w], "counts": "..."}`` checked, then decoded.

The strings are checked while the file is scanned (only what pycocotools'
decoder reads the same way is taken) and decoded afterwards, on threads,
straight from the bytes: no Python string is made per mask. The ground
truth's become runs (:func:`masks_of`); results' stay text, where they are
in the file's bytes (:func:`compressed_masks_of`): half a million masks'
runs take four times their text's memory, and as long to write as to
overlap, and a copy of the text would be 90 MB of fresh pages on ``coco-segm``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval.io.scan.lexer import INLINE, KERNEL, byte_at, next_item, number_token, skip_ws, word_at
from deteval.jit import njit, run_chunks
from deteval.rle import CompressedMasks, Masks, decode_counts

_SIZE = np.frombuffer(b"size", np.uint8).copy()
_COUNTS = np.frombuffer(b"counts", np.uint8).copy()
_RLE_MAX_SIDE = 1 << 31  # RLE height and width below this: their product fits int64 with room
_RLE_MAX_CHARS = 12  # chars of one RLE number (60 bits); longer ones are the general path's


@njit(**KERNEL)
def rle_counts(buf, pos, n):
    """The compressed RLE string whose opening quote is at ``pos``, decoded as it is checked:
    (position after it or -1, runs, their sum, the sum of the odd ones). The sum is -1 where a run
    is negative or beyond 2**32 - 1 (the general path reports it).

    Taken only where the general path decodes the same runs: chars ``'0'`` to ``'o'`` (48 to 111,
    the alphabet of pycocotools' strings) with the escape ``\\\\`` for the backslash among them,
    every number ending within the string and at most ``_RLE_MAX_CHARS`` chars long. Anything else
    (other escapes, other chars, a number left open) is -1: the general path's. The runs are those
    of :func:`deteval.rle.decode_counts`.
    """
    pos += 1
    runs = np.int64(0)
    chars = 0
    value = total = ones = prev2 = prev1 = np.int64(0)
    shift = 0
    bad = False
    while pos < n:
        c = np.int64(buf[pos])
        if c == 34:
            if chars != 0:
                return -1, runs, total, ones  # the last number never ended
            return pos + 1, runs, -1 if bad else total, ones
        if c == 92:
            if byte_at(buf, pos + 1, n) != 92:
                return -1, runs, total, ones
            pos += 2
        elif 48 <= c <= 111:
            pos += 1
        else:
            return -1, runs, total, ones
        chars += 1
        c -= 48
        value |= (c & 0x1F) << shift
        shift += 5
        if (c & 0x20) == 0:  # the number ends: sign, then a difference from the fourth run on
            if c & 0x10:
                value -= np.int64(1) << shift
            if runs > 2:
                value += prev2
            if value < 0 or value > 0xFFFFFFFF:
                bad = True
                value = 0
            total += value
            if runs & 1:
                ones += value
            prev2, prev1 = prev1, value
            runs += 1
            chars = 0
            value = 0
            shift = 0
        elif chars >= _RLE_MAX_CHARS:
            return -1, runs, total, ones
    return -1, runs, total, ones


@njit(**KERNEL)
def rle_size(buf, pos, n):
    """An RLE ``size`` ``[h, w]`` at ``pos``: (end or -1, h, w). Plain integer tokens below
    ``_RLE_MAX_SIDE`` only (``-0``, ``4.0``, ``true`` ... are the general path's)."""
    h = np.int64(0)
    w = np.int64(0)
    if byte_at(buf, pos, n) != 91:
        return -1, h, w
    pos = skip_ws(buf, pos + 1, n)
    for j in range(2):
        if j > 0:
            if byte_at(buf, pos, n) != 44:
                return -1, h, w
            pos = skip_ws(buf, pos + 1, n)
        pos, neg, is_float, mant, _e10, too_long = number_token(buf, pos, n)
        if pos < 0 or neg or is_float or too_long or mant >= _RLE_MAX_SIDE:
            return -1, h, w
        if j == 0:
            h = mant
        else:
            w = mant
        pos = skip_ws(buf, pos, n)
    if byte_at(buf, pos, n) != 93:
        return -1, h, w
    return pos + 1, h, w


@njit(**INLINE)
def rle_key(buf, pos, n, seen):
    """An RLE object's key at ``pos``, ``"size"`` (bit 1) or ``"counts"`` (bit 2), not one in
    ``seen``, and its colon: (position of the value, bit), or (-1, 0)."""
    if byte_at(buf, pos, n) != 34:
        return -1, 0
    kstart = pos + 1
    if word_at(buf, kstart, n, _SIZE):
        bit = 1
        pos = kstart + 5
    elif word_at(buf, kstart, n, _COUNTS):
        bit = 2
        pos = kstart + 7
    else:
        return -1, 0
    if seen & bit:
        return -1, 0
    pos = skip_ws(buf, pos, n)
    if byte_at(buf, pos, n) != 58:
        return -1, 0
    return skip_ws(buf, pos + 1, n), bit


@njit(**KERNEL)
def rle_object(buf, pos, n):
    """``{"size": [h, w], "counts": "..."}`` at ``pos``, keys in either order and nothing else:
    (end or -1, h, w, first char of counts, its closing quote, runs, their sum, the odd ones' sum)
    (:func:`rle_counts`)."""
    h = np.int64(0)
    w = np.int64(0)
    start = np.int64(0)
    stop = np.int64(0)
    runs = total = ones = np.int64(0)
    if byte_at(buf, pos, n) != 123:
        return -1, h, w, start, stop, runs, total, ones
    pos = skip_ws(buf, pos + 1, n)
    seen = 0
    while True:
        pos, bit = rle_key(buf, pos, n, seen)
        if pos < 0:
            return -1, h, w, start, stop, runs, total, ones
        seen |= bit
        if bit == 1:
            pos, h, w = rle_size(buf, pos, n)
            if pos < 0:
                return -1, h, w, start, stop, runs, total, ones
        else:
            if byte_at(buf, pos, n) != 34:
                return -1, h, w, start, stop, runs, total, ones
            start = pos + 1
            pos, runs, total, ones = rle_counts(buf, pos, n)
            if pos < 0:
                return -1, h, w, start, stop, runs, total, ones
            stop = pos - 1
        pos, more = next_item(buf, pos, n, 125)
        if more < 0:
            return -1, h, w, start, stop, runs, total, ones
        if more == 0:
            break
    if seen != 3:
        return -1, h, w, start, stop, runs, total, ones
    return pos, h, w, start, stop, runs, total, ones


@njit(cache=True, nogil=True)
def _decode_rle_spans(lo, hi, buf, rle, out_off, out, total, ones, bad):  # pragma: no cover - numba
    """Decode the counts strings ``buf[rle[i, 2]:rle[i, 3]]`` (checked by ``rle_counts``) into
    ``out[out_off[i]:out_off[i + 1]]``, with each string's sums and flag (:func:`decode_counts`)."""
    for i in range(lo, hi):
        _m, total[i], ones[i], bad[i] = decode_counts(buf, rle[i, 2], rle[i, 3], out, out_off[i])


def masks_of(buf: np.ndarray, rle: np.ndarray) -> Masks | None:
    """The scanned compressed RLE as :class:`Masks`, or ``None`` where the general path reports an error."""
    offsets = _offsets(rle[:, 4])
    counts = np.empty(offsets[-1], np.uint32)
    total, ones, bad = np.zeros(len(rle), np.int64), np.zeros(len(rle), np.int64), np.zeros(len(rle), np.bool_)
    run_chunks(_decode_rle_spans, len(rle), rle[:, 3] - rle[:, 2], buf, rle, offsets, counts, total, ones, bad)
    height, width = rle[:, 0].copy(), rle[:, 1].copy()
    if bad.any() or (total != height * width).any():
        return None
    return Masks(counts=counts, offsets=offsets, height=height, width=width, area=ones.astype(np.float64))


def compressed_masks_of(buf: np.ndarray, rle: np.ndarray, backing: Any = None) -> CompressedMasks | None:
    """The scanned compressed RLE as :class:`CompressedMasks` whose strings stay where they are in ``buf``
    (the file's bytes; ``backing``: the memory-mapped file they lie in, or None); ``None`` where the general
    path reports an error."""
    height, width = rle[:, 0].copy(), rle[:, 1].copy()
    if (rle[:, 5] != height * width).any():
        return None
    start, end, offsets = rle[:, 2].copy(), rle[:, 3].copy(), _offsets(rle[:, 4])
    return CompressedMasks(buf, start, end, offsets, height, width, rle[:, 6].astype(np.float64), backing)


def _offsets(lengths: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets
