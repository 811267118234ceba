"""numba's type of an array argument, without importing ``numpy.ma`` (12 ms) on a kernel's first call.

numba's ``typeof`` for ``np.ndarray`` starts with ``isinstance(val,
np.ma.MaskedArray)``, and numpy 2 imports ``numpy.ma`` on that first use.
:func:`install` registers :func:`_typeof_ndarray` in its place, for every numba
user in the process (numba has one registry), so it is built to be
indistinguishable from numba's function:

- while ``numpy.ma`` is not imported no value can be a masked array, so for an
  array of type exactly ``np.ndarray`` whose dtype numba takes it returns what
  numba's function computes after that check, step by step;
- everything else (a subclass, a dtype numba refuses, and every call once
  anyone has imported ``numpy.ma``) goes to numba's own function: its result,
  its error, and its import of ``numpy.ma``.

It is installed only when numba's function reads exactly the names this copy
was written against (:data:`_NUMBA_NAMES`, numba 0.59 to 0.68), and not at all
once ``numpy.ma`` is imported (nothing to save then).
"""

from __future__ import annotations

import sys

import numpy as np
from numba.core import errors, types
from numba.core.typing import typeof
from numba.np import numpy_support

# the globals and attributes numba's _typeof_ndarray reads: another set means another function
_NUMBA_NAMES = frozenset(
    ("isinstance", "np", "ma", "MaskedArray", "errors", "NumbaTypeError", "numpy_support", "from_dtype", "dtype",
     "NumbaNotImplementedError", "NumbaValueError", "map_layout", "flags", "writeable", "types", "Array", "ndim")
)  # fmt: skip

_numba_typeof_ndarray = typeof.typeof_impl.dispatch(np.ndarray)


def _typeof_ndarray(val, c):
    """numba's ``_typeof_ndarray`` for an exact ``np.ndarray`` while ``numpy.ma`` is not imported; numba's otherwise."""
    if type(val) is not np.ndarray or "numpy.ma" in sys.modules:
        return _numba_typeof_ndarray(val, c)
    try:
        dtype = numpy_support.from_dtype(val.dtype)
    except errors.NumbaNotImplementedError:
        return _numba_typeof_ndarray(val, c)  # its error
    return types.Array(dtype, val.ndim, numpy_support.map_layout(val), readonly=not val.flags.writeable)


def _is_numbas_own(fn) -> bool:
    code = getattr(fn, "__code__", None)
    return (
        getattr(fn, "__module__", None) == typeof.__name__
        and code is not None
        and frozenset(code.co_names) == _NUMBA_NAMES
    )


def install() -> bool:
    """Register :func:`_typeof_ndarray` for ``np.ndarray`` if numba's function is the one it copies; whether it is."""
    if "numpy.ma" in sys.modules or not _is_numbas_own(_numba_typeof_ndarray):
        return False
    typeof.typeof_impl.register(np.ndarray)(_typeof_ndarray)
    return True


def installed() -> bool:
    """Whether numba's registry holds :func:`_typeof_ndarray` for ``np.ndarray``."""
    return typeof.typeof_impl.dispatch(np.ndarray) is _typeof_ndarray
