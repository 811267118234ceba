"""A cold kernel cache filled by helper processes while this one runs: compilation off the critical path.

numba compiles one kernel at a time per process (its compiler lock), so a
first run after install compiles every kernel it needs in turn: on the
bundled sample four kernels (~7 s), on a COCO-sized file the two JSON
scanners as well (~30 s). Most of that can overlap: the code that knows what
comes next calls :func:`compile_ahead` with the names of kernel groups (a
group is a list of kernels and argument types in :mod:`deteval._startup.kernel_signatures`,
recorded from real runs). In a warm process that only notes the names. At the
first cache miss of a deteval kernel in this process (the cache is cold), helper
processes start, each running :func:`helper_main` on some of
the noted groups (and any noted later), compiling their kernels into the same
``NUMBA_CACHE_DIR`` / ``__pycache__``: each helper takes a group's kernels from
its end, the last needed first, while this process compiles from the start.

A kernel is compiled once: whoever misses it first claims it (a file created
with ``O_EXCL`` in a folder of this run). A cache miss here on a kernel that a
helper claimed waits for the helper's "done" file, then loads the helper's
machine code; a helper never waits, so the two cannot wait on each other. A
helper that dies, or a claim never finished, leaves the kernel to this
process's own compile. Helpers are ended when this process exits; numba writes
a cache entry to a temporary file and renames it, so one ended mid-compile
leaves no partial entry.

What lands in the cache is exactly what this process would compile for the
same argument types (the same compiler, flags and cache key), so results and
warm runs are unchanged; a group whose recorded types a run does not use only
costs a helper's time. ``DETEVAL_COMPILE_HELPERS=0`` turns helpers off (and is
set in the helpers themselves); ``DETEVAL_COMPILE_HELPERS=N`` caps them at N
(default: the CPUs this process may use, less one, at least one).
"""

from __future__ import annotations

import os
import sys
import threading

# the rest (subprocess, tempfile, hashlib, ...) is imported on a cache miss: a warm run only notes group names

ENV = "DETEVAL_COMPILE_HELPERS"
WAIT_S = 600.0  # at most this long for a helper's kernel (a helper that dies ends the wait sooner)

_lock = threading.Lock()
_noted: list[str] = []  # groups named so far, in order
_sent: set[str] = set()  # groups given to a helper
_helpers: list = []  # subprocess.Popen
_claims: str | None = None  # this run's claim folder, once a miss has started the helpers
_started = False


def kernel_key(name: str, sig) -> str:
    """A file name for (kernel, argument types): ``name`` is module.qualname, ``sig`` a tuple of numba types."""
    import hashlib

    return hashlib.sha1(f"{name}{tuple(sig)}".encode()).hexdigest()[:20]


def _max_helpers() -> int:
    value = os.environ.get(ENV, "").strip()
    if value:
        try:
            return max(int(value), 0)
        except ValueError:
            return 0
    return max(usable_cpus() - 1, 1)


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def compile_ahead(*groups: str) -> None:
    """Note kernel groups this run will need; with a cold cache, helpers compile them (see the module)."""
    from deteval._startup.kernel_signatures import GROUPS

    with _lock:
        new = [g for g in dict.fromkeys(groups) if g in GROUPS and g not in _noted]
        _noted.extend(new)
        if new and _started:
            _start_helpers()


def _start_helpers() -> None:
    """Helpers for the noted groups not yet sent (under ``_lock``), as many as the cap allows."""
    import subprocess

    from deteval._startup.kernel_signatures import ORDER

    todo = sorted((g for g in _noted if g not in _sent), key=ORDER.index)
    live = [p for p in _helpers if p.poll() is None]
    room = _max_helpers() - len(live)
    if not todo or room <= 0 or _claims is None:
        return
    parts = [todo[i::room] for i in range(min(room, len(todo)))]
    env = dict(os.environ, **{ENV: "0"})
    for part in parts:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-c", helper_command(), _claims, *part],
                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True,  # its own session (Ctrl-C is this process's to handle) and scheduling group
            )  # fmt: skip
        except (OSError, ValueError, TypeError):  # no interpreter to start (embedded Python, say)
            return
        _helpers.append(proc)
        _sent.update(part)


def helper_command() -> str:
    """``python -c`` code running :func:`helper_main` on this process's deteval."""
    code = "from deteval._startup.compile_ahead import helper_main; helper_main(sys.argv[1], sys.argv[2:])"
    return in_this_deteval(code)


def in_this_deteval(code: str) -> str:
    """``python -c`` code that runs ``code`` (``sys`` imported) with this process's deteval first on the path.

    ``python -c`` and ``-m`` put the working directory first: run from a checkout of deteval with
    deteval installed, a child would compile the checkout's kernels, cache entries this process
    never loads.
    """
    parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # above deteval/
    return f"import sys; sys.path[0] = {parent!r}\n{code}"


def kernel_named(name: str):
    """The kernel ``module.qualname`` (as :mod:`deteval._startup.kernel_signatures` names it)."""
    import importlib

    module, _, qualname = name.rpartition(".")
    return getattr(importlib.import_module(module), qualname)


def claim(path: str) -> bool:
    """Create the file ``path``: False if it exists (another process claimed it); other errors raise."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def _end_helpers() -> None:
    import shutil

    for proc in _helpers:
        if proc.poll() is None:
            proc.kill()
    for proc in _helpers:
        proc.wait()
    if _claims is not None:
        shutil.rmtree(_claims, ignore_errors=True)


def on_miss(name: str, sig) -> bool:
    """A deteval kernel's cache miss in this process: True when a helper has just compiled it (load again).

    The first miss starts the helpers. Then: a kernel nobody claimed is claimed here (this
    process compiles it, helpers skip it); one a helper claimed is waited for.
    """
    global _claims, _started
    if os.environ.get(ENV, "").strip() == "0":
        return False
    import atexit
    import tempfile

    key = kernel_key(name, sig)
    with _lock:
        if not _started:
            _started = True
            try:
                _claims = tempfile.mkdtemp(prefix="deteval-compile-")
            except OSError:
                return False
            atexit.register(_end_helpers)
            _claim(key)  # before any helper can
            _start_helpers()
            return False
        if _claims is None:
            return False
        _start_helpers()  # groups noted since, if a helper has finished
    return not _claim(key) and _wait(key)


def _claim(key: str) -> bool:
    try:
        return claim(os.path.join(_claims, key + ".claim"))
    except OSError:
        return True  # no claim folder any more: compile here


def _wait(key: str) -> bool:
    """Wait for a helper's done file of ``key``: True once there, False if no helper lives to write it."""
    import time

    done = os.path.join(_claims, key + ".done")
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if os.path.exists(done):
            return True
        if all(p.poll() is not None for p in _helpers):
            return os.path.exists(done)
        time.sleep(0.005)
    return False


def parse_signature(texts: tuple[str, ...]) -> tuple:
    """A tuple of numba types from their ``repr`` (as :mod:`deteval._startup.kernel_signatures` records them)."""
    from numba.core import types

    names = {k: getattr(types, k) for k in dir(types) if not k.startswith("_")}
    names["bool"] = types.boolean
    # our own recorded type names, evaluated with numba's types and no builtins
    return tuple(eval(text, {"__builtins__": {}}, names) for text in texts)  # noqa: S307


def helper_main(claims: str, groups: list[str]) -> None:
    """Compile the groups' kernels (each group from its end), skipping any claimed; a done file for each."""
    from deteval._startup.kernel_signatures import GROUPS

    for group in groups:
        for name, texts in reversed(GROUPS[group]):
            sig = parse_signature(texts)
            key = kernel_key(name, sig)
            try:
                if not claim(os.path.join(claims, key + ".claim")):
                    continue  # claimed by the run or another helper
            except OSError:
                continue  # the run is over
            try:
                kernel_named(name).compile(sig)
            except Exception:  # noqa: BLE001 - a stale recorded signature: the run compiles what it needs itself
                pass
            finally:  # done even on failure: the waiting run then compiles it itself
                with open(os.path.join(claims, key + ".done"), "w"):
                    pass


if __name__ == "__main__":
    helper_main(sys.argv[1], sys.argv[2:])
