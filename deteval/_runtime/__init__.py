"""Everything in deteval that reaches into numba's private API, and the one switch that turns it all off.

:mod:`deteval.jit` takes ``numba_njit``, ``with_kernel_cache`` and ``preload``
from here; :func:`group_cached` answers whether a kernel group's code is at hand without
compiling (:mod:`deteval.io.coco` picks its reader by it). With the patches on (the
default), a warm process saves about 0.35 s of numba's start-up:

- :mod:`.light_import`: numba imported without scipy and yaml, numba's
  ``arraymath`` without scipy's BLAS module (import hooks alive only inside
  those ``with`` blocks, and only for the thread that opened them);
- :mod:`.kernel_cache`: deteval's kernels (and no one else's) get a cache whose
  loads skip numba's context refresh and extension entry points, and whose key
  covers every kernel source (:mod:`.digest`);
- :mod:`.objcode`: cached machine code loaded without parsing its bitcode;
- :mod:`.nrt`: numba's runtime helpers compiled once and stored with the kernels;
- :mod:`.preload`: cached kernels loaded ahead of their first calls;
- :mod:`.shipped`: kernels compiled into the package when it was built (``pip install .``), where a
  miss in numba's cache looks before compiling;
- :mod:`.kernel_cache` also tells :mod:`deteval._startup.compile_ahead` of every cache miss (helper processes
  compile, with a cold cache, the kernels a run will need next);
- :mod:`.typeof`: array arguments typed without importing ``numpy.ma``, the
  same types as numba's for every array (see there);
- :mod:`.aot`: kernels compiled ahead of time into extension modules when the package
  was built (:mod:`.aot_build`), called without importing numba at all.
- :mod:`.built`: where the build's folders are (for a clone's source tree: an installed copy's).

Every step checks the private names it uses and leaves numba's way in place
when they are missing. An upgrade of numba should run ``tests/unit/runtime/test_jit.py``
first.

Importing this package imports no numba: ``numba_njit``, ``with_kernel_cache`` and
``preload`` import it (with the patches above) on first access, which
:class:`deteval.jit.Kernel` makes only when a kernel has no ahead-of-time code
for its arguments.

``DETEVAL_PLAIN_NUMBA=1`` (read once, when this package is imported) turns all
of it off: ``numba_njit`` is plain ``numba.njit`` with numba's own cache,
``with_kernel_cache`` returns the dispatcher untouched, ``preload`` does
nothing, no ahead-of-time code is called, and none of the modules above is
imported. The numbers are the same; only start-up is slower.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Collection
from typing import Any

PLAIN: bool = os.environ.get("DETEVAL_PLAIN_NUMBA", "").strip() not in ("", "0")

_NUMBA_NAMES = ("numba_njit", "preload", "with_kernel_cache")
_loading = threading.Lock()


def _load_numba() -> dict[str, Any]:
    """numba imported (with the patches unless ``PLAIN``): this package's three numba names."""
    if PLAIN:
        from numba import njit as numba_njit

        def with_kernel_cache(dispatcher):
            """The dispatcher as numba made it (``DETEVAL_PLAIN_NUMBA`` is set)."""
            return dispatcher

        def preload(kernels) -> None:
            """Nothing (``DETEVAL_PLAIN_NUMBA`` is set): each kernel loads on its first call, as numba does."""

        return {"numba_njit": numba_njit, "preload": preload, "with_kernel_cache": with_kernel_cache}

    from deteval._runtime.light_import import import_numba_lightly

    import_numba_lightly()  # before anything below imports numba

    from numba import njit as _numba_njit

    from deteval._runtime import typeof as _typeof
    from deteval._runtime.kernel_cache import njit_with_kernel_cache, with_kernel_cache
    from deteval._runtime.preload import preload

    def numba_njit(*args, **kwargs):
        """numba's ``njit``; options with ``cache=True`` give dispatchers a kernel cache from the start."""
        return _numba_njit(*args, **kwargs) if args else njit_with_kernel_cache(_numba_njit, **kwargs)

    _typeof.install()
    return {"numba_njit": numba_njit, "preload": preload, "with_kernel_cache": with_kernel_cache}


def __getattr__(name: str) -> Any:
    # numba is imported on the first access to one of its names (PEP 562), not with this package
    if name not in _NUMBA_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _loading:
        if name not in globals():
            globals().update(_load_numba())
    return globals()[name]


def numba_loaded() -> bool:
    """Whether deteval has imported numba in this process (through this package)."""
    return "numba_njit" in globals()


def group_cached(group: str, skip: Collection[str] = ()) -> bool:
    """Whether the package's ahead-of-time code or numba's cache holds every kernel of ``group``
    (:data:`deteval._startup.kernel_signatures.GROUPS`, but those named in ``skip``) with its recorded argument
    types, loading none. False for an unknown or empty group, and where the question cannot be asked
    (``DETEVAL_PLAIN_NUMBA``, ``NUMBA_DISABLE_JIT``)."""
    from deteval._startup.compile_ahead import kernel_named, parse_signature
    from deteval._startup.kernel_signatures import GROUPS

    kernels = [(kernel_named(name), texts) for name, texts in GROUPS.get(group, []) if name not in skip]
    if not kernels:
        return False
    if all(tuple(texts) in kernel.compiled_ahead for kernel, texts in kernels):  # in the package: none to load
        return True
    for kernel, texts in kernels:
        cached_signatures = getattr(getattr(kernel, "_cache", None), "cached_signatures", None)
        if cached_signatures is None:
            return False
        if parse_signature(texts) not in set(map(tuple, cached_signatures(kernel.targetctx.codegen()))):
            return False
    return True


__all__ = ["PLAIN", "group_cached", "numba_loaded", "numba_njit", "preload", "with_kernel_cache"]
