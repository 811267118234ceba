"""The background build of kernels ahead of time after install, into the user's cache (:mod:`.aot_cache`).

The first ``deteval`` command that finds neither the package's extension modules (built at install with
``DETEVAL_BUILD_AOT=1``) nor a built cache folder starts one detached, low-priority process building them
(:mod:`.aot_build`); the folder appears whole (built aside, then renamed) or not at all. Until it has, runs
use the shipped numba cache: they import numba, and wait for no compile. Later runs whose kernels it holds
import no numba. ``DETEVAL_AOT_BACKGROUND=0`` (the tests set it) or ``DETEVAL_AOT=0`` starts no build.
"""

from __future__ import annotations

import os
import sys
import time

from deteval._runtime import PLAIN
from deteval._runtime.aot import ENV, INDEX
from deteval._runtime.aot_cache import user_folder
from deteval._runtime.built import built_folder

BACKGROUND_ENV = "DETEVAL_AOT_BACKGROUND"
STALE_LOCK_S = 3600.0  # a build's lock older than this (a machine that went down mid-build) is taken over


def _wanted() -> bool:
    """Whether a background build may start: asked for, and the package installed with its shipped kernels
    (a source tree or editable install compiles on use; the build would compile everything once more)."""
    if PLAIN or os.environ.get(BACKGROUND_ENV, "").strip() == "0" or os.environ.get(ENV, "").strip() == "0":
        return False
    if os.path.isfile(os.path.join(built_folder("_aot"), INDEX)):  # built into the package at install
        return False
    return os.path.isdir(built_folder("_kernels"))


def build_in_background() -> bool:
    """Start the detached build of the user folder's modules unless they exist, one is running, or it is off;
    True when one started. Never raises for the machine's reasons (a read-only home, no fork): the run that
    calls it has its result already."""
    try:
        if not _wanted():
            return False
        folder = user_folder()
        done = os.path.isfile(os.path.join(folder, INDEX)) or os.path.exists(folder + ".failed")
        if done or not _take_lock(folder + ".lock"):
            return False
        _spawn(folder)
    except OSError:
        return False
    return True


def _take_lock(path: str) -> bool:
    """Create ``path`` (holding this moment); an old one is a build that never finished: taken over."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                if time.time() - os.path.getmtime(path) < STALE_LOCK_S:
                    return False
                os.remove(path)
            except FileNotFoundError:
                pass
            continue
        os.close(fd)
        return True
    return False


def _spawn(folder: str) -> None:
    import subprocess

    from deteval._startup.compile_ahead import in_this_deteval

    code = in_this_deteval("from deteval._runtime.aot_background import build_into as b; b(sys.argv[1])")
    log = open(folder + ".log", "w", encoding="utf-8")  # noqa: SIM115 - the child's; closed here once it has it
    try:
        subprocess.Popen(
            [sys.executable, "-c", code, folder],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives this run, and a Ctrl-C in its terminal
            env=dict(os.environ, DETEVAL_COMPILE_HELPERS="0"),
        )  # fmt: skip
    finally:
        log.close()


def build_into(folder: str, groups: list[str] | None = None) -> None:
    """The background process: build the modules aside, rename the folder into place, drop the lock. A build
    that makes no module at all (no C compiler) leaves ``<folder>.failed`` with the reason: no run starts it
    again for these sources."""
    import shutil
    import tempfile

    from deteval._runtime.aot_build import build

    try:
        os.nice(10)  # behind whatever the user runs
    except OSError:
        pass
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    aside = tempfile.mkdtemp(prefix=os.path.basename(folder) + ".building-", dir=os.path.dirname(folder))
    try:
        try:
            build(aside, groups=groups)
        except Exception as exc:  # noqa: BLE001 - the reason goes to the log and the marker
            print(f"deteval: {exc}", file=sys.stderr, flush=True)
            if not os.path.isfile(os.path.join(aside, INDEX)):
                with open(folder + ".failed", "w", encoding="utf-8") as f:
                    f.write(f"{exc}\n")
                return
        os.rename(aside, folder)  # the modules that built (a kernel without one goes to numba)
    finally:
        shutil.rmtree(aside, ignore_errors=True)
        try:
            os.remove(folder + ".lock")
        except FileNotFoundError:
            pass
