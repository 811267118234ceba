"""numba's ``njit`` for deteval's kernels, and threads without parfors.

Every kernel module takes ``njit`` from here. It makes a :class:`Kernel`: the
code compiled ahead of time into the package where it has the arguments'
types (no numba imported, :mod:`deteval._runtime.aot`), else numba's dispatcher
with the cache of :mod:`deteval._runtime` (its key covers the kernels a kernel
calls; a warm process loads kernels without numba's start-up costs), or numba's
own ``njit`` and cache when ``DETEVAL_PLAIN_NUMBA=1``.

Parallel work runs serial ``nogil`` kernels over ranges of independent items
(groups, categories) on a thread pool (:func:`run_chunks`), not through
``parallel=True``: numba's parfors pass adds about 5 s to the first compile
of the kernels, a cost every fresh install and every cache miss pays. The
thread count is the one :func:`using_threads` set in the calling thread, else
``NUMBA_NUM_THREADS`` when set, else the CPUs this process may run on.

:func:`on_first_compile` lets an application (the CLI's notice) hear of the
first compilation, i.e. the first kernel the cache did not hold; deteval itself
prints nothing.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from functools import cache
from typing import Generic, TypeVar

import numpy as np

from deteval._runtime import PLAIN

if not PLAIN:  # DETEVAL_PLAIN_NUMBA: numba's dispatchers only, no module of deteval._runtime imported
    from deteval._runtime import aot


class Kernel:
    """A kernel: its ahead-of-time code where the package has it for the arguments' types
    (:mod:`deteval._runtime.aot`), else numba's dispatcher, made (and numba imported) on first need.

    Anything else asked of it (``signatures``, ``overloads``, ``targetoptions``...) is the
    dispatcher's; numba, compiling a kernel that calls this one, types it as its dispatcher.
    """

    def __init__(self, py_func: Callable, options: dict) -> None:
        self.py_func = py_func
        self._options = options
        self._name = f"{py_func.__module__}.{py_func.__qualname__}"
        self._dispatcher = None
        self._compiled: dict[tuple[str, ...], tuple[str, str]] | None = None
        self.__doc__ = py_func.__doc__
        self.__name__ = py_func.__name__
        self.__qualname__ = py_func.__qualname__
        self.__module__ = py_func.__module__
        self.__wrapped__ = py_func

    def __call__(self, *args, **kwargs):
        compiled = self.compiled_ahead
        if compiled and not kwargs:
            where = compiled.get(tuple(map(aot.type_key, args)))
            fn = aot.function(where) if where is not None else None
            if fn is not None:
                return fn(*args)
        return self.dispatcher(*args, **kwargs)

    @property
    def compiled_ahead(self) -> dict[tuple[str, ...], tuple[str, str]]:
        """Argument types (as :mod:`deteval._startup.kernel_signatures` writes them) with ahead-of-time code."""
        if self._compiled is None:
            self._compiled = {} if PLAIN else aot.signatures(self._name)
        return self._compiled

    @property
    def ready(self) -> bool:
        """Whether a call finds code without loading any: ahead-of-time code, or overloads already loaded."""
        return bool(self.compiled_ahead) or (self._dispatcher is not None and bool(self._dispatcher.overloads))

    @property
    def dispatcher(self):
        """numba's dispatcher of this kernel (numba imported, and the dispatcher made, on first access)."""
        if self._dispatcher is None:
            from deteval._runtime import numba_njit, with_kernel_cache

            decorate = numba_njit(**self._options) if self._options else numba_njit
            made = with_kernel_cache(decorate(self.py_func))
            # made outside the lock (a compile holding numba's lock may need another kernel's dispatcher):
            # two threads may each make one, and the first kept serves both
            with _making:
                if self._dispatcher is None:
                    self._dispatcher = made
            if _compile_callbacks:
                _listen_for_compiles()
        return self._dispatcher

    @property
    def _numba_type_(self):
        from numba.core import types

        return types.Dispatcher(self.dispatcher)

    def __getattr__(self, name: str):
        if name.startswith("__"):  # copy, pickle and friends ask the class: nothing to make a dispatcher for
            raise AttributeError(name)
        return getattr(self.dispatcher, name)

    def __reduce__(self):
        return _kernel_named, (self.__module__, self.__qualname__)

    def __repr__(self) -> str:
        return f"<deteval kernel {self._name}>"


def _kernel_named(module: str, qualname: str) -> Kernel:
    import importlib

    return getattr(importlib.import_module(module), qualname)


_making = threading.Lock()


def njit(*args, **kwargs):
    """numba's ``njit`` for deteval's kernels, as a :class:`Kernel`: ahead-of-time code where the package
    has it, else ``numba.njit`` with the cache of :class:`deteval._runtime.kernel_cache.KernelCache`
    (numba's own when ``DETEVAL_PLAIN_NUMBA=1``)."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return Kernel(args[0], {})
    if args:
        raise TypeError("deteval's njit takes options only (cache=, nogil=, inline=), not signatures")
    return lambda func: Kernel(func, dict(kwargs))


def preload(kernels) -> None:
    """Load the cached compilations of these kernels now (see :func:`deteval._runtime.preload.preload`);
    a kernel with ahead-of-time code is left alone (numba is not imported for it)."""
    todo = [k.dispatcher if isinstance(k, Kernel) else k for k in kernels
            if not (isinstance(k, Kernel) and k.compiled_ahead)]  # fmt: skip
    if todo:
        from deteval._runtime import preload as load

        load(todo)


# the modules whose KERNELS (what a stage calls) a COCO-family evaluation runs after loading, in call order;
# an iou type's overlap kernels come first (deteval.vocabulary.IouType.overlap_kernels)
_AFTER_LOADING = ("deteval.matching.coco", "deteval.accumulation.accumulate")


def warm(group: str, *, large: bool = False) -> None:
    """Ready the kernels of the COCO-family evaluation ``group`` (``"coco-bbox"``, ... : its iou type's
    ``kernel_group``) that run after loading: their cached code loads on a background thread, once per
    process in effect, while the caller works; ``large`` (an input of ``TUNING.kernel_sort_rows`` rows or
    more) notes the group and the large sorts' kernels for the compile helpers of a cold cache
    (:mod:`deteval._startup.compile_ahead`). Nothing is compiled here."""
    import importlib

    from deteval.vocabulary import IOU_TYPES

    overlap = next((t.overlap_kernels for t in IOU_TYPES.values() if t.kernel_group == group), None)
    modules = ((overlap,) if overlap else ()) + _AFTER_LOADING
    later = tuple(k for name in modules for k in importlib.import_module(name).KERNELS)
    if not all(kernel.ready for kernel in later):  # once per process, in effect
        in_background(preload, later)
    if large:
        from deteval._startup.compile_ahead import compile_ahead

        compile_ahead(group, "sort-large")


__all__ = [
    "Kernel", "SharedTasks", "in_background", "njit", "num_threads", "on_first_compile", "preload", "run_chunks",
    "run_tasks", "using_threads", "warm",
]  # fmt: skip

_compile_callbacks: list[Callable[[], None]] = []  # called, then dropped, at the next compilation's start
_compile_lock = threading.Lock()


def on_first_compile(callback: Callable[[], None] | None) -> None:
    """Call ``callback()`` once, as the next kernel compilation in this process starts; None cancels it.

    A compilation is a kernel the cache does not hold (a first run on this
    machine, a new numba or deteval, argument types not seen before): a warm
    run never calls it. Heard through numba's ``numba:compile`` event, so with
    ``DETEVAL_PLAIN_NUMBA=1`` too; nothing is added to a kernel call that loads
    or finds its machine code. ``callback`` runs in the compiling thread, inside
    numba's compiler lock: it should be quick (print a line), and not call kernels.
    """
    import deteval._runtime

    with _compile_lock:
        _compile_callbacks.clear()
        if callback is not None:
            _compile_callbacks.append(callback)
    if deteval._runtime.numba_loaded():  # else the first dispatcher made starts listening (Kernel.dispatcher)
        _listen_for_compiles()


@cache
def _listen_for_compiles() -> None:
    from numba.core import event

    class FirstCompile(event.Listener):
        def on_start(self, ev: event.Event) -> None:
            with _compile_lock:
                callbacks = _compile_callbacks[:]
                _compile_callbacks.clear()
            for callback in callbacks:
                callback()

        def on_end(self, ev: event.Event) -> None:
            pass

    event.register("numba:compile", FirstCompile())


T = TypeVar("T")

_local = threading.local()  # .threads: the count using_threads set in this thread


@contextmanager
def using_threads(n: int | None) -> Iterator[None]:
    """In this block, work started by this thread (:func:`run_chunks`, :func:`run_tasks`,
    :class:`SharedTasks`, and modules sizing work by :func:`num_threads`) uses ``n`` threads, the
    caller included; ``n=1`` runs every kernel in the caller. None leaves the count as it is (an
    enclosing block's, or the default).

    Only the calling thread is affected (a thread-local setting), so evaluators in other
    threads keep their own; blocks nest.
    """
    if n is None:
        yield
        return
    if isinstance(n, bool) or int(n) < 1:
        raise ValueError(f"threads must be a positive integer or None, got {n!r}")
    before = getattr(_local, "threads", None)
    _local.threads = int(n)
    try:
        yield
    finally:
        _local.threads = before


def num_threads() -> int:
    """Threads for the kernels this thread starts: :func:`using_threads`' count, else ``NUMBA_NUM_THREADS``
    if set, else the usable CPUs."""
    n = getattr(_local, "threads", None)
    if n is not None:
        return n
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


def pool_submit(fn: Callable, *args, **kwargs) -> Future:
    """Start ``fn(*args, **kwargs)`` on a thread of the kernels' pool. The caller must not wait for it to
    start: the pool's threads may all be busy (with the caller's own work)."""
    return _pool(num_threads(), os.getpid()).submit(fn, *args, **kwargs)


def in_background(fn: Callable, *args, **kwargs) -> Future:
    """Start ``fn(*args, **kwargs)`` on a background thread; its result (or exception) is the future's.

    Worth it for ``nogil`` kernels only: other Python code takes turns on the GIL.
    """
    return _background_pool(os.getpid()).submit(fn, *args, **kwargs)


class SharedTasks(Generic[T]):
    """Tasks taken in order by whichever thread is free: ``helpers`` pool threads, and any thread that calls
    :meth:`work` (the caller, when done with other work).

    For many small tasks beside other work: a thread busy elsewhere (the ground
    truth's scan) joins when it is done, instead of the tasks being split up
    front among more threads than cores. Tasks should be ``nogil`` kernel calls
    and must not wait on the pool themselves.
    """

    def __init__(self, tasks: Sequence[Callable[[], T]], helpers: int) -> None:
        self._tasks: list | None = list(tasks)
        self._n = len(self._tasks)
        self._results: list = [None] * self._n
        self._error: BaseException | None = None
        self._claims = itertools.count()  # next() on it is atomic under the GIL: each task is taken once
        self._left = self._n
        self._lock = threading.Lock()
        self._done = threading.Event()
        if not self._n:
            self._done.set()
        helpers = min(helpers, self._n - 1)
        if helpers > 0:
            pool = _pool(num_threads(), os.getpid())
            for _ in range(helpers):
                pool.submit(self.work)

    def work(self) -> None:
        """Run tasks in this thread until every task is taken."""
        while (k := next(self._claims)) < self._n:  # task k is claimed, not done: the list is still here
            try:
                self._results[k] = self._tasks[k]()
            except BaseException as exc:  # noqa: BLE001 - re-raised by results()
                self._error = self._error or exc
            with self._lock:
                self._left -= 1
                if self._left == 0:
                    self._tasks = None  # tasks often hold their owner, which holds this: no cycle left to the GC
                    self._done.set()

    def results(self) -> list[T]:
        """Each task's result, in order, once all are done (this thread works on those left first).

        A task's exception is raised here.
        """
        self.work()
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._results


def run_tasks(tasks: Sequence[Callable[[], T]]) -> list[T]:
    """Call each task on threads, the caller working too; their results, in order.

    Tasks should be ``nogil`` kernel calls. Not for use inside :func:`run_chunks`
    kernels: the tasks take threads from the same pool.
    """
    return SharedTasks(tasks, num_threads() - 1).results()


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
