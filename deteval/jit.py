"""numba for deteval's kernels: one start-up cost deferred, and threads without parfors.

Every kernel module takes ``njit`` from here. On the first
compilation or cache load numba imports ``numba.np.arraymath``, which
imports ``scipy.linalg`` (about 0.15 s) only to learn whether a BLAS exists
for ``np.dot``-based implementations. deteval's kernels use no BLAS, so that
module is imported here with scipy's BLAS module kept out of reach, and the
flag is then set to what numba would have found: scipy is imported later,
by numba itself, only if some jitted code in the process needs it.
Nothing changes when numba's arraymath was already imported.

Parallel work runs serial ``nogil`` kernels over ranges of independent items
(groups, categories) on a thread pool (:func:`run_chunks`), not through
``parallel=True``: numba's parfors pass adds about 5 s to the first compile
of the kernels, a cost every fresh install and every cache miss pays. The
thread count is ``NUMBA_NUM_THREADS`` when set, else the CPUs this process
may run on.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache

import numpy as np

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
    except ImportError:  # pragma: no cover - a numba without this module: nothing to defer
        return
    finally:
        sys.meta_path.remove(finder)
    if hasattr(arraymath, "_HAVE_BLAS"):
        arraymath._HAVE_BLAS = importlib.util.find_spec("scipy") is not None


_import_arraymath_without_scipy()

from numba import njit  # noqa: E402

__all__ = ["njit", "num_threads", "run_chunks"]


def num_threads() -> int:
    """Threads for the kernels: ``NUMBA_NUM_THREADS`` if set, else the usable CPUs."""
    env = os.environ.get("NUMBA_NUM_THREADS", "")
    if env.strip().isdigit() and int(env) > 0:
        return int(env)
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # pragma: no cover - not Linux
        return max(os.cpu_count() or 1, 1)


@cache
def _pool(n: int, pid: int) -> ThreadPoolExecutor:
    # one pool per process: a forked child inherits the pool but not its threads, and would wait forever
    return ThreadPoolExecutor(max_workers=n, thread_name_prefix="deteval")


def run_chunks(kernel: Callable, n_items: int, cost: np.ndarray | None, *args) -> None:
    """Call ``kernel(lo, hi, *args)`` over ranges covering ``[0, n_items)``, on threads.

    ``kernel`` must be a ``nogil`` kernel writing its results into arrays it
    is given, each item independent of the others. ``cost`` (one
    non-negative number per item, e.g. pairs per group) balances the ranges;
    None counts items. One thread, or little work, runs in the caller.
    """
    threads = num_threads()
    if threads == 1 or n_items < 2:
        kernel(0, n_items, *args)
        return
    # a few ranges per thread, so one heavy range does not leave the others idle
    n_chunks = min(n_items, 4 * threads)
    if cost is None:
        bounds = np.linspace(0, n_items, n_chunks + 1).astype(np.int64)
    else:
        total = np.cumsum(np.asarray(cost, np.float64) + 1.0)  # +1: every item costs a little
        bounds = np.searchsorted(total, np.linspace(0, total[-1], n_chunks + 1)[1:-1], side="right")
        bounds = np.unique(np.concatenate([[0], bounds, [n_items]])).astype(np.int64)
    pool = _pool(threads, os.getpid())
    futures = [pool.submit(kernel, int(lo), int(hi), *args) for lo, hi in zip(bounds[:-1], bounds[1:])]
    for f in futures:
        f.result()
