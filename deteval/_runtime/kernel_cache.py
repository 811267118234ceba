"""numba's on-disk cache for deteval's kernels (:class:`KernelCache`), given to each by :func:`with_kernel_cache`.

Only deteval's own dispatchers get it: numba's ``FunctionCache`` class, and
every other numba user's caches, are left as they are.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial

from numba.core import environment
from numba.core.caching import CompileResultCacheImpl, FunctionCache

from deteval._runtime.digest import kernel_sources_digest
from deteval._runtime.light_import import import_arraymath_without_scipy, scipy_blas_deferred
from deteval._runtime.nrt import initialize_runtime
from deteval._runtime.objcode import object_payload, unserialize
from deteval._runtime.shipped import filling, shipped_cache_file
from deteval._startup.compile_ahead import on_miss

_checked_dirs: set[str] = set()  # cache directories found writable in this process


def _checked_once(locator_class: type) -> type:
    """``locator_class`` whose ``ensure_cache_path`` checks a directory once per process.

    numba checks that the cache directory exists and is writable (a temporary file created
    and removed) for every kernel it decorates: ~0.15 ms each, ~10 ms for the 70 kernels a
    COCO run imports, all in one or two directories.
    """

    def ensure_cache_path(self):
        path = self.get_cache_path()
        if path not in _checked_dirs:
            locator_class.ensure_cache_path(self)
            _checked_dirs.add(path)

    namespace = {"ensure_cache_path": ensure_cache_path, "__module__": __name__}
    return type(locator_class.__name__, (locator_class,), namespace)


class KernelCacheImpl(CompileResultCacheImpl):
    """Cached kernels keep the names their machine code defines (see :mod:`deteval._runtime.objcode`).

    Its locators (numba's, in numba's order) check a cache directory once per process, not once per kernel.
    """

    _locator_classes = [_checked_once(c) for c in CompileResultCacheImpl._locator_classes]

    def reduce(self, cres):
        libdata, *rest = super().reduce(cres)
        if libdata[1] == "object" and len(libdata[2]) == 2:
            libdata = object_payload(cres.library)
        return (libdata, *rest)

    def rebuild(self, target_context, payload):
        codegen = target_context.codegen()
        # numba's rebuild unserializes through the codegen; every load holds numba's compiler lock
        codegen.unserialize_library = partial(unserialize, codegen)
        try:
            return super().rebuild(target_context, payload)
        finally:
            del codegen.unserialize_library


@contextmanager
def _numba_modules_left_unimported() -> Iterator[None]:
    """Unpickling kernels in this block does not import numba's implementation modules for their globals.

    A cached kernel carries the environment of every numba implementation it
    inlined (``np.empty``'s, say), and numba rebuilds each by importing the
    implementation's module for its globals: ``numba.np.arrayobj`` costs
    40 ms. Only object-mode code reads those globals, and numba's own
    implementations are nopython code, so a numba module not imported yet
    gets an environment whose globals hold just its name (which a kernel
    compiled later and cached with this environment records, as numba would).
    """
    rebuild = getattr(environment, "_rebuild_env", None)
    if rebuild is None or not hasattr(environment, "lookup_environment"):
        yield
        return

    def rebuild_lightly(modname, consts, env_name):
        if modname.startswith("numba.") and modname not in sys.modules and not environment.lookup_environment(env_name):
            env = environment.Environment({"__name__": modname})
            env.consts[:] = consts
            env.env_name = env_name
            environment.Environment._memo[env_name] = env
            return env
        return rebuild(modname, consts, env_name)

    # pickle finds the function by name as it loads; every cache load holds numba's compiler lock
    environment._rebuild_env = rebuild_lightly
    try:
        yield
    finally:
        environment._rebuild_env = rebuild


class KernelCache(FunctionCache):
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
    module's source (:func:`kernel_sources_digest`), so a change to any of them
    recompiles them all.

    A miss then looks in the kernels compiled when the package was built
    (:mod:`deteval._runtime.shipped`) before compiling.
    """

    _impl_class = KernelCacheImpl

    def _shipped(self):
        """The shipped cache file of this kernel (None when none), found once."""
        try:
            return self._shipped_file
        except AttributeError:
            self._shipped_file = shipped_cache_file(self._py_func, self._impl.filename_base)
            if filling() and self._shipped_file is not None:  # the build step: saves go there too
                os.makedirs(self._shipped_file._cache_path, exist_ok=True)
                self._cache_file = self._shipped_file
            return self._shipped_file

    def _load_shipped(self, sig, target_context):
        shipped = self._shipped()
        if shipped is None or shipped is self._cache_file:
            return None
        try:
            data = shipped.load(self._index_key(sig, target_context.codegen()))
            return None if data is None else self._impl.rebuild(target_context, data)
        except Exception:  # noqa: BLE001 - a shipped entry this process cannot load: compiled as without one
            return None

    def load_overload(self, sig, target_context):
        initialize_runtime(target_context, self._cache_path)
        # unpickling a kernel imports the modules of the numba implementations it uses
        with scipy_blas_deferred(), _numba_modules_left_unimported(), self._guard_against_spurious_io_errors():
            self._shipped()  # first, so that the build step's process loads from and saves to the shipped folder
            loaded = self._load_overload(sig, target_context)
            if loaded is None:
                loaded = self._load_shipped(sig, target_context)
            # a cold cache: helper processes start (or have just compiled this kernel: load it)
            if loaded is None and on_miss(f"{self._py_func.__module__}.{self._py_func.__qualname__}", sig):
                loaded = self._load_overload(sig, target_context)
        if loaded is None:  # numba's compiler refreshes the context next, importing arraymath
            import_arraymath_without_scipy()
            _init_extensions()  # before compiling, as numba does (see with_kernel_cache)
        return loaded

    def _index_key(self, sig, codegen):
        return (*super()._index_key(sig, codegen), kernel_sources_digest())

    def cached_signatures(self, codegen) -> list:
        """The argument types of every compilation of this kernel in the cache that this process can load."""
        shipped = self._shipped()
        with self._guard_against_spurious_io_errors():
            index = self._cache_file._load_index()
            if shipped is not None and shipped is not self._cache_file:
                index = {**shipped._load_index(), **index}
        return [key[0] for key in index if key == self._index_key(key[0], codegen)]


def _init_extensions() -> None:
    from numba.core import entrypoints

    entrypoints.init_all()


def _extensions_at_compile() -> None:
    """A kernel's compilation chain hook: numba's runs the ``numba_extensions`` entry points here."""


def njit_with_kernel_cache(numba_njit: Callable, **options) -> Callable:
    """numba's ``njit(**options)`` decorator; with ``cache=True`` each dispatcher gets a :class:`KernelCache`
    made directly (numba's own would check the cache directory for every kernel), else numba's."""
    if not options.get("cache") or not _numba_has_private_cache_api():
        return numba_njit(**options)
    decorate = numba_njit(**{**options, "cache": False})

    def decorator(func):
        dispatcher = decorate(func)
        if getattr(dispatcher, "py_func", None) is None:  # NUMBA_DISABLE_JIT: the function itself
            return dispatcher
        dispatcher._cache = KernelCache(dispatcher.py_func)  # what numba's enable_caching does, our class
        if hasattr(dispatcher, "_compilation_chain_init_hook"):
            dispatcher._compilation_chain_init_hook = _extensions_at_compile
        return dispatcher

    return decorator


def _numba_has_private_cache_api() -> bool:
    from numba.core.dispatcher import Dispatcher

    return (
        hasattr(FunctionCache, "_load_overload")
        and hasattr(FunctionCache, "_index_key")
        and isinstance(getattr(CompileResultCacheImpl, "_locator_classes", None), list)
        and hasattr(Dispatcher, "enable_caching")
    )


def with_kernel_cache(dispatcher):
    """``dispatcher`` (a numba ``njit`` function), its cache now a :class:`KernelCache`.

    numba runs the ``numba_extensions`` entry points of every installed
    distribution before typing a dispatcher's first call, which reads every
    distribution's metadata (5 ms with 66 installed, more in a large
    environment). Typing deteval's arguments (arrays and scalars) needs no
    extension and loading a cached kernel none either, so a kernel's hook
    does nothing and a cache miss runs them before compiling (numba's context
    refresh would too).
    """
    cache = getattr(dispatcher, "_cache", None)
    # the same state, two methods differ; a numba without these private methods keeps its own cache
    if type(cache) is FunctionCache and hasattr(cache, "_load_overload") and hasattr(cache, "_index_key"):
        cache.__class__ = KernelCache
        if type(cache._impl) is CompileResultCacheImpl:
            cache._impl.__class__ = KernelCacheImpl
        if hasattr(dispatcher, "_compilation_chain_init_hook"):
            dispatcher._compilation_chain_init_hook = _extensions_at_compile
    return dispatcher
