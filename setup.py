"""The build step that compiles deteval's kernels into the package: a numba cache (``deteval/_runtime/shipped.py``)
and, with ``DETEVAL_BUILD_AOT=1``, extension modules (``deteval/_runtime/aot_build.py``, which also need a C
compiler; without it they are built after install, in the background: ``deteval/_runtime/aot_background.py``).

Everything else about the package is in ``pyproject.toml``. The compile needs numba and numpy in the
build environment (``[build-system] requires``); if a step fails, the package is built without what it
makes and the kernels compile on first use, as numba does.
"""

import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1: the wheel package's, if any
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:
        bdist_wheel = None

TIMEOUT_S = 1800


class BuildPyWithKernels(build_py):
    """``build_py``, then the kernels compiled into ``deteval/_kernels`` and ``deteval/_aot`` of the build (not for
    editable installs)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False) or os.environ.get("DETEVAL_SHIPPED_KERNELS", "").strip() == "0":
            return
        build_lib = os.path.abspath(self.build_lib)
        _build_step(
            build_lib, "_kernels", "deteval._runtime.shipped",
            "compiling kernels into the package (later first runs load them)",
            "kernels not compiled at build ({}); they compile on first use",
        )  # fmt: skip
        # and into extension modules (deteval/_runtime/aot.py), whose runs never import numba: asked for only, as
        # they would double the install's time for ~0.3 s a run; else the first deteval run builds them in the
        # background into the user's cache (deteval/_runtime/aot_background.py)
        if os.environ.get("DETEVAL_BUILD_AOT", "").strip() != "1":
            print("deteval: kernels ahead of time: built after install, in the background (DETEVAL_BUILD_AOT=1: now)")
            return
        _build_step(
            build_lib, "_aot", "deteval._runtime.aot_build",
            "compiling kernels ahead of time (numba.pycc; needs a C compiler)",
            "no kernels compiled ahead of time ({}); the install goes on, and each run imports numba to call "
            "the kernels above (about 0.5 s more per run than with a C compiler)",
        )  # fmt: skip


class PlatformWheel(bdist_wheel or object):
    """A wheel holding compiled kernels (x86-64 code for this Python) is tagged for this platform and Python
    (``cp311-cp311-linux_x86_64``), not ``py3-none-any``; one without them stays pure."""

    def run(self):
        if not self.skip_build:
            self.run_command("build")  # the build decides: its compiled folders exist or not
        build_lib = self.get_finalized_command("build_py").build_lib
        self.root_is_pure = not any(os.path.isdir(os.path.join(build_lib, "deteval", d)) for d in COMPILED)
        super().run()


COMPILED = ("_kernels", "_aot")


def _build_step(build_lib: str, folder: str, module: str, doing: str, failed: str) -> None:
    """``module.build(deteval/<folder> of the build)`` in a child process; on failure the folder is removed and the
    install goes on."""
    target = os.path.join(build_lib, "deteval", folder)
    shutil.rmtree(target, ignore_errors=True)
    print(f"deteval: {doing}", flush=True)
    try:
        # the package being built first on the path, not the source tree (python -c puts the working directory)
        code = f"import sys; sys.path[0] = {build_lib!r}\nfrom {module} import build\nbuild(sys.argv[1])"
        # stdout (a line per kernel) goes to pip's output (pip -v shows it); stderr is kept for the reason
        argv = [sys.executable, "-c", code, target]
        done = subprocess.run(argv, stderr=subprocess.PIPE, text=True, timeout=TIMEOUT_S)
        sys.stderr.write(done.stderr)
        if done.returncode != 0:
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            raise subprocess.SubprocessError(lines[-1] if lines else f"exit status {done.returncode}")
    except (OSError, subprocess.SubprocessError) as exc:
        shutil.rmtree(target, ignore_errors=True)
        print("deteval: " + failed.format(exc), flush=True)


setup(cmdclass={"build_py": BuildPyWithKernels, **({"bdist_wheel": PlatformWheel} if bdist_wheel else {})})
