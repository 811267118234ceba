"""The JSON byte lexer of the scanner: white space, strings, number tokens, any value skipped.

Each function takes the bytes ``buf`` (uint8), a position ``pos`` and the end
``n``, and returns the position after what it read, or -1 where the text is not
what it must be (the scanner then declines the file). Nothing here allocates.
"""

from __future__ import annotations

import numpy as np

from deteval.jit import njit

# Options of every scanner kernel. No reference counting (``_nrt``): the kernels take arrays and make
# none, and counting the references of ``buf`` at every helper call was half the time. ``nogil``: a
# results file is scanned on threads while the ground truth loads. ``INLINE``: small helpers inlined
# in numba's IR (slower to compile once, twice as fast to run).
KERNEL = {"cache": True, "_nrt": False, "nogil": True}
INLINE = {**KERNEL, "inline": "always"}

_MAX_DIGITS = 18  # significant digits kept in an int64 mantissa (10**18 < 2**63)
MAX_DEPTH = 200  # nesting skipped in extra values; deeper files take the general path
_TRUE = np.frombuffer(b"true", np.uint8).copy()
_FALSE = np.frombuffer(b"false", np.uint8).copy()
_NULL = np.frombuffer(b"null", np.uint8).copy()


@njit(**INLINE)
def skip_ws(buf, pos, n):
    while pos < n:
        c = buf[pos]
        if c == 32 or c == 10 or c == 13 or c == 9:
            pos += 1
        else:
            break
    return pos


@njit(**INLINE)
def byte_at(buf, pos, n):
    """The byte at ``pos``, or 0 past the end (0 is never valid where a byte is looked at)."""
    if pos < n:
        return np.int64(buf[pos])
    return np.int64(0)


@njit(**INLINE)
def next_item(buf, pos, n, close):
    """After an item of a list or object closed by ``close`` (``]`` or ``}``): (position, what
    follows): 1 another item, at the position after the comma and white space; 0 the end, just
    past ``close``; -1 anything else (malformed)."""
    pos = skip_ws(buf, pos, n)
    c = byte_at(buf, pos, n)
    if c == 44:
        return skip_ws(buf, pos + 1, n), 1
    if c == close:
        return pos + 1, 0
    return pos, -1


@njit(**INLINE)
def _cont(buf, pos, n, low, high):
    c = byte_at(buf, pos, n)
    return low <= c and c <= high


@njit(**KERNEL)
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


@njit(**INLINE)
def _is_hex(c):
    return (48 <= c <= 57) or (65 <= c <= 70) or (97 <= c <= 102)


@njit(**INLINE)
def string_end(buf, pos, n):
    """``buf[pos]`` is an opening quote: (position after the closing one or -1, whether it has escapes)."""
    pos += 1
    escaped = False
    while pos < n:
        c = buf[pos]
        if c == 34:
            return pos + 1, escaped
        if c == 92:
            escaped = True
            e = byte_at(buf, pos + 1, n)
            if e == 117:  # \uXXXX
                for k in range(2, 6):
                    if not _is_hex(byte_at(buf, pos + k, n)):
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


@njit(**INLINE)
def number_token(buf, pos, n):
    """A JSON number at ``pos``: (end or -1, negative, has fraction/exponent, mantissa, exponent, too long).

    The value is ``(-1)**negative * mantissa * 10**exponent`` exactly when not ``too long`` (more
    than 18 significant digits: the mantissa is then meaningless).
    """
    neg = False
    if byte_at(buf, pos, n) == 45:
        neg = True
        pos += 1
    mant = np.int64(0)
    nsig = 0
    e10 = np.int64(0)
    c = byte_at(buf, pos, n)
    if c == 48:
        pos += 1
        if 48 <= byte_at(buf, pos, n) <= 57:
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
    if byte_at(buf, pos, n) == 46:
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
    c = byte_at(buf, pos, n)
    if c == 101 or c == 69:
        is_float = True
        pos += 1
        c = byte_at(buf, pos, n)
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


@njit(**KERNEL)
def _literal(buf, pos, n, word):
    for k in range(word.size):
        if byte_at(buf, pos + k, n) != word[k]:
            return -1
    return pos + word.size


@njit(**KERNEL)
def scalar_end(buf, pos, n):
    """Position after the string, number or literal at ``pos``, or -1."""
    c = byte_at(buf, pos, n)
    if c == 34:
        end, _esc = string_end(buf, pos, n)
        return end
    if c == 45 or 48 <= c <= 57:
        res = number_token(buf, pos, n)
        return res[0]
    if c == 116:
        return _literal(buf, pos, n, _TRUE)
    if c == 102:
        return _literal(buf, pos, n, _FALSE)
    if c == 110:
        return _literal(buf, pos, n, _NULL)
    return -1


@njit(**KERNEL)
def _member_key(buf, pos, n):
    """Past ``"key" :`` and the blanks after it, or -1."""
    if byte_at(buf, pos, n) != 34:
        return -1
    pos = scalar_end(buf, pos, n)
    if pos < 0:
        return -1
    pos = skip_ws(buf, pos, n)
    if byte_at(buf, pos, n) != 58:
        return -1
    return skip_ws(buf, pos + 1, n)


@njit(**KERNEL)
def skip_value(buf, pos, n, stack):
    """Position after the (validated) JSON value at ``pos``, or -1. ``stack``: uint8 scratch."""
    depth = 0
    while True:
        # a value starts at pos
        c = byte_at(buf, pos, n)
        if c == 123 or c == 91:
            pos = skip_ws(buf, pos + 1, n)
            close = 125 if c == 123 else 93
            if byte_at(buf, pos, n) == close:
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
            pos = scalar_end(buf, pos, n)
            if pos < 0:
                return -1
        # after a value: close containers or move to the next member
        while True:
            if depth == 0:
                return pos
            pos = skip_ws(buf, pos, n)
            c = byte_at(buf, pos, n)
            top = stack[depth - 1]
            if c == 44:
                pos = skip_ws(buf, pos + 1, n)
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


@njit(**INLINE)
def same_bytes(buf, start, word):
    for k in range(word.size):
        if buf[start + k] != word[k]:
            return False
    return True


@njit(**INLINE)
def word_at(buf, start, n, word):
    """Whether ``buf[start:]`` is ``word`` and a closing quote."""
    end = start + word.size
    return end < n and buf[end] == 34 and same_bytes(buf, start, word)
