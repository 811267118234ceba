"""numba imported without scipy and yaml; numba's ``arraymath`` imported without scipy's BLAS module.

Both are import hooks (:class:`_Deferred`) that live in ``sys.meta_path`` only
for the duration of a ``with`` block run by deteval itself (its ``import numba``,
and its own kernels' cache loads and compiles), and only refuse imports made by
the thread that opened the block: any other thread imports as usual meanwhile.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

_BLAS_MODULE = "scipy.linalg.cython_blas"


class _Deferred(importlib.abc.MetaPathFinder):
    """Imports of these packages (and their submodules) fail in this thread; other threads import as usual."""

    def __init__(self, *packages: str) -> None:
        self.packages = packages
        self.thread = threading.get_ident()

    def find_spec(self, name, path=None, target=None):
        # the parents are imported before the module itself: they are the cost
        if threading.get_ident() == self.thread and any(name == p or name.startswith(p + ".") for p in self.packages):
            raise ImportError(f"{name} deferred by deteval._runtime")
        return None


@contextmanager
def _deferred(*packages: str) -> Iterator[None]:
    finder = _Deferred(*packages)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def import_numba_lightly() -> None:
    """``import numba`` without scipy, and without yaml when there is no numba config file to read.

    numba's import checks scipy's version if scipy imports (16 ms) and imports
    yaml for a ``.numba_config.yaml`` in the working directory (14 ms). Without
    them, numba skips the version check; yaml is imported when numba first
    reads a config file (after a change of directory, say). Nothing is
    deferred once numba is in, and nothing at all if numba was imported already.
    """
    if "numba" in sys.modules:
        return
    config_file = os.path.exists(".numba_config.yaml")
    with _deferred(*(("scipy",) if config_file else ("scipy", "yaml"))):
        import numba  # noqa: F401
    config = sys.modules.get("numba.core.config")
    if not config_file and getattr(config, "_HAVE_YAML", True) is False and importlib.util.find_spec("yaml"):
        # a config file in the directory numba reloads its config from later is read as numba would
        config._HAVE_YAML, config.yaml = True, _YamlOnDemand()


class _YamlOnDemand:
    """Stands for the ``yaml`` module in numba's config: imports it on first use."""

    def __getattr__(self, name: str):
        import yaml

        return getattr(yaml, name)


@contextmanager
def scipy_blas_deferred() -> Iterator[None]:
    """Any import of ``numba.np.arraymath`` in this block does not import scipy.

    numba imports ``scipy.linalg`` (about 0.15 s) only to learn whether a BLAS
    exists for ``np.dot``-based implementations, which deteval's kernels do not
    use. The flag is then set to what numba would have found, so scipy is
    imported later, by numba itself, only if some jitted code in the process
    needs it. Nothing changes when numba's arraymath was already imported.
    """
    if "numba.np.arraymath" in sys.modules or _BLAS_MODULE in sys.modules:
        yield
        return
    try:
        with _deferred("scipy"):
            yield
    finally:
        arraymath = sys.modules.get("numba.np.arraymath")
        if arraymath is not None and hasattr(arraymath, "_HAVE_BLAS"):
            arraymath._HAVE_BLAS = importlib.util.find_spec("scipy") is not None


def import_arraymath_without_scipy() -> None:
    """``import numba.np.arraymath`` in :func:`scipy_blas_deferred` (before a compile refreshes numba's context)."""
    with scipy_blas_deferred(), suppress(ImportError):  # a numba without this module: nothing to defer
        import numba.np.arraymath  # noqa: F401
