"""numba for deteval's kernels: start-up costs cut, and threads without parfors.

Every kernel module takes ``njit`` from here. It is numba's, with a cache
key that covers the kernels a kernel calls (see :class:`_KernelCache`) and
two start-up costs removed from every process:

- Loading a cached kernel skips numba's context refresh (see
  :class:`_KernelCache`), which imports and installs every typing and
  lowering registry, about 0.2 s that only compiling needs.
- Whenever ``numba.np.arraymath`` may be imported for the first time (before
  a compile, or while unpickling a cached kernel), scipy's BLAS module is
  kept out of reach of this thread: numba imports ``scipy.linalg`` (about
  0.15 s) only to learn whether a BLAS exists for ``np.dot``-based
  implementations, which deteval's kernels do not use. The flag is then set
  to what numba would have found, so scipy is imported later, by numba
  itself, only if some jitted code in the process needs it. Nothing changes
  when numba's arraymath was already imported.

Parallel work runs serial ``nogil`` kernels over ranges of independent items
(groups, categories) on a thread pool (:func:`run_chunks`), not through
``parallel=True``: numba's parfors pass adds about 5 s to the first compile
of the kernels, a cost every fresh install and every cache miss pays. The
thread count is ``NUMBA_NUM_THREADS`` when set, else the CPUs this process
may run on.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.util
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from functools import cache
from pathlib import Path

import numpy as np
from numba import njit as _numba_njit
from numba.core.caching import FunctionCache
from numba.core.runtime import rtsys

_BLAS_MODULE = "scipy.linalg.cython_blas"


class _DeferBlas(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self.thread = threading.get_ident()  # other threads may import scipy meanwhile

    def find_spec(self, name, path=None, target=None):
        # the parents are imported before the module itself: they are the cost
        if (name == "scipy" or name.startswith("scipy.linalg")) and threading.get_ident() == self.thread:
            raise ImportError(f"{name} deferred by deteval.jit")
        return None


@contextmanager
def _scipy_blas_deferred():
    """Any import of ``numba.np.arraymath`` in this block does not import scipy (see the module docstring)."""
    if "numba.np.arraymath" in sys.modules or _BLAS_MODULE in sys.modules:
        yield
        return
    finder = _DeferBlas()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        arraymath = sys.modules.get("numba.np.arraymath")
        if arraymath is not None and hasattr(arraymath, "_HAVE_BLAS"):
            arraymath._HAVE_BLAS = importlib.util.find_spec("scipy") is not None


def _import_arraymath_without_scipy() -> None:
    with _scipy_blas_deferred(), suppress(ImportError):  # a numba without this module: nothing to defer
        import numba.np.arraymath  # noqa: F401


@cache
def _kernel_sources_digest() -> str:
    """sha256 of every deteval module that takes ``njit`` from here (their paths and bytes)."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        text = path.read_bytes()
        if path.name == "jit.py" or b"deteval.jit import" in text:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + text)
    return digest.hexdigest()


class _KernelCache(FunctionCache):
    """numba's on-disk cache for deteval's kernels: loads skip a refresh, and any kernel source is part of the key.

    ``FunctionCache.load_overload`` refreshes the target context before
    reading the cache: it imports and installs all of numba's typing and
    lowering registries (about 0.2 s per process) that only compiling needs.
    Rebuilding cached machine code needs the runtime initialised, nothing more;
    a miss goes on to numba's compiler, which refreshes the context itself.

    numba keys a cached kernel on its own bytecode and checks its own file's
    time stamp, but a kernel carries the machine code of the kernels it calls,
    which may live in other files: after an upgrade that changed only a callee,
    numba would load the old code. The key here adds a digest of every kernel
    module's source, so a change to any of them recompiles them all.
    """

    def load_overload(self, sig, target_context):
        rtsys.initialize(target_context)
        # unpickling a kernel imports the modules of the numba implementations it uses
        with _scipy_blas_deferred(), self._guard_against_spurious_io_errors():
            loaded = self._load_overload(sig, target_context)
        if loaded is None:  # numba's compiler refreshes the context next, importing arraymath
            _import_arraymath_without_scipy()
        return loaded

    def _index_key(self, sig, codegen):
        return (*super()._index_key(sig, codegen), _kernel_sources_digest())


def njit(*args, **kwargs):
    """``numba.njit``, its cache a :class:`_KernelCache`."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return _with_kernel_cache(_numba_njit(args[0]))
    decorate = _numba_njit(*args, **kwargs)
    return lambda func: _with_kernel_cache(decorate(func))


def _with_kernel_cache(dispatcher):
    cache = getattr(dispatcher, "_cache", None)
    # the same state, two methods differ; a numba without these private methods keeps its own cache
    if type(cache) is FunctionCache and hasattr(cache, "_load_overload") and hasattr(cache, "_index_key"):
        cache.__class__ = _KernelCache
    return dispatcher


__all__ = ["in_background", "njit", "num_threads", "run_chunks"]


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


@cache
def _background_pool(pid: int) -> ThreadPoolExecutor:
    # its own thread: work started here may call run_chunks, whose pool must stay free for it
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="deteval-background")


def in_background(fn: Callable, *args, **kwargs) -> Future:
    """Start ``fn(*args, **kwargs)`` on a background thread; its result (or exception) is the future's.

    Worth it for ``nogil`` kernels only: other Python code takes turns on the GIL.
    """
    return _background_pool(os.getpid()).submit(fn, *args, **kwargs)


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
