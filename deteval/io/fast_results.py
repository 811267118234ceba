"""COCO results and ground truth bytes straight into columns: a numba scanner for the common case.

``parse_results_columns(raw)`` reads a results file's bytes (a JSON list of
``{"image_id", "category_id", "bbox", "score", ...}`` objects) into int64 and
float64 columns without building a Python object per record (with
``masks="read"`` also compressed-RLE ``segmentation`` masks, decoded straight
from the bytes into runs; with ``masks="skip"`` masks and keypoints are
validated and skipped, as box evaluation reads none);
``parse_gt_columns(raw)`` reads a ground truth file's images, categories and
annotations (for box evaluation: segmentations are validated and skipped; with
``segm=True`` polygons and RLE are read too, polygon coordinates into one flat
array for :mod:`deteval.io.polygons`, and :func:`gt_masks` makes the masks). It
is a fast path only: whenever the text is not plainly such a file (malformed
JSON or UTF-8, a missing or mistyped key, a duplicate known key, string ids,
masks or keypoints where not asked for, RLE that is not plain RLE, an
integer of 19+ digits, ...) it returns
``None`` and the caller falls back to the general loader, which reads it or
gives the precise error. Every value skipped is still validated, so text the
general loader would reject is never accepted here.

Exactness is the point: every float equals Python's ``float(token)`` (what
``json.loads`` gives, what pycocotools sees) bit for bit, every int Python's
``int(token)``. Numbers are converted by

* Clinger's fast path: all significant digits in an integer ``M <= 2**53``
  and a decimal exponent ``|e| <= 22``: ``M * 10**e`` (or ``M / 10**-e``) is
  one IEEE operation on exact operands, hence correctly rounded;
* else a 128-bit product with a truncated power of five (the Eisel-Lemire
  idea), used only when the rounding it implies cannot be changed by the
  product's error bound (below); when it could, or the result would be
  subnormal or huge, or there are more than 18 significant digits,
* Python's own ``float`` on the token's bytes (rare; collected as spans).

Error bound of the 128-bit step. Write ``5**q = t * 2**b`` with ``t`` real in
``[2**127, 2**128)`` and ``T`` its table value, ``|T - t| < 1``. For the
mantissa ``w`` shifted into ``[2**63, 2**64)`` the exact product ``E = w*t``
and ``P = w*T`` differ by less than ``w < 2**64``; ``X = floor(P / 2**64)``
(computed exactly from two 64x64 products) therefore satisfies
``E / 2**64`` in ``(X - 1, X + 2)``. Rounding ``X`` to 53 bits leaves a
remainder ``r``; the rounding of the true value is the rounding of ``X``
unless ``r`` lies within 3 units of 0, of the half-way point or of the next
multiple, and those (essentially only exact or half-way values) go to Python.
"""

from __future__ import annotations

import json
import math
import mmap
import re
import threading
from collections.abc import Callable
from contextlib import suppress
from functools import partial

import numpy as np

from deteval.jit import SharedTasks, njit, num_threads, run_chunks
from deteval.types import xywh_area

# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------
_Q_MIN, _Q_MAX = -342, 308  # decimal exponents the 128-bit step handles (outside: Python float)


def _pow5_table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For q in [_Q_MIN, _Q_MAX]: 5**q ~ T * 2**b with T in [2**127, 2**128), |T - 5**q/2**b| < 1."""
    qs = range(_Q_MIN, _Q_MAX + 1)
    hi = np.empty(len(qs), np.uint64)
    lo = np.empty(len(qs), np.uint64)
    b2 = np.empty(len(qs), np.int64)
    for i, q in enumerate(qs):
        if q >= 0:
            p = 5**q
            b = p.bit_length() - 128
            t = p >> b if b >= 0 else p << -b  # truncated (exact when b <= 0)
        else:
            p = 5 ** (-q)
            k = 127 + p.bit_length()
            t = -((-(1 << k)) // p)  # ceil(2**k / 5**-q)
            b = -k
        assert (1 << 127) <= t < (1 << 128)
        hi[i], lo[i], b2[i] = t >> 64, t & 0xFFFFFFFFFFFFFFFF, b
    return hi, lo, b2


def _kernel(inline: bool = False):
    """``njit``, cached, without reference counting: the kernels take arrays and make none, and
    counting the references of ``buf`` at every helper call was half the time. ``inline``: the
    small helpers are inlined in numba's IR (slower to compile once, twice as fast to run).
    ``nogil``: a results file is scanned on a thread while the ground truth loads."""
    opts: dict = {"cache": True, "_nrt": False, "nogil": True}
    if inline:
        opts["inline"] = "always"
    return njit(**opts)


_P5_HI, _P5_LO, _P5_B = _pow5_table()
_P10 = np.array([10.0**k for k in range(23)], dtype=np.float64)  # all exact in binary64

_U0 = np.uint64(0)
_U1 = np.uint64(1)
_U32 = np.uint64(32)
_M32 = np.uint64(0xFFFFFFFF)
_U64MAX = np.uint64(0xFFFFFFFFFFFFFFFF)
_TWO53 = 1 << 53
_TWO62 = np.uint64(1 << 62)
_TWO63 = np.uint64(1 << 63)
_MAX_DIGITS = 18  # significant digits kept in an int64 mantissa (10**18 < 2**63)
_MAX_DEPTH = 200  # nesting skipped in extra values; deeper files take the general path

# keys of a results record (the four read ones are bits 0-3 of a record's `seen`)
_K_IMAGE, _K_CATEGORY, _K_BBOX, _K_SCORE, _K_OTHER, _K_SEGM, _K_KEYPOINTS = 0, 1, 2, 3, 4, 5, 6
# what the results scanner does with masks and keypoints: decline the file, skip them (validated), read the masks
_M_DECLINE, _M_SKIP, _M_READ = 0, 1, 2
_SIZE = np.frombuffer(b"size", np.uint8).copy()
_COUNTS = np.frombuffer(b"counts", np.uint8).copy()
_RLE_MAX_SIDE = 1 << 31  # RLE height and width below this: their product fits int64 with room
_RLE_MAX_CHARS = 12  # chars of one RLE number (60 bits); longer ones are the general path's
_IMAGE_ID = np.frombuffer(b"image_id", np.uint8).copy()
_CATEGORY_ID = np.frombuffer(b"category_id", np.uint8).copy()
_BBOX = np.frombuffer(b"bbox", np.uint8).copy()
_SCORE = np.frombuffer(b"score", np.uint8).copy()
_SEGMENTATION = np.frombuffer(b"segmentation", np.uint8).copy()
_KEYPOINTS = np.frombuffer(b"keypoints", np.uint8).copy()
_TRUE = np.frombuffer(b"true", np.uint8).copy()
_FALSE = np.frombuffer(b"false", np.uint8).copy()
_NULL = np.frombuffer(b"null", np.uint8).copy()


# ---------------------------------------------------------------------------------------------
# Lexing
# ---------------------------------------------------------------------------------------------
@_kernel(inline=True)
def _ws(buf, pos, n):
    while pos < n:
        c = buf[pos]
        if c == 32 or c == 10 or c == 13 or c == 9:
            pos += 1
        else:
            break
    return pos


@_kernel(inline=True)
def _at(buf, pos, n):
    """The byte at ``pos``, or 0 past the end (0 is never valid where a byte is looked at)."""
    if pos < n:
        return np.int64(buf[pos])
    return np.int64(0)


@_kernel(inline=True)
def _next_item(buf, pos, n, close):
    """After an item of a list or object closed by ``close`` (``]`` or ``}``): (position, what
    follows): 1 another item, at the position after the comma and white space; 0 the end, just
    past ``close``; -1 anything else (malformed)."""
    pos = _ws(buf, pos, n)
    c = _at(buf, pos, n)
    if c == 44:
        return _ws(buf, pos + 1, n), 1
    if c == close:
        return pos + 1, 0
    return pos, -1


@_kernel(inline=True)
def _cont(buf, pos, n, low, high):
    c = _at(buf, pos, n)
    return low <= c and c <= high


@_kernel()
def _utf8(buf, pos, n):
    """Position after the well-formed UTF-8 sequence of a non-ASCII lead byte at ``pos``, or -1."""
    c = np.int64(buf[pos])
    if 0xC2 <= c <= 0xDF:
        return pos + 2 if _cont(buf, pos + 1, n, 0x80, 0xBF) else -1
    if 0xE0 <= c <= 0xEF:
        low = 0xA0 if c == 0xE0 else 0x80
        high = 0x9F if c == 0xED else 0xBF  # no encoded surrogates
        if _cont(buf, pos + 1, n, low, high) and _cont(buf, pos + 2, n, 0x80, 0xBF):
            return pos + 3
        return -1
    if 0xF0 <= c <= 0xF4:
        low = 0x90 if c == 0xF0 else 0x80
        high = 0x8F if c == 0xF4 else 0xBF
        if _cont(buf, pos + 1, n, low, high) and _cont(buf, pos + 2, n, 0x80, 0xBF):
            if _cont(buf, pos + 3, n, 0x80, 0xBF):
                return pos + 4
        return -1
    return -1


@_kernel(inline=True)
def _is_hex(c):
    return (48 <= c <= 57) or (65 <= c <= 70) or (97 <= c <= 102)


@_kernel(inline=True)
def _string(buf, pos, n):
    """``buf[pos]`` is an opening quote: (position after the closing one or -1, whether it has escapes)."""
    pos += 1
    escaped = False
    while pos < n:
        c = buf[pos]
        if c == 34:
            return pos + 1, escaped
        if c == 92:
            escaped = True
            e = _at(buf, pos + 1, n)
            if e == 117:  # \uXXXX
                for k in range(2, 6):
                    if not _is_hex(_at(buf, pos + k, n)):
                        return -1, escaped
                pos += 6
            elif e == 34 or e == 92 or e == 47 or e == 98 or e == 102 or e == 110 or e == 114 or e == 116:
                pos += 2
            else:
                return -1, escaped
        elif c < 32:
            return -1, escaped
        elif c < 128:
            pos += 1
        else:
            pos = _utf8(buf, pos, n)
            if pos < 0:
                return -1, escaped
    return -1, escaped


@_kernel(inline=True)
def _number(buf, pos, n):
    """A JSON number at ``pos``: (end or -1, negative, has fraction/exponent, mantissa, exponent, too long).

    The value is ``(-1)**negative * mantissa * 10**exponent`` exactly when not ``too long`` (more
    than 18 significant digits: the mantissa is then meaningless).
    """
    neg = False
    if _at(buf, pos, n) == 45:
        neg = True
        pos += 1
    mant = np.int64(0)
    nsig = 0
    e10 = np.int64(0)
    c = _at(buf, pos, n)
    if c == 48:
        pos += 1
        if 48 <= _at(buf, pos, n) <= 57:
            return -1, neg, False, mant, e10, False  # leading zero
    elif 49 <= c <= 57:
        while pos < n:
            d = np.int64(buf[pos]) - 48
            if d < 0 or d > 9:
                break
            nsig += 1
            if nsig <= _MAX_DIGITS:
                mant = mant * 10 + d
            pos += 1
    else:
        return -1, neg, False, mant, e10, False
    is_float = False
    if _at(buf, pos, n) == 46:
        is_float = True
        pos += 1
        start = pos
        while pos < n:
            d = np.int64(buf[pos]) - 48
            if d < 0 or d > 9:
                break
            if nsig > 0 or d != 0:
                nsig += 1
                if nsig <= _MAX_DIGITS:
                    mant = mant * 10 + d
                    e10 -= 1
            else:
                e10 -= 1
            pos += 1
        if pos == start:
            return -1, neg, False, mant, e10, False  # "1." has no fraction digits
    c = _at(buf, pos, n)
    if c == 101 or c == 69:
        is_float = True
        pos += 1
        c = _at(buf, pos, n)
        eneg = False
        if c == 45 or c == 43:
            eneg = c == 45
            pos += 1
        start = pos
        ev = np.int64(0)
        while pos < n:
            d = np.int64(buf[pos]) - 48
            if d < 0 or d > 9:
                break
            if ev < 100000000:
                ev = ev * 10 + d
            pos += 1
        if pos == start:
            return -1, neg, False, mant, e10, False
        e10 = e10 - ev if eneg else e10 + ev
    if nsig > _MAX_DIGITS:
        # digits past the 18th: the integer part's still scale the value; flag it, Python converts
        return pos, neg, is_float, mant, e10, True
    return pos, neg, is_float, mant, e10, False


# ---------------------------------------------------------------------------------------------
# Decimal to binary64
# ---------------------------------------------------------------------------------------------
@_kernel(inline=True)
def _mul128(a, b):
    """Full 128-bit product of two uint64: (high, low)."""
    a_lo = a & _M32
    a_hi = a >> _U32
    b_lo = b & _M32
    b_hi = b >> _U32
    ll = a_lo * b_lo
    lh = a_lo * b_hi
    hl = a_hi * b_lo
    hh = a_hi * b_hi
    mid = (ll >> _U32) + (lh & _M32) + (hl & _M32)
    low = (mid << _U32) | (ll & _M32)
    high = hh + (lh >> _U32) + (hl >> _U32) + (mid >> _U32)
    return high, low


@_kernel()
def _wide(mant, q):
    """``mant * 10**q`` (0 < mant < 10**18, q in table range) correctly rounded: (value, ok)."""
    w = np.uint64(mant)
    lz = 0
    if w < np.uint64(1 << 32):
        w = w << np.uint64(32)
        lz += 32
    if w < np.uint64(1 << 48):
        w = w << np.uint64(16)
        lz += 16
    if w < np.uint64(1 << 56):
        w = w << np.uint64(8)
        lz += 8
    if w < np.uint64(1 << 60):
        w = w << np.uint64(4)
        lz += 4
    if w < np.uint64(1 << 62):
        w = w << np.uint64(2)
        lz += 2
    if w < _TWO63:
        w = w << _U1
        lz += 1
    i = q - _Q_MIN
    h1, l1 = _mul128(w, _P5_HI[i])
    h2, _unused = _mul128(w, _P5_LO[i])
    low = l1 + h2
    high = h1
    if low < l1:
        high = high + _U1
    if high < _TWO62:
        return 0.0, False
    sh = 11 if high >= _TWO63 else 10  # bits of `high` below the 53-bit mantissa
    ush = np.uint64(sh)
    m = high >> ush
    rmask = (_U1 << ush) - _U1
    half = _U1 << np.uint64(sh - 1)
    rh = high & rmask
    # remainder r = rh * 2**64 + low, unit of the mantissa = 2**(sh + 64); true remainder in (r - 1, r + 2)
    if rh == _U0 and low < np.uint64(3):
        return 0.0, False
    if rh == rmask and low > _U64MAX - np.uint64(4):
        return 0.0, False
    if rh == half and low < np.uint64(3):
        return 0.0, False
    if rh == half - _U1 and low > _U64MAX - np.uint64(4):
        return 0.0, False
    if rh >= half:
        m = m + _U1
    k = sh + 128 + _P5_B[i] + q - lz
    if k < -1074 or k > 971:  # subnormal or near overflow: Python decides
        return 0.0, False
    return math.ldexp(float(np.int64(m)), k), True


@_kernel(inline=True)
def _to_float(neg, is_float, mant, e10):
    """The binary64 of a number token that is not too long: (value, ok); not ok means: ask Python."""
    if mant == 0:
        if neg and is_float:
            return -0.0, True
        return 0.0, True  # "-0" is the integer 0
    if mant <= _TWO53 and -22 <= e10 <= 22:
        v = float(mant)
        if e10 >= 0:
            v = v * _P10[e10]
        else:
            v = v / _P10[-e10]
        return (-v if neg else v), True
    if e10 < _Q_MIN or e10 > _Q_MAX:
        return 0.0, False
    v, ok = _wide(mant, e10)
    return (-v if neg else v), ok


# ---------------------------------------------------------------------------------------------
# Skipping any value
# ---------------------------------------------------------------------------------------------
@_kernel()
def _literal(buf, pos, n, word):
    for k in range(word.size):
        if _at(buf, pos + k, n) != word[k]:
            return -1
    return pos + word.size


@_kernel()
def _scalar(buf, pos, n):
    """Position after the string, number or literal at ``pos``, or -1."""
    c = _at(buf, pos, n)
    if c == 34:
        end, _esc = _string(buf, pos, n)
        return end
    if c == 45 or 48 <= c <= 57:
        res = _number(buf, pos, n)
        return res[0]
    if c == 116:
        return _literal(buf, pos, n, _TRUE)
    if c == 102:
        return _literal(buf, pos, n, _FALSE)
    if c == 110:
        return _literal(buf, pos, n, _NULL)
    return -1


@_kernel()
def _member_key(buf, pos, n):
    """Past ``"key" :`` and the blanks after it, or -1."""
    if _at(buf, pos, n) != 34:
        return -1
    pos = _scalar(buf, pos, n)
    if pos < 0:
        return -1
    pos = _ws(buf, pos, n)
    if _at(buf, pos, n) != 58:
        return -1
    return _ws(buf, pos + 1, n)


@_kernel()
def _skip_value(buf, pos, n, stack):
    """Position after the (validated) JSON value at ``pos``, or -1. ``stack``: uint8 scratch."""
    depth = 0
    while True:
        # a value starts at pos
        c = _at(buf, pos, n)
        if c == 123 or c == 91:
            pos = _ws(buf, pos + 1, n)
            close = 125 if c == 123 else 93
            if _at(buf, pos, n) == close:
                pos += 1
            else:
                if depth >= stack.size:
                    return -1
                stack[depth] = c
                depth += 1
                if c == 123:
                    pos = _member_key(buf, pos, n)
                    if pos < 0:
                        return -1
                continue
        else:
            pos = _scalar(buf, pos, n)
            if pos < 0:
                return -1
        # after a value: close containers or move to the next member
        while True:
            if depth == 0:
                return pos
            pos = _ws(buf, pos, n)
            c = _at(buf, pos, n)
            top = stack[depth - 1]
            if c == 44:
                pos = _ws(buf, pos + 1, n)
                if top == 123:
                    pos = _member_key(buf, pos, n)
                    if pos < 0:
                        return -1
                break
            if (c == 125 and top == 123) or (c == 93 and top == 91):
                depth -= 1
                pos += 1
                continue
            return -1


# ---------------------------------------------------------------------------------------------
# Results records
# ---------------------------------------------------------------------------------------------
@_kernel(inline=True)
def _eq(buf, start, word):
    for k in range(word.size):
        if buf[start + k] != word[k]:
            return False
    return True


@_kernel(inline=True)
def _result_key(buf, start, length):
    if length == 8 and _eq(buf, start, _IMAGE_ID):
        return _K_IMAGE
    if length == 11 and _eq(buf, start, _CATEGORY_ID):
        return _K_CATEGORY
    if length == 4 and _eq(buf, start, _BBOX):
        return _K_BBOX
    if length == 5 and _eq(buf, start, _SCORE):
        return _K_SCORE
    if length == 12 and _eq(buf, start, _SEGMENTATION):
        return _K_SEGM
    if length == 9 and _eq(buf, start, _KEYPOINTS):
        return _K_KEYPOINTS
    return _K_OTHER


@_kernel(inline=True)
def _word_at(buf, start, n, word):
    """Whether ``buf[start:]`` is ``word`` and a closing quote."""
    end = start + word.size
    return end < n and buf[end] == 34 and _eq(buf, start, word)


@_kernel(inline=True)
def _known_key(buf, start, n):
    """The common keys without escapes, spelled out: (key, position after the quote) or (-1, -1)."""
    c = _at(buf, start, n)
    if c == 105 and _word_at(buf, start, n, _IMAGE_ID):
        return _K_IMAGE, start + 9
    if c == 99 and _word_at(buf, start, n, _CATEGORY_ID):
        return _K_CATEGORY, start + 12
    if c == 98 and _word_at(buf, start, n, _BBOX):
        return _K_BBOX, start + 5
    if c == 115 and _word_at(buf, start, n, _SCORE):
        return _K_SCORE, start + 6
    return -1, -1


@_kernel()
def _rle_counts(buf, pos, n):
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
            if _at(buf, pos + 1, n) != 92:
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


@_kernel()
def _rle_size(buf, pos, n):
    """An RLE ``size`` ``[h, w]`` at ``pos``: (end or -1, h, w). Plain integer tokens below
    ``_RLE_MAX_SIDE`` only (``-0``, ``4.0``, ``true`` ... are the general path's)."""
    h = np.int64(0)
    w = np.int64(0)
    if _at(buf, pos, n) != 91:
        return -1, h, w
    pos = _ws(buf, pos + 1, n)
    for j in range(2):
        if j > 0:
            if _at(buf, pos, n) != 44:
                return -1, h, w
            pos = _ws(buf, pos + 1, n)
        pos, neg, is_float, mant, _e10, too_long = _number(buf, pos, n)
        if pos < 0 or neg or is_float or too_long or mant >= _RLE_MAX_SIDE:
            return -1, h, w
        if j == 0:
            h = mant
        else:
            w = mant
        pos = _ws(buf, pos, n)
    if _at(buf, pos, n) != 93:
        return -1, h, w
    return pos + 1, h, w


@_kernel(inline=True)
def _rle_key(buf, pos, n, seen):
    """An RLE object's key at ``pos``, ``"size"`` (bit 1) or ``"counts"`` (bit 2), not one in
    ``seen``, and its colon: (position of the value, bit), or (-1, 0)."""
    if _at(buf, pos, n) != 34:
        return -1, 0
    kstart = pos + 1
    if _word_at(buf, kstart, n, _SIZE):
        bit = 1
        pos = kstart + 5
    elif _word_at(buf, kstart, n, _COUNTS):
        bit = 2
        pos = kstart + 7
    else:
        return -1, 0
    if seen & bit:
        return -1, 0
    pos = _ws(buf, pos, n)
    if _at(buf, pos, n) != 58:
        return -1, 0
    return _ws(buf, pos + 1, n), bit


@_kernel()
def _rle_object(buf, pos, n):
    """``{"size": [h, w], "counts": "..."}`` at ``pos``, keys in either order and nothing else:
    (end or -1, h, w, first char of counts, its closing quote, runs, escaped)."""
    h = np.int64(0)
    w = np.int64(0)
    start = np.int64(0)
    stop = np.int64(0)
    runs = np.int64(0)
    escaped = False
    if _at(buf, pos, n) != 123:
        return -1, h, w, start, stop, runs, escaped
    pos = _ws(buf, pos + 1, n)
    seen = 0
    while True:
        pos, bit = _rle_key(buf, pos, n, seen)
        if pos < 0:
            return -1, h, w, start, stop, runs, escaped
        seen |= bit
        if bit == 1:
            pos, h, w = _rle_size(buf, pos, n)
            if pos < 0:
                return -1, h, w, start, stop, runs, escaped
        else:
            if _at(buf, pos, n) != 34:
                return -1, h, w, start, stop, runs, escaped
            start = pos + 1
            pos, runs, escaped = _rle_counts(buf, pos, n)
            if pos < 0:
                return -1, h, w, start, stop, runs, escaped
            stop = pos - 1
        pos, more = _next_item(buf, pos, n, 125)
        if more < 0:
            return -1, h, w, start, stop, runs, escaped
        if more == 0:
            break
    if seen != 3:
        return -1, h, w, start, stop, runs, escaped
    return pos, h, w, start, stop, runs, escaped


@_kernel()
def _scan_results(buf, head, tail, mode, image_id, category_id, bbox, score, present, rle, spans, stack):
    """Fill the columns from a results list: (ok, records, spans).

    ``buf`` is the whole list when ``head`` and ``tail``; else a piece of it cut at commas
    between records: without ``head`` it starts at a record (white space first), without
    ``tail`` it ends right after one (white space last), not at the list's ``[`` or ``]``.

    ``present[i]``: the keys record i has (bit ``1 << _K_...``). ``mode`` says what a
    ``segmentation`` or ``keypoints`` key does: declines the file (``_M_DECLINE``), is skipped
    (``_M_SKIP``), or (``_M_READ``) a segmentation is read as compressed RLE into ``rle[i]`` =
    (h, w, first char of counts, closing quote, runs, escaped) and keypoints decline. A bbox is
    required except in ``_M_READ``, where the segmentation is.
    """
    n = buf.size
    cap = image_id.size
    box_flat = bbox.reshape(-1)
    required = 15
    if mode == _M_READ:
        required = (1 << _K_IMAGE) | (1 << _K_CATEGORY) | (1 << _K_SCORE) | (1 << _K_SEGM)
    nrec = 0
    nspan = 0
    pos = _ws(buf, 0, n)
    if head:
        if _at(buf, pos, n) != 91:
            return False, 0, 0
        pos = _ws(buf, pos + 1, n)
        if _at(buf, pos, n) == 93:
            pos = _ws(buf, pos + 1, n)
            return pos == n and tail, 0, 0
    while True:
        if _at(buf, pos, n) != 123 or nrec >= cap:
            return False, nrec, nspan
        pos = _ws(buf, pos + 1, n)
        seen = 0
        while True:
            if _at(buf, pos, n) != 34:
                return False, nrec, nspan
            kstart = pos + 1
            key, pos = _known_key(buf, kstart, n)
            if pos < 0:
                pos, escaped = _string(buf, kstart - 1, n)
                if pos < 0 or escaped:
                    return False, nrec, nspan
                key = _result_key(buf, kstart, pos - 1 - kstart)
            pos = _ws(buf, pos, n)
            if _at(buf, pos, n) != 58:
                return False, nrec, nspan
            pos = _ws(buf, pos + 1, n)
            if key <= _K_SCORE:
                bit = 1 << key
                if seen & bit:
                    return False, nrec, nspan
                seen |= bit
                count = 1
                if key == _K_BBOX:
                    if _at(buf, pos, n) != 91:
                        return False, nrec, nspan
                    pos = _ws(buf, pos + 1, n)
                    count = 4
                for j in range(count):
                    if j > 0:
                        if _at(buf, pos, n) != 44:
                            return False, nrec, nspan
                        pos = _ws(buf, pos + 1, n)
                    start = pos
                    pos, neg, is_float, mant, e10, too_long = _number(buf, pos, n)
                    if pos < 0:
                        return False, nrec, nspan
                    if key == _K_IMAGE or key == _K_CATEGORY:
                        if is_float or too_long:
                            return False, nrec, nspan
                        if key == _K_IMAGE:
                            image_id[nrec] = -mant if neg else mant
                        else:
                            category_id[nrec] = -mant if neg else mant
                        continue
                    if too_long and not is_float:
                        return False, nrec, nspan  # a 19+ digit integer: the general path decides what it is
                    v = 0.0
                    ok = False
                    if not too_long:
                        v, ok = _to_float(neg, is_float, mant, e10)
                    if not ok:  # Python converts it
                        if nspan >= spans.shape[0]:
                            return False, nrec, nspan
                        spans[nspan, 0] = 0 if key == _K_BBOX else 1
                        spans[nspan, 1] = 4 * nrec + j if key == _K_BBOX else nrec
                        spans[nspan, 2] = start
                        spans[nspan, 3] = pos
                        nspan += 1
                    if key == _K_BBOX:
                        box_flat[4 * nrec + j] = v
                        pos = _ws(buf, pos, n)
                    else:
                        score[nrec] = v
                if key == _K_BBOX:
                    if _at(buf, pos, n) != 93:
                        return False, nrec, nspan
                    pos += 1
            elif key == _K_SEGM and mode == _M_READ:
                bit = 1 << _K_SEGM
                if seen & bit:
                    return False, nrec, nspan
                seen |= bit
                pos, h, w, a, b, runs, escaped = _rle_object(buf, pos, n)
                if pos < 0:
                    return False, nrec, nspan
                rle[nrec, 0] = h
                rle[nrec, 1] = w
                rle[nrec, 2] = a
                rle[nrec, 3] = b
                rle[nrec, 4] = runs
                rle[nrec, 5] = 1 if escaped else 0
            elif key != _K_OTHER and mode != _M_SKIP:
                return False, nrec, nspan
            else:
                pos = _skip_value(buf, pos, n, stack)
                if pos < 0:
                    return False, nrec, nspan
            pos, more = _next_item(buf, pos, n, 125)
            if more < 0:
                return False, nrec, nspan
            if more == 0:
                break
        if seen & required != required:
            return False, nrec, nspan
        present[nrec] = seen
        nrec += 1
        if not tail and _ws(buf, pos, n) == n:  # a piece ends after a record, where a comma was cut
            return True, nrec, nspan
        pos, more = _next_item(buf, pos, n, 93)
        if more < 0:
            return False, nrec, nspan
        if more == 0:
            return tail and _ws(buf, pos, n) == n, nrec, nspan


@njit(cache=True, nogil=True)
def _decode_rle_spans(lo, hi, buf, rle, out_off, out, total, ones, bad):  # pragma: no cover - numba
    """Decode the counts strings ``buf[rle[i, 2]:rle[i, 3]]`` (checked by ``_rle_counts``) into
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


_MIN_RECORD_BYTES = 58  # {"image_id":1,"category_id":1,"bbox":[1,1,1,1],"score":1} and a comma
_MASK_MODES = {"decline": _M_DECLINE, "skip": _M_SKIP, "read": _M_READ}


def parse_results_columns(raw: bytes, masks: str = "decline") -> dict | None:
    """Columns of a COCO results file's bytes, or ``None`` when the general loader must read it.

    Returns ``{"image_id": int64 (N,), "category_id": int64 (N,), "bbox": float64 (N, 4),
    "score": float64 (N,), "has_bbox": True, "n": N}``: exactly what ``json.loads`` and
    ``np.array(..., float64)`` give for every record (ids as Python ints, numbers as
    ``float(token)``; ``-0`` is the integer 0, ``-0.0`` the float -0.0), in file order.

    ``masks`` says what a ``segmentation`` or ``keypoints`` key does: ``"decline"`` (None),
    ``"skip"`` (validated as JSON, not read: for box evaluation, where pycocotools reads no
    mask of results that have boxes), or ``"read"``: every record must then have a
    ``segmentation`` that is compressed RLE, ``{"size": [h, w], "counts": "..."}``, and may
    lack ``bbox``; the result adds ``"masks"``, a :class:`deteval.io.masks.Masks` equal to
    what ``masks_from_segmentations`` reads, and ``"has_bbox"`` becomes a bool array (rows
    without a box have zeros there). Keypoints decline in this mode.

    ``None`` for anything else: a top level that is not a list of objects, a record
    without one of the four keys or with a duplicate of one, ids that are not integer
    tokens of at most 18 digits, a bbox that is not 4 numbers, a ``segmentation`` or
    ``keypoints`` key (as ``masks`` says), a key with escapes, NaN/Infinity, an infinite
    value, malformed JSON or UTF-8, nesting deeper than 200 in extra values; for masks
    read, RLE that is not plain (other keys, uncompressed counts, polygons, escapes other
    than ``\\\\``, chars outside ``'0'``-``'o'``, a negative or 19+ digit size) or that the
    general path rejects (runs that are negative, beyond 2**32 - 1 or not summing to h*w).

    ``raw`` may be a read-only memory map. From 8 MB on, it is scanned in pieces on threads
    (see :func:`_pieces`), with the same result.
    """
    return start_results_scan(raw, masks)()


def start_results_scan(raw: bytes, masks: str = "decline") -> Callable[[], dict | None]:
    """:func:`parse_results_columns` begun: pool threads start on the file's pieces now, all but one
    (a caller may load the ground truth meanwhile); the function returned takes the pieces left in
    the calling thread, then gives the columns."""
    mode = _MASK_MODES[masks]
    buf = np.frombuffer(raw, dtype=np.uint8)
    threads = num_threads()
    scan = _PieceScan(raw, buf, mode, _pieces(raw, threads), threads - 1)
    return partial(_columns, raw, buf, mode, scan)


def _columns(raw: bytes, buf: np.ndarray, mode: int, scan: _PieceScan) -> dict | None:
    scanned = scan.rows()
    if scanned is None:
        return None
    image_id, category_id, bbox, score, present, rle, spans = scanned
    nrec = len(score)
    has_bbox: bool | np.ndarray = True
    if mode == _M_READ:
        has_bbox = (present & (1 << _K_BBOX)) != 0
        bbox[~has_bbox] = 0.0
    if len(spans):
        targets = (bbox.reshape(-1), score)
        for kind, slot, start, end in spans.tolist():
            v = float(raw[start:end])
            if not math.isfinite(v):
                return None  # 1e400: the general path reports it
            targets[kind][slot] = v
    out = {
        "image_id": image_id,
        "category_id": category_id,
        "bbox": bbox,
        "score": score,
        "has_bbox": has_bbox,
        "n": nrec,
    }
    if mode == _M_READ:
        masks_read = _masks_of(buf, rle)
        if masks_read is None:
            return None
        out["masks"] = masks_read
    return out


_PIECE_BYTES = 4 << 20  # a results file is scanned in pieces, on threads, from twice this size
_PIECES_PER_THREAD = 4  # threads busy elsewhere at first (the ground truth's scan) take the last pieces
_RECORD_GAP = re.compile(rb"\}[ \t\n\r]*,[ \t\n\r]*\{")


def _pieces(raw: bytes, threads: int) -> list[tuple[int, int]]:
    """Byte ranges covering ``raw`` but for the commas between them: a few per thread for a large file.

    Each cut is a comma between ``}`` and ``{`` near an even share of the bytes. It
    separates two records when the piece before it scans as whole records; a comma that
    does not (one inside a string, or between nested objects) fails that scan.
    """
    n_pieces = max(1, min(_PIECES_PER_THREAD * threads, len(raw) // _PIECE_BYTES))
    bounds, lo = [], 0
    for k in range(1, n_pieces):
        gap = _RECORD_GAP.search(raw, max(lo, len(raw) * k // n_pieces))
        if gap is None:
            break
        comma = raw.find(b",", gap.start())
        bounds.append((lo, comma))
        lo = comma + 1
    return [*bounds, (lo, len(raw))]


class _PieceScan:
    """:func:`_scan_results` over each piece of ``raw`` (byte ranges ``bounds``), taken by ``helpers`` pool
    threads and by the caller of :meth:`rows`, whichever is free. Each piece's rows are moved down behind
    the previous piece's as soon as every piece before it is scanned, by the thread that scanned it last."""

    def __init__(self, raw: bytes, buf: np.ndarray, mode: int, bounds: list[tuple[int, int]], helpers: int) -> None:
        self.raw, self.buf, self.mode, self.bounds = raw, buf, mode, bounds
        caps = [(hi - lo) // _MIN_RECORD_BYTES + 1 for lo, hi in bounds]
        self.first = np.concatenate([[0], np.cumsum(caps)]).astype(np.int64)
        cap = int(self.first[-1])
        self.image_id = np.empty(cap, np.int64)
        self.category_id = np.empty(cap, np.int64)
        self.bbox = np.empty((cap, 4), np.float64)
        self.score = np.empty(cap, np.float64)
        self.present = np.empty(cap, np.int64)
        self.rle = np.empty((cap if mode == _M_READ else 0, 6), np.int64)
        # (kind, slot, start, end) for Python; pages touched only if used
        self.spans = [np.empty((5 * c, 4), np.int64) for c in caps]
        self.scans: list = [None] * len(bounds)
        self.placed = self.nrec = 0  # pieces, and their rows, in place
        self.placed_spans: list[np.ndarray] = []
        self.lock = threading.Lock()
        self.tasks = SharedTasks([partial(self._scan, k) for k in range(len(bounds))], helpers)

    def _arrays(self) -> tuple:
        return self.image_id, self.category_id, self.bbox, self.score, self.present, self.rle

    def _scan(self, k: int) -> None:
        (lo, hi), rows = self.bounds[k], slice(self.first[k], self.first[k + 1])
        self.scans[k] = _scan_results(
            self.buf[lo:hi], k == 0, k == len(self.bounds) - 1, self.mode, self.image_id[rows],
            self.category_id[rows], self.bbox[rows], self.score[rows], self.present[rows], self.rle[rows],
            self.spans[k], np.empty(_MAX_DEPTH, np.uint8),
        )  # fmt: skip
        if self.mode != _M_READ:
            _release_pages(self.raw, lo, hi)
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
        for column in self._arrays():
            if len(column) and src != dst:
                column[dst] = column[src]  # the rows of later pieces lie beyond: they are not touched
        if len(self.rle):
            self.rle[dst, 2:4] += lo
        s = self.spans[k][:n_spans]
        s[:, 1] += np.where(s[:, 0] == 0, 4 * self.nrec, self.nrec)  # a box coordinate's slot, or a score's
        s[:, 2:] += lo
        self.placed_spans.append(s)
        self.nrec += n_rows

    def rows(self):
        """``(image_id, category_id, bbox, score, present, rle, spans)`` in file order, the pieces joined;
        if any piece fails, the whole file scanned again as one. ``None`` where that declines."""
        self.tasks.results()
        if self.placed < len(self.bounds):
            if len(self.bounds) == 1:
                return None
            return _PieceScan(self.raw, self.buf, self.mode, [(0, len(self.raw))], 0).rows()
        return (*(column[: self.nrec] for column in self._arrays()), np.concatenate(self.placed_spans))


def _release_pages(raw, lo: int, hi: int) -> None:
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


def _masks_of(buf: np.ndarray, rle: np.ndarray):
    """The scanned compressed RLE as :class:`Masks`, or ``None`` where the general path reports an error."""
    from deteval.io.masks import Masks

    offsets = np.zeros(len(rle) + 1, np.int64)
    np.cumsum(rle[:, 4], out=offsets[1:])
    counts = np.empty(offsets[-1], np.uint32)
    total, ones, bad = np.zeros(len(rle), np.int64), np.zeros(len(rle), np.int64), np.zeros(len(rle), np.bool_)
    run_chunks(_decode_rle_spans, len(rle), rle[:, 3] - rle[:, 2], buf, rle, offsets, counts, total, ones, bad)
    height, width = rle[:, 0].copy(), rle[:, 1].copy()
    if bad.any() or (total != height * width).any():
        return None
    return Masks(counts=counts, offsets=offsets, height=height, width=width, area=ones.astype(np.float64))


# ---------------------------------------------------------------------------------------------
# Ground truth: {"images": [...], "annotations": [...], "categories": [...], ...}
# ---------------------------------------------------------------------------------------------
# How a known key's value is read (anything else declines the file)
_V_INT, _V_NUM, _V_BOX, _V_FLAG, _V_STR, _V_SEGM = 0, 1, 2, 3, 4, 5
# a segmentation's row in `seg`: (h, w, a, b, count, kind), the first five laid out as the results'
# `rle` rows so that `_masks_of` decodes the strings; h, w are 0 for polygons (the image's size)
_SEG_POLYGONS, _SEG_RUNS, _SEG_STRING = 1, 2, 3  # parts a:b of `parts`; runs a:b of `uruns`; chars a:b
_SPAN_COORDS = 3  # spans' kind for a polygon coordinate (0-2 are the lists' float columns)
_L_IMAGES, _L_ANNOTATIONS, _L_CATEGORIES = 0, 1, 2
_LIST_KEYS = np.frombuffer(b"imagesannotationscategories", np.uint8).copy()
_LIST_OFF = np.array([0, 6, 17, 27], np.int64)


class _Spec:
    """The keys read from one list's records: (name, how, int or float column), required ones."""

    def __init__(self, keys: list[tuple[str, int, int]], required: tuple[str, ...]):
        names = [k.encode() for k, _, _ in keys]
        self.key_bytes = np.frombuffer(b"".join(names), np.uint8).copy()
        self.key_off = np.cumsum([0] + [len(k) for k in names]).astype(np.int64)
        self.how = np.array([h for _, h, _ in keys], np.int64)
        self.col = np.array([c for _, _, c in keys], np.int64)
        self.required = sum(1 << i for i, (k, _, _) in enumerate(keys) if k in required)
        self.n_int = max([c + (2 if h == _V_STR else 1) for _, h, c in keys if h in (_V_INT, _V_FLAG, _V_STR)] + [0])
        self.n_float = max([c + (4 if h == _V_BOX else 1) for _, h, c in keys if h in (_V_NUM, _V_BOX)] + [0])
        self.index = {k: i for i, (k, _, _) in enumerate(keys)}


_ANN_KEYS = [
    ("id", _V_INT, 0),
    ("image_id", _V_INT, 1),
    ("category_id", _V_INT, 2),
    ("iscrowd", _V_FLAG, 3),
    ("ignore", _V_FLAG, 4),
    ("bbox", _V_BOX, 0),
    ("area", _V_NUM, 4),
]
_GT_SPECS = (
    _Spec([("id", _V_INT, 0), ("height", _V_NUM, 0), ("width", _V_NUM, 1)], ("id",)),
    _Spec(_ANN_KEYS, ("id", "image_id", "category_id", "bbox")),
    _Spec([("id", _V_INT, 0), ("name", _V_STR, 1)], ("id",)),
)
# mask evaluation: the segmentation is read and required, the box may be missing (then the mask's extent)
_SEGM_ANN_SPEC = _Spec([*_ANN_KEYS, ("segmentation", _V_SEGM, 0)], ("id", "image_id", "category_id", "segmentation"))
_MIN_OBJECT_BYTES = 9  # {"id":1} and a comma


@_kernel()
def _polygons(buf, pos, n, seg, row, parts, coords, fill, spans, nspan):
    """Polygons ``[[x1, y1, x2, y2, ...], ...]`` at ``pos`` into ``coords`` (``float(token)`` each,
    or a span for Python) and ``parts`` (numbers per part); ``fill`` = (parts, coords) used so far.
    (end or -1, spans). An empty list, a part of fewer than 6 numbers or an odd count, anything
    but number tokens (19+ digit integers included) are -1: the general path's errors."""
    np_ = fill[0]
    nc = fill[1]
    first = np_
    pos = _ws(buf, pos + 1, n)
    if _at(buf, pos, n) == 93:
        return -1, nspan
    while True:
        if _at(buf, pos, n) != 91:
            return -1, nspan
        pos = _ws(buf, pos + 1, n)
        count = 0
        while True:
            start = pos
            pos, neg, is_float, mant, e10, too_long = _number(buf, pos, n)
            if pos < 0 or (too_long and not is_float) or nc >= coords.size:
                return -1, nspan
            v = 0.0
            ok = False
            if not too_long:
                v, ok = _to_float(neg, is_float, mant, e10)
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
            pos, more = _next_item(buf, pos, n, 93)
            if more < 0:
                return -1, nspan
            if more == 0:
                break
        if count < 6 or count % 2 == 1 or np_ >= parts.size:
            return -1, nspan
        parts[np_] = count
        np_ += 1
        pos, more = _next_item(buf, pos, n, 93)
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


@_kernel()
def _run_list(buf, pos, n, uruns, fill):
    """Uncompressed RLE counts ``[r1, r2, ...]`` at ``pos`` appended to ``uruns`` from ``fill[2]``:
    (end or -1, first, end index). Integer tokens in ``[0, 2**32)`` only (``-0``, ``1.0``, larger
    runs are the general path's)."""
    first = fill[2]
    k = first
    pos = _ws(buf, pos + 1, n)
    if _at(buf, pos, n) == 93:
        return pos + 1, first, k
    while True:
        pos, neg, is_float, mant, _e10, too_long = _number(buf, pos, n)
        if pos < 0 or neg or is_float or too_long or mant > 0xFFFFFFFF or k >= uruns.size:
            return -1, first, k
        uruns[k] = mant
        k += 1
        pos, more = _next_item(buf, pos, n, 93)
        if more < 0:
            return -1, first, k
        if more == 0:
            fill[2] = k
            return pos, first, k


@_kernel()
def _gt_rle(buf, pos, n, seg, row, uruns, fill):
    """``{"size": [h, w], "counts": ...}`` at ``pos``, keys in either order and nothing else, the
    counts a compressed string (checked by ``_rle_counts``) or a list of runs: end or -1."""
    if _at(buf, pos, n) != 123:
        return -1
    pos = _ws(buf, pos + 1, n)
    seen = 0
    while True:
        pos, bit = _rle_key(buf, pos, n, seen)
        if pos < 0:
            return -1
        seen |= bit
        if bit == 1:
            pos, h, w = _rle_size(buf, pos, n)
            seg[row, 0] = h
            seg[row, 1] = w
        elif _at(buf, pos, n) == 34:
            seg[row, 2] = pos + 1
            pos, runs, _escaped = _rle_counts(buf, pos, n)
            seg[row, 3] = pos - 1
            seg[row, 4] = runs
            seg[row, 5] = _SEG_STRING
        elif _at(buf, pos, n) == 91:
            pos, first, end = _run_list(buf, pos, n, uruns, fill)
            seg[row, 2] = first
            seg[row, 3] = end
            seg[row, 4] = end - first
            seg[row, 5] = _SEG_RUNS
        else:
            return -1
        if pos < 0:
            return -1
        pos, more = _next_item(buf, pos, n, 125)
        if more < 0:
            return -1
        if more == 0:
            break
    if seen != 3:
        return -1
    return pos


@_kernel()
def _segmentation(buf, pos, n, segm, row, spans, nspan):
    """An annotation's segmentation at ``pos`` into ``segm`` = (seg, parts, coords, uruns, fill):
    its row ``seg[row]``, its numbers appended to the flat arrays. (end or -1, spans)."""
    seg, parts, coords, uruns, fill = segm
    c = _at(buf, pos, n)
    if c == 91:
        return _polygons(buf, pos, n, seg, row, parts, coords, fill, spans, nspan)
    if c == 123:
        return _gt_rle(buf, pos, n, seg, row, uruns, fill), nspan
    return -1, nspan


@_kernel()
def _which_key(buf, start, length, key_bytes, key_off):
    for k in range(key_off.size - 1):
        a = key_off[k]
        if key_off[k + 1] - a == length:
            same = True
            for j in range(length):
                if buf[start + j] != key_bytes[a + j]:
                    same = False
                    break
            if same:
                return k
    return -1


@_kernel()
def _records(
    buf, pos, n, key_bytes, key_off, how, col, required, ints, floats, present, kind, spans, nspan, stack, segm
):  # fmt: skip
    """The list of objects at ``pos``: (status, end, records, spans); status 0 declines, 2 wants room.
    ``segm``: (seg, parts, coords, uruns, fill), where a ``_V_SEGM`` key's value goes (``_segmentation``),
    or ``None`` where the spec has no such key; ``seg`` has a row per record of room."""
    cap = present.size
    flat = floats.reshape(-1)
    nf = floats.shape[1]
    nrec = 0
    if _at(buf, pos, n) != 91:
        return 0, pos, nrec, nspan
    pos = _ws(buf, pos + 1, n)
    if _at(buf, pos, n) == 93:
        return 1, pos + 1, nrec, nspan
    while True:
        if _at(buf, pos, n) != 123:
            return 0, pos, nrec, nspan
        if nrec >= cap:
            return 2, pos, nrec, nspan
        pos = _ws(buf, pos + 1, n)
        seen = 0
        if _at(buf, pos, n) != 125:
            while True:
                if _at(buf, pos, n) != 34:
                    return 0, pos, nrec, nspan
                kstart = pos + 1
                pos, escaped = _string(buf, pos, n)
                if pos < 0 or escaped:
                    return 0, pos, nrec, nspan
                k = _which_key(buf, kstart, pos - 1 - kstart, key_bytes, key_off)
                pos = _ws(buf, pos, n)
                if _at(buf, pos, n) != 58:
                    return 0, pos, nrec, nspan
                pos = _ws(buf, pos + 1, n)
                if k < 0:
                    pos = _skip_value(buf, pos, n, stack)
                else:
                    if seen & (1 << k):
                        return 0, pos, nrec, nspan
                    seen |= 1 << k
                    h = how[k]
                    c = col[k]
                    count = 1
                    if h == _V_SEGM:
                        if segm is None:  # box evaluation: numba compiles none of the segmentation code
                            return 0, pos, nrec, nspan
                        else:
                            pos, nspan = _segmentation(buf, pos, n, segm, nrec, spans, nspan)
                        count = 0
                    elif h == _V_BOX:
                        if _at(buf, pos, n) != 91:
                            return 0, pos, nrec, nspan
                        pos = _ws(buf, pos + 1, n)
                        count = 4
                    for j in range(count):
                        if j > 0:
                            if _at(buf, pos, n) != 44:
                                return 0, pos, nrec, nspan
                            pos = _ws(buf, pos + 1, n)
                        b = _at(buf, pos, n)
                        if h == _V_STR:  # the token's span, quotes included, decoded in Python
                            if b != 34:
                                return 0, pos, nrec, nspan
                            ints[nrec, c] = pos
                            pos = _scalar(buf, pos, n)
                            ints[nrec, c + 1] = pos
                            continue
                        if h == _V_FLAG and (b == 116 or b == 102):
                            ints[nrec, c] = 1 if b == 116 else 0
                            pos = _scalar(buf, pos, n)
                            continue
                        start = pos
                        pos, neg, is_float, mant, e10, too_long = _number(buf, pos, n)
                        if pos < 0:
                            return 0, pos, nrec, nspan
                        if h == _V_INT or h == _V_FLAG:
                            if is_float or too_long:
                                return 0, pos, nrec, nspan
                            ints[nrec, c] = -mant if neg else mant
                            continue
                        if too_long and not is_float:
                            return 0, pos, nrec, nspan
                        v = 0.0
                        ok = False
                        if not too_long:
                            v, ok = _to_float(neg, is_float, mant, e10)
                        slot = nrec * nf + c + j
                        flat[slot] = v
                        if not ok:  # Python converts it
                            if nspan >= spans.shape[0]:
                                return 0, pos, nrec, nspan
                            spans[nspan, 0] = kind
                            spans[nspan, 1] = slot
                            spans[nspan, 2] = start
                            spans[nspan, 3] = pos
                            nspan += 1
                        pos = _ws(buf, pos, n)
                    if h == _V_BOX:
                        if _at(buf, pos, n) != 93:
                            return 0, pos, nrec, nspan
                        pos += 1
                if pos < 0:
                    return 0, pos, nrec, nspan
                pos, more = _next_item(buf, pos, n, 125)
                if more < 0:
                    return 0, pos, nrec, nspan
                if more == 0:
                    break
        else:
            pos += 1
        if seen & required != required:
            return 0, pos, nrec, nspan
        present[nrec] = seen
        nrec += 1
        pos, more = _next_item(buf, pos, n, 93)
        if more < 0:
            return 0, pos, nrec, nspan
        if more == 0:
            return 1, pos, nrec, nspan


@_kernel()
def _scan_gt(
    buf,
    kb0, ko0, how0, col0, req0, ints0, floats0, present0,
    kb1, ko1, how1, col1, req1, ints1, floats1, present1,
    kb2, ko2, how2, col2, req2, ints2, floats2, present2,
    spans, stack, counts, segm,
):  # fmt: skip
    """Fill the three lists' columns: (status, spans); ``counts`` gets the records per list.
    ``segm``: where the annotations' segmentations go (see ``_records``), or ``None``."""
    n = buf.size
    nspan = 0
    pos = _ws(buf, 0, n)
    if _at(buf, pos, n) != 123:
        return 0, nspan
    pos = _ws(buf, pos + 1, n)
    seen = 0
    if _at(buf, pos, n) == 125:
        return 0, nspan
    while True:
        if _at(buf, pos, n) != 34:
            return 0, nspan
        kstart = pos + 1
        pos, escaped = _string(buf, pos, n)
        if pos < 0 or escaped:
            return 0, nspan
        which = _which_key(buf, kstart, pos - 1 - kstart, _LIST_KEYS, _LIST_OFF)
        pos = _ws(buf, pos, n)
        if _at(buf, pos, n) != 58:
            return 0, nspan
        pos = _ws(buf, pos + 1, n)
        if which < 0:
            pos = _skip_value(buf, pos, n, stack)
            if pos < 0:
                return 0, nspan
        else:
            if seen & (1 << which):
                return 0, nspan
            seen |= 1 << which
            kb, ko, how, col, req, ints, floats, present = kb0, ko0, how0, col0, req0, ints0, floats0, present0
            if which == 1:
                kb, ko, how, col, req, ints, floats, present = kb1, ko1, how1, col1, req1, ints1, floats1, present1
            elif which == 2:
                kb, ko, how, col, req, ints, floats, present = kb2, ko2, how2, col2, req2, ints2, floats2, present2
            status, pos, nrec, nspan = _records(
                buf, pos, n, kb, ko, how, col, req, ints, floats, present, which, spans, nspan, stack, segm
            )
            if status != 1:
                return status, nspan
            counts[which] = nrec
        pos, more = _next_item(buf, pos, n, 125)
        if more < 0:
            return 0, nspan
        if more == 0:
            return (1 if _ws(buf, pos, n) == n and seen == 7 else 0), nspan


def _gt_pass(buf: np.ndarray, caps: tuple[int, int, int], n_spans: int, segm: bool):
    """One scan with room for ``caps`` records per list; with ``segm`` the annotations' segmentations
    are read into (seg, parts, coords, uruns, fill), sized for the worst case (pages touched only if used)."""
    tables = []
    args: list = [buf]
    specs = (_GT_SPECS[0], _SEGM_ANN_SPEC, _GT_SPECS[2]) if segm else _GT_SPECS
    n = buf.size if segm else 0
    seg_arrays = (
        np.empty((caps[1] if segm else 0, 6), np.int64),
        np.empty(n // 14 + 1, np.int64),  # parts: "[0,0,0,0,0,0]," at least
        np.empty(n // 2 + 1, np.float64),  # coordinates: a digit and a comma at least
        np.empty(n // 2 + 1, np.int64),  # uncompressed runs
        np.zeros(3, np.int64),
    )
    for spec, cap in zip(specs, caps):
        ints = np.empty((cap, spec.n_int), np.int64)
        floats = np.empty((cap, spec.n_float), np.float64)
        present = np.empty(cap, np.int64)
        args += [spec.key_bytes, spec.key_off, spec.how, spec.col, spec.required, ints, floats, present]
        tables.append((ints, floats, present))
    spans = np.empty((n_spans, 4), np.int64)
    counts = np.zeros(3, np.int64)
    # box evaluation's scan is compiled without the segmentation code (``segm`` None prunes it)
    status, nspan = _scan_gt(*args, spans, np.empty(_MAX_DEPTH, np.uint8), counts, seg_arrays if segm else None)
    return status, tables, spans[:nspan], counts, seg_arrays


def parse_gt_columns(raw: bytes, segm: bool = False) -> dict | None:
    """Columns of a COCO ground truth file's bytes, or ``None``.

    Returns ``{"images": {"id", "height", "width"}, "annotations": {"id", "image_id",
    "category_id", "bbox", "area", "iscrowd", "ignore"}, "categories": {"id", "name"}}``,
    each list's records in file order, with the general loader's defaults: a missing
    height/width is -1, a missing area the box's ``w*h``, a missing iscrowd/ignore 0
    (``true``/``false`` read as 1/0), a missing name ``str(id)``. Ids and flags are int64,
    numbers float64 (``float(token)`` exactly), names a list of ``str``. ``segmentation``,
    ``keypoints`` and every other key are skipped (validated, not read).

    ``None`` (the general loader decides) for anything else: a top level that is not an
    object with exactly one each of ``images``, ``annotations`` and ``categories`` lists of
    objects, a missing ``id`` (or annotation ``image_id``, ``category_id``, ``bbox``), a
    duplicate key, string ids, a value of the wrong type (a ``null`` area included), an
    integer of 19+ digits, an infinite number, a key with escapes, malformed JSON.

    ``segm`` (mask evaluation): every annotation's ``segmentation`` is read too and the
    ``bbox`` may be missing: ``annotations`` gains ``"has_bbox"`` and ``"has_area"`` (bool;
    a missing box is zeros, its default area 0) and ``"segmentation"``: ``{"seg", "parts",
    "coords", "runs", "buf"}`` (see :func:`gt_masks`). Segmentations decline unless polygons
    ``[[x1, y1, ...], ...]`` (at least one part, each of 6+ numbers, an even count) or RLE
    ``{"size": [h, w], "counts": ...}`` with nothing else, compressed (as the results
    scanner reads it) or uncompressed (integer runs in ``[0, 2**32)``).
    """
    buf = np.frombuffer(raw, dtype=np.uint8)
    bound = len(raw) // _MIN_OBJECT_BYTES + 1
    guess = min(bound, len(raw) // 64 + 16)  # real records are longer: retry only when they are not
    status, tables, spans, counts, seg_arrays = _gt_pass(buf, (guess, guess, guess), 8 * guess, segm)
    if status == 2:
        status, tables, spans, counts, seg_arrays = _gt_pass(buf, (bound, bound, bound), 8 * bound, segm)
    if status != 1:
        return None
    floats_of = [t[1][: counts[i]] for i, t in enumerate(tables)]
    n_parts, n_coords, n_runs = seg_arrays[4].tolist()
    coords = seg_arrays[2][:n_coords]
    if len(spans):
        flat = [f.reshape(-1) for f in floats_of] + [coords]
        for which, slot, start, end in spans.tolist():
            v = float(raw[start:end])
            if not math.isfinite(v):
                return None
            flat[which][slot] = v
    out = {}
    specs = (_GT_SPECS[0], _SEGM_ANN_SPEC, _GT_SPECS[2]) if segm else _GT_SPECS
    for which, (name, spec) in enumerate(zip(("images", "annotations", "categories"), specs)):
        m = int(counts[which])
        ints, floats, present = tables[which][0][:m], floats_of[which], tables[which][2][:m]
        has = {key: (present >> i) & 1 == 1 for key, i in spec.index.items()}
        out[name] = {"_ints": ints, "_floats": floats, "_has": has}
    img, ann, cat = out["images"], out["annotations"], out["categories"]
    images = {
        "id": img["_ints"][:, 0].copy(),
        "height": np.where(img["_has"]["height"], img["_floats"][:, 0], -1.0),
        "width": np.where(img["_has"]["width"], img["_floats"][:, 1], -1.0),
    }
    box = ann["_floats"][:, :4].copy()
    if segm:
        box[~ann["_has"]["bbox"]] = 0.0  # as the general path's default [0, 0, 0, 0] (area 0)
    box_area = xywh_area(box)
    annotations = {
        "id": ann["_ints"][:, 0].copy(),
        "image_id": ann["_ints"][:, 1].copy(),
        "category_id": ann["_ints"][:, 2].copy(),
        "bbox": box,
        "area": np.where(ann["_has"]["area"], ann["_floats"][:, 4], box_area),
        "iscrowd": np.where(ann["_has"]["iscrowd"], ann["_ints"][:, 3], 0),
        "ignore": np.where(ann["_has"]["ignore"], ann["_ints"][:, 4], 0),
    }
    if segm:
        m = int(counts[1])
        annotations["has_bbox"] = ann["_has"]["bbox"]
        annotations["has_area"] = ann["_has"]["area"]
        annotations["segmentation"] = {
            "seg": seg_arrays[0][:m],
            "parts": seg_arrays[1][:n_parts],
            "coords": coords,
            "runs": seg_arrays[3][:n_runs],
            "buf": buf,
        }
    cat_ids = cat["_ints"][:, 0].copy()
    names = []
    for i, (given, start, end) in enumerate(zip(cat["_has"]["name"].tolist(), *cat["_ints"][:, 1:3].T.tolist())):
        if not given:
            names.append(str(int(cat_ids[i])))
            continue
        token = raw[start:end]
        names.append(json.loads(token) if b"\\" in token else token[1:-1].decode("utf-8"))
    return {"images": images, "annotations": annotations, "categories": {"id": cat_ids, "name": names}}


def gt_masks(seg: dict, heights: np.ndarray, widths: np.ndarray):
    """The scanned segmentations (``parse_gt_columns(raw, segm=True)["annotations"]["segmentation"]``)
    as :class:`Masks`, equal to what ``masks_from_segmentations`` makes of them, polygons
    rasterised at ``heights``/``widths`` (each annotation's image's, float64); or ``None`` for
    what the general path reads otherwise or reports: polygons without a positive integer image
    size, too large for the rasteriser or with a coordinate beyond ±1e6, RLE whose size is not
    its image's, runs not summing to ``h*w``, compressed runs that are negative or too large.
    """
    from deteval.io.masks import _POLYGON_LIMIT, _U32_MAX, Masks, _place, _run_totals
    from deteval.io.polygons import MAX_PIXELS, polygon_runs

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
    if len(coords) and not (np.abs(coords).max() <= _POLYGON_LIMIT):
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
        sources.append((np.flatnonzero(listed), seg["runs"], np.concatenate([[0], np.cumsum(lengths[listed])])))
    strings = np.flatnonzero(kind == _SEG_STRING)
    if len(strings):
        decoded = _masks_of(buf, np.ascontiguousarray(rows[strings]))
        if decoded is None:
            return None
        sources.append((strings, decoded.counts.astype(np.int64), decoded.offsets))
    offsets = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.empty(offsets[-1], np.int64)
    for where, values, src_off in sources:
        _place(flat, offsets, where, values, src_off.astype(np.int64))
    total, ones, negative = _run_totals(flat, offsets)
    if negative.any() or (total != hs * ws).any() or (len(flat) and flat.max() > _U32_MAX):
        return None
    return Masks(counts=flat.astype(np.uint32), offsets=offsets, height=hs, width=ws, area=ones.astype(np.float64))
