"""What numba does in every process that deteval's kernels do not need, taken out; their cache.

deteval's kernels take ``njit`` from :mod:`deteval.jit`, which gives each a
:class:`KernelCache` (:func:`with_kernel_cache`). Everything here reaches
into numba's private API, checked where it is used: a numba without what a
step needs keeps its own way. An upgrade of numba should run
``tests/test_jit.py`` first. Start-up costs removed from every process
(about 0.35 s in all):

- Loading a cached kernel skips numba's context refresh (see
  :class:`KernelCache`), which imports and installs every typing and
  lowering registry, about 0.2 s that only compiling needs; it also skips
  parsing the kernel's bitcode (:class:`_KernelCacheImpl`) and importing
  numba's implementation modules for their globals
  (:func:`_numba_modules_left_unimported`). numba's runtime helpers are
  compiled once and stored with the kernels (:func:`_initialize_runtime`).
- numba is imported without scipy and yaml (:func:`_import_numba_lightly`),
  and typing a kernel's array arguments does not import ``numpy.ma``
  (:func:`_typeof_ndarray`).
- Whenever ``numba.np.arraymath`` may be imported for the first time (before
  a compile, or while unpickling a cached kernel), scipy's BLAS module is
  kept out of reach of this thread: numba imports ``scipy.linalg`` (about
  0.15 s) only to learn whether a BLAS exists for ``np.dot``-based
  implementations, which deteval's kernels do not use. The flag is then set
  to what numba would have found, so scipy is imported later, by numba
  itself, only if some jitted code in the process needs it. Nothing changes
  when numba's arraymath was already imported.

The cache key of a kernel covers the source of every kernel module, this one
and :mod:`deteval.jit` included (:func:`_kernel_sources_digest`).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.util
import os
import pickle
import re
import sys
import threading
from contextlib import contextmanager, suppress
from functools import cache, partial
from pathlib import Path

import numpy as np

_BLAS_MODULE = "scipy.linalg.cython_blas"


class _Deferred(importlib.abc.MetaPathFinder):
    """Imports of these packages (and their submodules) fail in this thread; other threads import as usual."""

    def __init__(self, *packages: str) -> None:
        self.packages = packages
        self.thread = threading.get_ident()

    def find_spec(self, name, path=None, target=None):
        # the parents are imported before the module itself: they are the cost
        if threading.get_ident() == self.thread and any(name == p or name.startswith(p + ".") for p in self.packages):
            raise ImportError(f"{name} deferred by deteval.numba_start")
        return None


@contextmanager
def _deferred(*packages: str):
    finder = _Deferred(*packages)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def _import_numba_lightly() -> None:
    """``import numba`` without scipy, and without yaml when there is no numba config file to read.

    numba's import checks scipy's version if scipy imports (16 ms) and imports
    yaml for a ``.numba_config.yaml`` in the working directory (14 ms). Without
    them, numba skips the version check; yaml is imported when numba first
    reads a config file (after a change of directory, say). Nothing is
    deferred once numba is in.
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
    def __getattr__(self, name: str):
        import yaml

        return getattr(yaml, name)


_import_numba_lightly()

import llvmlite.binding as ll  # noqa: E402
from numba import njit as numba_njit  # noqa: E402, F401  (for deteval.jit: numba imported here first)
from numba.core import environment, errors, sigutils, types  # noqa: E402
from numba.core.caching import CompileResultCacheImpl, FunctionCache  # noqa: E402
from numba.core.codegen import JITCodeLibrary  # noqa: E402
from numba.core.compiler_lock import global_compiler_lock  # noqa: E402
from numba.core.runtime import nrtdynmod, rtsys  # noqa: E402
from numba.core.typing import typeof  # noqa: E402
from numba.np import numpy_support  # noqa: E402


@contextmanager
def _scipy_blas_deferred():
    """Any import of ``numba.np.arraymath`` in this block does not import scipy (see the module docstring)."""
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


def _import_arraymath_without_scipy() -> None:
    with _scipy_blas_deferred(), suppress(ImportError):  # a numba without this module: nothing to defer
        import numba.np.arraymath  # noqa: F401


_TAKES_NJIT = re.compile(rb"^from deteval\.jit import [^\n]*\bnjit\b", re.MULTILINE)


@cache
def _kernel_sources_digest() -> str:
    """sha256 of every deteval module that takes ``njit`` from :mod:`deteval.jit` (a line
    ``from deteval.jit import ... njit ...``), and of the two modules that make it (their paths and
    bytes). A module taking only the threads from there holds no kernel: editing it recompiles none."""
    digest = hashlib.sha256()
    for rel, path in sorted(_package_sources(os.path.dirname(os.path.abspath(__file__)), "")):
        with open(path, "rb") as f:
            text = f.read()
        if rel in ("jit.py", "numba_start.py") or _TAKES_NJIT.search(text):
            digest.update(rel.encode() + b"\0" + text)
    return digest.hexdigest()


def _package_sources(folder: str, prefix: str) -> list[tuple[str, str]]:
    """``(path relative to the package with "/", path)`` of every ``.py`` file under ``folder``
    (``os.scandir``: pathlib's ``rglob`` took 4 ms of each process's first kernel call)."""
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir() and entry.name != "__pycache__":
                found += _package_sources(entry.path, prefix + entry.name + "/")
            elif entry.name.endswith(".py") and entry.is_file():
                found.append((prefix + entry.name, entry.path))
    return found


def _defined_names(module) -> tuple[str, ...]:
    """What numba's engine records when it adds a module: the functions and globals the module defines."""
    return tuple(g.name for group in (module.functions, module.global_variables) for g in group if not g.is_declaration)


class _LoadedLibrary(JITCodeLibrary):
    """A library rebuilt from cached machine code; its bitcode is parsed only if a new compile links it in."""

    _linking_bitcode: bytes | None = None

    def _get_module_for_linking(self):
        if self._shared_module is None and self._linking_bitcode is not None:
            self._shared_module = ll.parse_bitcode(self._linking_bitcode)
            self._linking_bitcode = None
        return super()._get_module_for_linking()


def _object_payload(library) -> tuple:
    """``library.serialize_using_object_code()`` plus the names it defines (see :class:`_KernelCacheImpl`)."""
    name, kind, (object_code, bitcode) = library.serialize_using_object_code()
    return name, kind, (object_code, bitcode, _defined_names(library._get_module_for_linking()))


def _is_object_payload(value) -> bool:
    """Whether ``value`` has the form :func:`_object_payload` gives."""
    if not (isinstance(value, tuple) and len(value) == 3 and value[1] == "object" and isinstance(value[2], tuple)):
        return False
    data = value[2]
    return len(data) == 3 and isinstance(data[0], bytes) and isinstance(data[1], bytes) and isinstance(data[2], tuple)


def _unserialize(codegen, libdata):
    """``codegen.unserialize_library`` that reads :func:`_object_payload`'s form without parsing bitcode."""
    name, kind, data = libdata
    if kind != "object" or len(data) != 3:
        return type(codegen).unserialize_library(codegen, libdata)
    object_code, bitcode, names = data
    library = codegen.create_library(name)
    if type(library) is not JITCodeLibrary:  # a codegen of its own kind: numba's way
        return type(codegen).unserialize_library(codegen, (name, kind, (object_code, bitcode)))
    library.__class__ = _LoadedLibrary
    library.enable_object_caching()
    library._set_compiled_object(object_code)
    library._linking_bitcode = bitcode
    library._finalize_final_module()  # the engine loads the object code here
    codegen._engine._defined_symbols.update(names)
    return library


class _KernelCacheImpl(CompileResultCacheImpl):
    """Cached kernels keep the names their machine code defines, so that a load need not parse their bitcode.

    numba stores a kernel's object code with its bitcode, and a load parses
    the bitcode (about 2.5 ms a kernel) only to list the symbols it defines
    (1.5 ms more), which the engine must know before it is asked for an
    address. Here the list is stored with the kernel; the bitcode, needed
    only when a new compile links a loaded kernel in, is parsed then.
    """

    def reduce(self, cres):
        libdata, *rest = super().reduce(cres)
        if libdata[1] == "object" and len(libdata[2]) == 2:
            libdata = _object_payload(cres.library)
        return (libdata, *rest)

    def rebuild(self, target_context, payload):
        codegen = target_context.codegen()
        # numba's rebuild unserializes through the codegen; every load holds numba's compiler lock
        codegen.unserialize_library = partial(_unserialize, codegen)
        try:
            return super().rebuild(target_context, payload)
        finally:
            del codegen.unserialize_library


def _nrt_cache_file(cache_dir: str, codegen) -> Path:
    import llvmlite
    import numba

    key = repr((numba.__version__, llvmlite.__version__, codegen.magic_tuple()))
    return Path(cache_dir) / f"deteval-nrt-{hashlib.sha256(key.encode()).hexdigest()[:16]}.pkl"


def _nrt_library(compile_nrt, cache_dir: str, ctx):
    """numba's runtime helpers: loaded from the kernels' cache directory, or compiled and stored there."""
    codegen = ctx.codegen()
    path = _nrt_cache_file(cache_dir, codegen)
    try:
        stored = pickle.loads(path.read_bytes())
    except Exception:  # missing, or not what this function wrote: compiled again
        stored = None
    if _is_object_payload(stored):
        return _unserialize(codegen, stored)
    if not hasattr(nrtdynmod, "create_nrt_module"):
        return compile_nrt(ctx)
    # what compile_nrt_functions does, with the object code kept for the file
    ir_mod, library = nrtdynmod.create_nrt_module(ctx)
    library.enable_object_caching()
    library.add_ir_module(ir_mod)
    library.finalize()
    with suppress(OSError):
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(pickle.dumps(_object_payload(library)))
        os.replace(tmp, path)  # whole or not at all, for processes loading it meanwhile
    return library


def _initialize_runtime(target_context, cache_dir: str) -> None:
    """``rtsys.initialize``, its helpers' machine code cached: numba compiles them in every process (20 ms)."""
    if getattr(rtsys, "_init", False):
        return
    with global_compiler_lock:
        compile_nrt = getattr(nrtdynmod, "compile_nrt_functions", None)
        if compile_nrt is None or getattr(rtsys, "_init", True):
            rtsys.initialize(target_context)
            return
        nrtdynmod.compile_nrt_functions = partial(_nrt_library, compile_nrt, cache_dir)
        try:
            rtsys.initialize(target_context)
        finally:
            nrtdynmod.compile_nrt_functions = compile_nrt


@contextmanager
def _numba_modules_left_unimported():
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
    module's source, so a change to any of them recompiles them all.
    """

    def load_overload(self, sig, target_context):
        _initialize_runtime(target_context, self._cache_path)
        # unpickling a kernel imports the modules of the numba implementations it uses
        with _scipy_blas_deferred(), _numba_modules_left_unimported(), self._guard_against_spurious_io_errors():
            loaded = self._load_overload(sig, target_context)
        if loaded is None:  # numba's compiler refreshes the context next, importing arraymath
            _import_arraymath_without_scipy()
            _init_extensions()  # before compiling, as numba does (see with_kernel_cache)
        return loaded

    def _index_key(self, sig, codegen):
        return (*super()._index_key(sig, codegen), _kernel_sources_digest())

    def cached_signatures(self, codegen) -> list:
        """The argument types of every compilation of this kernel in the cache that this process can load."""
        with self._guard_against_spurious_io_errors():
            index = self._cache_file._load_index()
        return [key[0] for key in index if key == self._index_key(key[0], codegen)]


def preload(kernels) -> None:
    """Load every cached compilation of these kernels now, so that their first calls find them loaded.

    For a thread with nothing else to do while earlier stages run their
    kernels (a kernel's first call spends about 2 ms loading it, while the
    threads that called it wait). Only what the cache holds is loaded, never
    compiled (a miss is left to the call, as usual); errors are left to the
    calls too.
    """
    for kernel in kernels:
        cache = getattr(kernel, "_cache", None)
        if not isinstance(cache, KernelCache):
            continue
        try:
            for sig in cache.cached_signatures(kernel.targetctx.codegen()):
                with global_compiler_lock:  # as numba's Dispatcher.compile does on a cache hit
                    if tuple(sigutils.normalize_signature(sig)[0]) in kernel.overloads:
                        continue
                    cres = cache.load_overload(sig, kernel.targetctx)
                    if cres is None or cres.objectmode:
                        continue
                    kernel._cache_hits[sig] += 1
                    kernel.targetctx.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
                    kernel.add_overload(cres)
        except Exception:  # noqa: BLE001, S112 - the kernel's call loads it as usual, and reports any error
            continue


def _init_extensions() -> None:
    from numba.core import entrypoints

    entrypoints.init_all()


def _extensions_at_compile() -> None:
    """A kernel's compilation chain hook: numba's runs the ``numba_extensions`` entry points here."""


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
            cache._impl.__class__ = _KernelCacheImpl
        if hasattr(dispatcher, "_compilation_chain_init_hook"):
            dispatcher._compilation_chain_init_hook = _extensions_at_compile
    return dispatcher


_numba_typeof_ndarray = typeof.typeof_impl.dispatch(np.ndarray)


@typeof.typeof_impl.register(np.ndarray)
def _typeof_ndarray(val, c):
    """numba's type of an array, without importing ``numpy.ma`` (12 ms) to learn that a plain array is not masked.

    The first call of a kernel types its arguments in Python, where numba asks
    ``isinstance(val, np.ma.MaskedArray)``; numpy 2 imports ``numpy.ma`` on that
    first use. An array of type exactly ``np.ndarray`` is no masked array; any
    other, and any dtype numba does not take, goes to numba's own function.
    """
    if type(val) is not np.ndarray:
        return _numba_typeof_ndarray(val, c)
    try:
        dtype = numpy_support.from_dtype(val.dtype)
    except errors.NumbaNotImplementedError:
        return _numba_typeof_ndarray(val, c)  # its error
    return types.Array(dtype, val.ndim, numpy_support.map_layout(val), readonly=not val.flags.writeable)
