"""Cached compilations of kernels loaded ahead of their first calls, on a thread with nothing else to do."""

from __future__ import annotations

from collections.abc import Iterable

from numba.core import sigutils
from numba.core.compiler_lock import global_compiler_lock

from deteval._runtime.kernel_cache import KernelCache


def preload(kernels: Iterable) -> None:
    """Load every cached compilation of these kernels now, so that their first calls find them loaded.

    For a thread with nothing else to do while earlier stages run their
    kernels (a kernel's first call spends about 2 ms loading it, while the
    threads that called it wait). Only what the cache holds is loaded, never
    compiled (a miss is left to the call, as usual); errors are left to the
    calls too. Anything without a :class:`KernelCache` is skipped.
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
