"""Where kernels compiled ahead of time after install live: a folder of the user's cache.

``pip install .`` ships the numba cache of every kernel (:mod:`.shipped`) and leaves out the extension
modules of :mod:`.aot` (they would double the install's time for about 0.3 s saved per run); the first
``deteval`` command builds them in the background (:mod:`.aot_background`) into
``$DETEVAL_CACHE_DIR`` (default ``$XDG_CACHE_HOME/deteval``, ``~/.cache/deteval``), under a folder named
for the kernel sources' digest, numba's version, the Python and the machine.
"""

from __future__ import annotations

import os
import sys

CACHE_ENV = "DETEVAL_CACHE_DIR"


def cache_root() -> str:
    """``$DETEVAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/deteval``, else ``~/.cache/deteval``."""
    root = os.environ.get(CACHE_ENV, "").strip()
    if root:
        return root
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "deteval")


def user_folder() -> str:
    """The folder of this package's modules in the user's cache: one per kernel sources, numba, Python, machine
    (numba's version read from its metadata: importing numba would cost what the modules save)."""
    import platform

    from deteval._runtime.digest import kernel_sources_digest

    tag = f"aot-{kernel_sources_digest()}-numba{_numba_version()}-{sys.implementation.cache_tag}-{platform.machine()}"
    return os.path.join(cache_root(), tag)


def _numba_version() -> str:
    """numba's installed version ("none" without it), from the ``numba-<version>.dist-info`` folder beside the
    package: importlib.metadata's import alone costs ~15 ms of every start, so it is asked only when that
    folder is not there (or not alone)."""
    import importlib.util

    spec = importlib.util.find_spec("numba")
    if spec is None or not spec.origin:
        return "none"
    site = os.path.dirname(os.path.dirname(spec.origin))
    try:
        found = [n for n in os.listdir(site) if n.startswith("numba-") and n.endswith(".dist-info")]
    except OSError:
        found = []
    if len(found) == 1:
        return found[0][len("numba-") : -len(".dist-info")]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("numba")
    except PackageNotFoundError:
        return "none"
