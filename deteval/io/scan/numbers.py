"""Number tokens to binary64, bit for bit as Python's ``float(token)``.

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

import math

import numpy as np

from deteval.io.scan.lexer import INLINE, KERNEL
from deteval.jit import njit

Q_MIN, Q_MAX = -342, 308  # decimal exponents the 128-bit step handles (outside: Python float)


def _pow5_table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For q in [Q_MIN, Q_MAX]: 5**q ~ T * 2**b with T in [2**127, 2**128), |T - 5**q/2**b| < 1."""
    qs = range(Q_MIN, Q_MAX + 1)
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


@njit(**INLINE)
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


@njit(**KERNEL)
def wide(mant, q):
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
    i = q - Q_MIN
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


@njit(**INLINE)
def to_float(neg, is_float, mant, e10):
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
    if e10 < Q_MIN or e10 > Q_MAX:
        return 0.0, False
    v, ok = wide(mant, e10)
    return (-v if neg else v), ok
