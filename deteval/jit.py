"""numba's ``njit`` for deteval's kernels, and threads without parfors.

Every kernel module takes ``njit`` from here: numba's, with the cache of
:mod:`deteval.numba_start` (its key covers the kernels a kernel calls; a
warm process loads kernels without numba's start-up costs).

Parallel work runs serial ``nogil`` kernels over ranges of independent items
(groups, categories) on a thread pool (:func:`run_chunks`), not through
``parallel=True``: numba's parfors pass adds about 5 s to the first compile
of the kernels, a cost every fresh install and every cache miss pays. The
thread count is ``NUMBA_NUM_THREADS`` when set, else the CPUs this process
may run on.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache
from typing import TypeVar

import numpy as np

# numba's njit from deteval.numba_start, which imports numba without what deteval does not need
from deteval.numba_start import numba_njit as _numba_njit
from deteval.numba_start import with_kernel_cache


def njit(*args, **kwargs):
    """``numba.njit``, its cache a :class:`deteval.numba_start.KernelCache`."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return with_kernel_cache(_numba_njit(args[0]))
    decorate = _numba_njit(*args, **kwargs)
    return lambda func: with_kernel_cache(decorate(func))


__all__ = ["in_background", "njit", "num_threads", "run_chunks", "run_tasks"]

T = TypeVar("T")


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


def run_tasks(tasks: Sequence[Callable[[], T]]) -> list[T]:
    """Call each task on threads, the first in the caller; their results, in order.

    Tasks should be ``nogil`` kernel calls. Not for use inside :func:`run_chunks`
    kernels: the tasks take threads from the same pool.
    """
    threads = num_threads()
    if threads == 1 or len(tasks) < 2:
        return [task() for task in tasks]
    pool = _pool(threads, os.getpid())
    futures = [pool.submit(task) for task in tasks[1:]]
    first = tasks[0]()
    return [first, *(f.result() for f in futures)]


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
        bounds = np.concatenate([[0], bounds, [n_items]]).astype(np.int64)
        bounds = bounds[np.diff(bounds, prepend=-1) > 0]  # ascending: repeats dropped (np.unique imports numpy.ma)
    pool = _pool(threads, os.getpid())
    futures = [pool.submit(kernel, int(lo), int(hi), *args) for lo, hi in zip(bounds[:-1], bounds[1:])]
    for f in futures:
        f.result()
