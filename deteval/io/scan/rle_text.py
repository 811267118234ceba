"""Compressed RLE in the bytes: ``{"size": [h, w], "counts": "..."}`` checked, then decoded into runs.

The strings are checked while the file is scanned (only what pycocotools'
decoder reads the same way is taken) and decoded afterwards, on threads,
straight from the bytes: no Python string is made per mask.
"""

from __future__ import annotations

import numpy as np

from deteval.io.scan.lexer import INLINE, KERNEL, byte_at, next_item, number_token, skip_ws, word_at
from deteval.jit import njit, run_chunks
from deteval.rle import Masks

_SIZE = np.frombuffer(b"size", np.uint8).copy()
_COUNTS = np.frombuffer(b"counts", np.uint8).copy()
_RLE_MAX_SIDE = 1 << 31  # RLE height and width below this: their product fits int64 with room
_RLE_MAX_CHARS = 12  # chars of one RLE number (60 bits); longer ones are the general path's


@njit(**KERNEL)
def rle_counts(buf, pos, n):
    """The compressed RLE string whose opening quote is at ``pos``: (position after it or -1, runs, escaped).

    Taken only where the general path decodes the same runs: chars ``'0'`` to ``'o'`` (48 to 111,
    the alphabet of pycocotools' strings) with the escape ``\\\\`` for the backslash among them,
    every number ending within the string and at most ``_RLE_MAX_CHARS`` chars long. Anything else
    (other escapes, other chars, a number left open) is -1: the general path's.
    """
    pos += 1
    runs = np.int64(0)
    chars = 0
    escaped = False
    while pos < n:
        c = np.int64(buf[pos])
        if c == 34:
            if chars != 0:
                return -1, runs, escaped  # the last number never ended
            return pos + 1, runs, escaped
        if c == 92:
            if byte_at(buf, pos + 1, n) != 92:
                return -1, runs, escaped
            escaped = True
            pos += 2
        elif 48 <= c <= 111:
            pos += 1
        else:
            return -1, runs, escaped
        chars += 1
        if ((c - 48) & 0x20) == 0:
            runs += 1
            chars = 0
        elif chars >= _RLE_MAX_CHARS:
            return -1, runs, escaped
    return -1, runs, escaped


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
    (end or -1, h, w, first char of counts, its closing quote, runs, escaped)."""
    h = np.int64(0)
    w = np.int64(0)
    start = np.int64(0)
    stop = np.int64(0)
    runs = np.int64(0)
    escaped = False
    if byte_at(buf, pos, n) != 123:
        return -1, h, w, start, stop, runs, escaped
    pos = skip_ws(buf, pos + 1, n)
    seen = 0
    while True:
        pos, bit = rle_key(buf, pos, n, seen)
        if pos < 0:
            return -1, h, w, start, stop, runs, escaped
        seen |= bit
        if bit == 1:
            pos, h, w = rle_size(buf, pos, n)
            if pos < 0:
                return -1, h, w, start, stop, runs, escaped
        else:
            if byte_at(buf, pos, n) != 34:
                return -1, h, w, start, stop, runs, escaped
            start = pos + 1
            pos, runs, escaped = rle_counts(buf, pos, n)
            if pos < 0:
                return -1, h, w, start, stop, runs, escaped
            stop = pos - 1
        pos, more = next_item(buf, pos, n, 125)
        if more < 0:
            return -1, h, w, start, stop, runs, escaped
        if more == 0:
            break
    if seen != 3:
        return -1, h, w, start, stop, runs, escaped
    return pos, h, w, start, stop, runs, escaped


@njit(cache=True, nogil=True)
def _decode_rle_spans(lo, hi, buf, rle, out_off, out, total, ones, bad):  # pragma: no cover - numba
    """Decode the counts strings ``buf[rle[i, 2]:rle[i, 3]]`` (checked by ``rle_counts``) into
    ``out[out_off[i]:out_off[i + 1]]`` as :func:`deteval.io.masks.decode_rle_strings` reads them
    (an escaped backslash is one char). Per string: (sum of runs, sum of odd runs, whether a
    run is negative or beyond 2**32 - 1, which the general path reports)."""
    for i in range(lo, hi):
        p = rle[i, 2]
        stop = rle[i, 3]
        o = out_off[i]
        m = 0
        t = np.int64(0)
        k = np.int64(0)
        prev2 = prev1 = np.int64(0)  # the last two runs: each run from the third on is a difference
        while p < stop:
            c = np.int64(buf[p])
            p += 2 if c == 92 else 1
            c -= 48
            if c < 32:  # one char, most runs: five bits and a sign
                value = c - 32 if c >= 16 else c
            else:
                value = c & 0x1F
                shift = 5
                more = True
                while more:
                    c = np.int64(buf[p])
                    p += 2 if c == 92 else 1
                    c -= 48
                    value |= (c & 0x1F) << shift
                    more = (c & 0x20) != 0
                    shift += 5
                    if not more and (c & 0x10) != 0:
                        value -= np.int64(1) << shift  # sign-extend
            if m > 2:
                value += prev2
            if value < 0 or value > 0xFFFFFFFF:
                bad[i] = True
                value = 0
            out[o + m] = value
            t += value
            if m & 1:
                k += value
            prev2, prev1 = prev1, value
            m += 1
        total[i] = t
        ones[i] = k


def masks_of(buf: np.ndarray, rle: np.ndarray) -> Masks | None:
    """The scanned compressed RLE as :class:`Masks`, or ``None`` where the general path reports an error."""
    offsets = np.zeros(len(rle) + 1, np.int64)
    np.cumsum(rle[:, 4], out=offsets[1:])
    counts = np.empty(offsets[-1], np.uint32)
    total, ones, bad = np.zeros(len(rle), np.int64), np.zeros(len(rle), np.int64), np.zeros(len(rle), np.bool_)
    run_chunks(_decode_rle_spans, len(rle), rle[:, 3] - rle[:, 2], buf, rle, offsets, counts, total, ones, bad)
    height, width = rle[:, 0].copy(), rle[:, 1].copy()
    if bad.any() or (total != height * width).any():
        return None
    return Masks(counts=counts, offsets=offsets, height=height, width=width, area=ones.astype(np.float64))
