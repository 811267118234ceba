"""Kernels compiled when the package was built: a read-only second cache inside the installed package.

``pip install .`` runs ``setup.py``'s build step, which runs :func:`build` on
the package being built: it compiles every kernel group of
:mod:`deteval._startup.kernel_signatures` (box, mask and keypoint evaluation at any size,
the per-class report, VOC) into ``deteval/_kernels`` of the wheel, in parallel
processes. A :class:`~deteval._runtime.kernel_cache.KernelCache`
looks there after a miss in numba's own cache (``NUMBA_CACHE_DIR`` or
``__pycache__``), before compiling: the first run after install, or in a fresh
container with an empty ``NUMBA_CACHE_DIR``, loads these kernels as a warm run
loads its own. Nothing is ever written there after the build.

An entry is used only where numba would use its own: the key is the kernel
cache's (argument types, this CPU's name and features, the kernel's bytecode,
the digest of every kernel source) and the index carries numba's version. A
wheel built on another CPU, or with another numba than the one installed beside
it (pip's isolated build environment resolves its own), is simply not used:
kernels compile on first use, as without it. The stamp numba keeps of a source
file's time is replaced by a constant, since installing sets new times; the
sources digest covers their bytes.

``DETEVAL_SHIPPED_KERNELS=0`` ignores the shipped kernels (tests of the cold
path set it) and, at build time, skips the compile.
"""

from __future__ import annotations

import inspect
import os
import sys

from numba.core.caching import IndexDataCacheFile

from deteval._runtime.built import built_folder

ENV = "DETEVAL_SHIPPED_KERNELS"
FILL_ENV = "DETEVAL_SHIP_INTO"  # set by the build step: kernels load from and save to this folder
DIRNAME = "_kernels"
STAMP = "deteval-shipped"  # numba's source stamp (mtime and size) would change at every install

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # deteval/


def _root() -> str | None:
    """The folder of shipped kernels in use: the build's, the installed package's, or None (off or absent)."""
    fill = os.environ.get(FILL_ENV)
    if fill:
        return fill
    if os.environ.get(ENV, "").strip() == "0":
        return None
    root = built_folder(DIRNAME)
    return root if os.path.isdir(root) else None


def shipped_cache_file(py_func, filename_base: str) -> IndexDataCacheFile | None:
    """The shipped index and data files of ``py_func``'s kernel, or None when none are shipped.

    Files sit in the folder of the kernel's module relative to the package, since numba's file
    names carry only the module's base name (``io/coco.py`` and ``protocols/coco.py`` would meet).
    """
    root = _root()
    if root is None:
        return None
    try:
        source = os.path.abspath(inspect.getfile(py_func))
    except (TypeError, OSError):
        return None
    rel = os.path.relpath(os.path.dirname(source), _PACKAGE)
    if rel.startswith(os.pardir):  # not one of this package's modules
        return None
    return IndexDataCacheFile(cache_path=os.path.join(root, rel), filename_base=filename_base, source_stamp=STAMP)


def filling() -> bool:
    """Whether this process is the build step's, saving kernels into the shipped folder."""
    return bool(os.environ.get(FILL_ENV))


def _kernel_names() -> list[str]:
    from deteval._startup.kernel_signatures import GROUPS, ORDER

    return list(dict.fromkeys(name for group in ORDER for name, _ in GROUPS[group]))


def compile_kernels(claims: str, names: list[str]) -> None:
    """Compile every recorded signature of these kernels (module.qualname) not claimed by another process.

    A kernel is claimed whole (a file created with ``O_EXCL`` in ``claims``): two processes saving
    entries of one kernel at once could each rewrite its index without the other's entry.
    """
    import time

    from deteval._startup.compile_ahead import claim, kernel_key, kernel_named, parse_signature
    from deteval._startup.kernel_signatures import GROUPS

    group_of = {}  # a kernel's first group: what the line pip -v shows names
    for group, entries in GROUPS.items():
        for entry, _ in entries:
            group_of.setdefault(entry, group)
    for name in names:
        if not claim(os.path.join(claims, kernel_key(name, ()))):
            continue
        start = time.perf_counter()
        kernel = kernel_named(name)
        signatures = list(dict.fromkeys(t for group in GROUPS.values() for entry, t in group if entry == name))
        for texts in signatures:
            try:
                kernel.compile(parse_signature(texts))
            except Exception as exc:  # noqa: BLE001 - a stale recorded signature: only this one compiles on use
                print(f"deteval: {name}{texts} not compiled at build: {exc}", file=sys.stderr)
        took = time.perf_counter() - start
        print(f"deteval: [{group_of.get(name, '?')}] {name}: {len(signatures)} signature(s), {took:.1f} s", flush=True)


def build(target: str, processes: int | None = None, names: list[str] | None = None) -> None:
    """Fill ``target`` with the recorded signatures of ``names`` (default: every recorded kernel), compiled
    by ``processes`` child processes at once (each takes the next kernel no other has taken, in the order a
    run needs them: the scanners, the largest, first)."""
    import subprocess
    import tempfile

    from deteval._startup.compile_ahead import in_this_deteval, usable_cpus

    names = _kernel_names() if names is None else names
    processes = max(1, min(processes or usable_cpus(), len(names)))
    os.makedirs(target, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="deteval-ship-") as scratch:
        # numba's own cache (callees it saves on the way) goes to a scratch folder, not the sources' __pycache__
        env = dict(os.environ, **{FILL_ENV: os.path.abspath(target), "NUMBA_CACHE_DIR": scratch})
        env["DETEVAL_COMPILE_HELPERS"] = "0"
        env.pop("DETEVAL_PLAIN_NUMBA", None)  # the shipped entries are the kernel cache's format
        claims = os.path.join(scratch, "claims")
        os.mkdir(claims)
        run = "from deteval._runtime.shipped import compile_kernels as c; c(sys.argv[1], sys.argv[2:])"
        code = in_this_deteval(run)
        procs = [subprocess.Popen([sys.executable, "-c", code, claims, *names], env=env) for _ in range(processes)]
        failed = [p.args for p in procs if p.wait() != 0]
    if failed:
        raise RuntimeError(f"compiling kernels failed: {failed}")
