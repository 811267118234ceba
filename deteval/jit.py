"""numba for deteval's kernels, with one start-up cost deferred.

Every kernel module takes ``njit`` and ``prange`` from here. On the first
compilation or cache load numba imports ``numba.np.arraymath``, which
imports ``scipy.linalg`` (about 0.15 s) only to learn whether a BLAS exists
for ``np.dot``-based implementations. deteval's kernels use no BLAS, so that
module is imported here with scipy's BLAS module kept out of reach, and the
flag is then set to what numba would have found: scipy is imported later,
by numba itself, only if some jitted code in the process needs it.
Nothing changes when numba's arraymath was already imported.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

_BLAS_MODULE = "scipy.linalg.cython_blas"


class _DeferBlas(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        # the parents are imported before the module itself: they are the cost
        if name == "scipy" or name.startswith("scipy.linalg"):
            raise ImportError(f"{name} deferred by deteval.jit")
        return None


def _import_arraymath_without_scipy() -> None:
    if "numba.np.arraymath" in sys.modules or _BLAS_MODULE in sys.modules:
        return
    finder = _DeferBlas()
    sys.meta_path.insert(0, finder)
    try:
        import numba.np.arraymath as arraymath
    finally:
        sys.meta_path.remove(finder)
    if hasattr(arraymath, "_HAVE_BLAS"):
        arraymath._HAVE_BLAS = importlib.util.find_spec("scipy") is not None


_import_arraymath_without_scipy()

from numba import njit, prange  # noqa: E402

__all__ = ["njit", "prange"]
