"""numba's runtime helpers (NRT) compiled once and stored beside the kernels, not compiled in every process.

numba has one runtime per process: once deteval initialises it, every numba user's code calls these
helpers. They are the machine code numba's own ``compile_nrt_functions`` makes (the same IR module,
compiled by the same numba and llvmlite: the file's name covers their versions and the codegen's
magic tuple), so no one else can tell them apart.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import threading
from contextlib import suppress
from functools import partial
from pathlib import Path

from numba.core.compiler_lock import global_compiler_lock
from numba.core.runtime import nrtdynmod, rtsys

from deteval._runtime.objcode import is_object_payload, object_payload, unserialize


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
    if is_object_payload(stored):
        return unserialize(codegen, stored)
    if not hasattr(nrtdynmod, "create_nrt_module"):
        return compile_nrt(ctx)
    # what compile_nrt_functions does, with the object code kept for the file
    ir_mod, library = nrtdynmod.create_nrt_module(ctx)
    library.enable_object_caching()
    library.add_ir_module(ir_mod)
    library.finalize()
    with suppress(OSError):
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(pickle.dumps(object_payload(library)))
        os.replace(tmp, path)  # whole or not at all, for processes loading it meanwhile
    return library


def initialize_runtime(target_context, cache_dir: str) -> None:
    """``rtsys.initialize``, its helpers' machine code cached: numba compiles them in every process (20 ms).

    numba's ``compile_nrt_functions`` is replaced only while this call holds
    numba's compiler lock, and only if the runtime is not initialised yet.
    """
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
