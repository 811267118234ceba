"""Kernels compiled ahead of time: extension modules built with the package, called without numba.

The recorded signatures of :mod:`deteval._startup.kernel_signatures` are compiled into extension
modules in the background after install, into the user's cache (:mod:`deteval._runtime.aot_cache`), or
by ``DETEVAL_BUILD_AOT=1 pip install .`` under ``deteval/_aot`` (:mod:`deteval._runtime.aot_build`, with
``numba.pycc``: the same numba compiler, numba's runtime linked into each module, for
the baseline CPU of the platform, so a wheel runs on any machine of its kind). A
:class:`deteval.jit.Kernel` whose arguments have one of those signatures calls that
code and nothing imports numba: a run that needs only such kernels saves numba's
import (about 0.2 s and 40 MB). Any other argument types go to numba's dispatcher.

A call must never reach code compiled for other types (the modules trust their
arguments): :func:`type_key` names an argument's type as numba's ``repr(typeof(x))``
does, for the types it knows, and None for any other (the call then goes to numba).
The index is used only when its sources digest is this package's
(:func:`deteval._runtime.digest.kernel_sources_digest`): an edited kernel is never served
its old code. ``DETEVAL_AOT=0`` (or ``DETEVAL_PLAIN_NUMBA=1``) ignores it; ``DETEVAL_AOT_DIR``
points to another folder (tests).
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from collections.abc import Callable
from functools import cache

import numpy as np

from deteval._runtime import PLAIN
from deteval._runtime.built import built_folder

ENV = "DETEVAL_AOT"
DIR_ENV = "DETEVAL_AOT_DIR"
DIRNAME = "_aot"
INDEX = "index.json"

# numba's names of the NumPy dtypes it takes (native byte order only: other orders go to numba)
_DTYPES = {
    np.dtype(t): name
    for t, name in [
        (np.bool_, "bool"), (np.int8, "int8"), (np.int16, "int16"), (np.int32, "int32"), (np.int64, "int64"),
        (np.uint8, "uint8"), (np.uint16, "uint16"), (np.uint32, "uint32"), (np.uint64, "uint64"),
        (np.float32, "float32"), (np.float64, "float64"), (np.complex64, "complex64"), (np.complex128, "complex128"),
    ]
}  # fmt: skip
_SCALARS = {bool: "bool", float: "float64", complex: "complex128", type(None): "none"}
_SCALARS.update({np.dtype(d).type: name for d, name in _DTYPES.items()})
_INT64 = (-(2**63), 2**63)


def type_key(value: object) -> str | None:
    """``repr(numba.typeof(value))`` for arrays, scalars, None and tuples of them; None for any other value.

    Arrays: exactly ``np.ndarray`` (a subclass goes to numba), a dtype above, the layout as
    numba maps it (C before F), read-only when not writeable.
    """
    kind = type(value)
    if kind is np.ndarray:
        name = _DTYPES.get(value.dtype)
        if name is None:
            return None
        flags = value.flags
        layout = "C" if flags.c_contiguous else "F" if flags.f_contiguous else "A"
        return f"Array({name}, {value.ndim}, '{layout}', {not flags.writeable}, aligned=True)"
    if kind is int:
        return "int64" if _INT64[0] <= value < _INT64[1] else None
    name = _SCALARS.get(kind)
    if name is not None:
        return name
    if kind is tuple:
        keys = [type_key(v) for v in value]
        if None in keys:
            return None
        if keys and all(k == keys[0] for k in keys):
            return f"UniTuple({keys[0]}, {len(keys)})"
        return f"Tuple(({', '.join(keys)}))"
    return None


def _root() -> str | None:
    """``$DETEVAL_AOT_DIR``, else the package's modules (built at install), else those built after install
    into the user's cache (:mod:`.aot_cache`); None when there are none."""
    if PLAIN or os.environ.get(ENV, "").strip() == "0":
        return None
    root = os.environ.get(DIR_ENV) or built_folder(DIRNAME)
    if os.path.isfile(os.path.join(root, INDEX)):
        return root
    if os.environ.get(DIR_ENV):
        return None
    from deteval._runtime.aot_cache import user_folder

    root = user_folder()
    return root if os.path.isfile(os.path.join(root, INDEX)) else None


@cache
def _index() -> dict[str, dict[tuple[str, ...], tuple[str, str]]]:
    """``{kernel: {argument type keys: (module file, symbol)}}``; empty when there is none or it is stale."""
    root = _root()
    if root is None:
        return {}
    try:
        with open(os.path.join(root, INDEX), encoding="utf-8") as f:
            index = json.load(f)
    except (OSError, ValueError):
        return {}
    from deteval._runtime.digest import kernel_sources_digest

    if index.get("sources") != kernel_sources_digest():
        return {}
    table: dict[str, dict[tuple[str, ...], tuple[str, str]]] = {}
    for name, texts, module, symbol in index.get("kernels", []):
        table.setdefault(name, {})[tuple(texts)] = (os.path.join(root, module), symbol)
    return table


def signatures(name: str) -> dict[tuple[str, ...], tuple[str, str]]:
    """The ahead-of-time signatures of kernel ``name`` (``module.qualname``): type keys to (module file, symbol)."""
    return _index().get(name, {})


_modules: dict[str, object] = {}
_importing = threading.Lock()


def function(where: tuple[str, str]) -> Callable | None:
    """The compiled function at (module file, symbol), its module imported on first use; None if it fails
    to import (the caller then goes to numba)."""
    path, symbol = where
    module = _modules.get(path)
    if module is None:
        with _importing:
            module = _modules.get(path)
            if module is None:
                module = _modules[path] = _import(path)
    return getattr(module, symbol, None)


def _import(path: str) -> object:
    # each module's init function is PyInit_<its file's first name>: the name it was built with
    name = os.path.basename(path).split(".")[0]
    try:
        spec = importlib.util.spec_from_file_location(f"deteval._aot.{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except (ImportError, OSError):
        return False  # falsy, not None: tried once; getattr(False, symbol, None) is None
    return module
