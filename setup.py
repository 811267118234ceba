"""The build step that compiles deteval's kernels into the package (see ``deteval/_runtime/shipped.py``).

Everything else about the package is in ``pyproject.toml``. The compile needs numba and numpy in the
build environment (``[build-system] requires``); if it fails, the package is built without the kernels
and they compile on first use, as numba does.
"""

import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

TIMEOUT_S = 1800


class BuildPyWithKernels(build_py):
    """``build_py``, then the kernels compiled into ``deteval/_kernels`` and ``deteval/_aot`` of the build (not for
    editable installs)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False) or os.environ.get("DETEVAL_SHIPPED_KERNELS", "").strip() == "0":
            return
        build_lib = os.path.abspath(self.build_lib)
        target = os.path.join(build_lib, "deteval", "_kernels")
        shutil.rmtree(target, ignore_errors=True)
        print("deteval: compiling kernels into the package (later first runs load them)", flush=True)
        try:
            # the package being built first on the path, not the source tree (python -c puts the working directory)
            code = f"import sys; sys.path[0] = {build_lib!r}\nfrom deteval._runtime.shipped import build\n"
            subprocess.run([sys.executable, "-c", code + "build(sys.argv[1])", target], check=True, timeout=TIMEOUT_S)
        except (OSError, subprocess.SubprocessError) as exc:
            shutil.rmtree(target, ignore_errors=True)
            print(f"deteval: kernels not compiled at build ({exc}); they compile on first use", flush=True)
        # and into extension modules (deteval/_runtime/aot.py): runs that need only them never import numba
        aot = os.path.join(build_lib, "deteval", "_aot")
        shutil.rmtree(aot, ignore_errors=True)
        print("deteval: compiling kernels ahead of time (numba.pycc; needs a C compiler)", flush=True)
        try:
            code = f"import sys; sys.path[0] = {build_lib!r}\nfrom deteval._runtime.aot_build import build\n"
            subprocess.run([sys.executable, "-c", code + "build(sys.argv[1])", aot], check=True, timeout=TIMEOUT_S)
        except (OSError, subprocess.SubprocessError) as exc:
            shutil.rmtree(aot, ignore_errors=True)
            print(f"deteval: no kernels compiled ahead of time ({exc}); numba runs them", flush=True)


setup(cmdclass={"build_py": BuildPyWithKernels})
