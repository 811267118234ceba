"""Kernels compiled at build time (deteval/_runtime/shipped.py): loaded by a process with an empty
numba cache, never written to afterwards, ignored when switched off or when a kernel source changed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deteval._runtime import PLAIN

pytestmark = pytest.mark.skipif(PLAIN, reason="DETEVAL_PLAIN_NUMBA: numba's own cache, nothing shipped")

KERNEL = "deteval.accumulation.cumulative.cumulative_counts"  # small: the test compiles it once
_CALL = (
    "import numpy as np\n"
    "from deteval.accumulation.cumulative import cumulative_counts as k\n"
    "tp = np.array([True, False, True]); fp = ~tp\n"
    "tpc, fpc, _ = k(tp, fp, np.array([0.9, 0.8, 0.7]), False)\n"
    "assert tpc.tolist() == [1, 1, 2] and fpc.tolist() == [0, 1, 1]\n"
    "print(sum(k.stats.cache_hits.values()), sum(k.stats.cache_misses.values()))\n"
)


@pytest.fixture(scope="module")
def package(tmp_path_factory) -> Path:
    """A copy of the package (no shipped kernels or ahead-of-time code of its own) with ``KERNEL`` built into its
    ``_kernels``."""
    import deteval

    root = tmp_path_factory.mktemp("shipped")
    ignore = shutil.ignore_patterns("__pycache__", "_kernels", "_aot")
    shutil.copytree(Path(deteval.__file__).parent, root / "deteval", ignore=ignore)
    code = f"from deteval._runtime.shipped import build; build({str(root / 'deteval' / '_kernels')!r}, 1, [{KERNEL!r}])"
    env = {**os.environ, "PYTHONPATH": str(root), "NUMBA_CACHE_DIR": str(root / "build-cache")}
    env.pop("DETEVAL_SHIPPED_KERNELS", None)
    subprocess.run([sys.executable, "-c", code], env=env, cwd=root, check=True)
    return root


def _files(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def _hits_misses(package: Path, cache: Path, **env: str) -> tuple[int, int]:
    full = {**os.environ, "PYTHONPATH": str(package), "NUMBA_CACHE_DIR": str(cache), "DETEVAL_COMPILE_HELPERS": "0"}
    full["DETEVAL_AOT"] = "0"  # numba's dispatcher, whatever ahead-of-time code the package has
    full.pop("DETEVAL_SHIPPED_KERNELS", None)
    run = subprocess.run([sys.executable, "-c", _CALL], env=full | env, cwd=package, check=True, capture_output=True,
                         text=True)  # fmt: skip
    hits, misses = run.stdout.split()
    return int(hits), int(misses)


def test_an_empty_cache_loads_the_shipped_kernel_and_writes_nothing_there(package, tmp_path):
    shipped = package / "deteval" / "_kernels"
    assert any(shipped.rglob("cumulative.cumulative_counts-*.nbi"))
    before = _files(shipped)
    assert _hits_misses(package, tmp_path / "cache") == (1, 0)
    assert not list((tmp_path / "cache").rglob("*.nbi"))  # nothing compiled into the user's cache
    assert _files(shipped) == before  # nor into the package


def test_switched_off_the_kernel_compiles_into_the_users_cache(package, tmp_path):
    assert _hits_misses(package, tmp_path / "cache", DETEVAL_SHIPPED_KERNELS="0") == (0, 1)
    assert any((tmp_path / "cache").rglob("cumulative.cumulative_counts-*.nbi"))


def test_a_changed_kernel_source_is_not_served_from_the_shipped_kernels(package, tmp_path):
    changed = tmp_path / "changed"
    shutil.copytree(package / "deteval", changed / "deteval")
    with open(changed / "deteval" / "accumulation" / "cumulative.py", "a") as f:
        f.write("\n# changed after the build\n")
    assert _hits_misses(changed, tmp_path / "cache") == (0, 1)


def test_the_install_times_of_the_sources_do_not_matter(package, tmp_path):
    """Installing writes every file anew: numba's own stamp (the source's time) would miss."""
    moved = tmp_path / "moved"
    shutil.copytree(package / "deteval", moved / "deteval", copy_function=shutil.copyfile)  # new times
    assert _hits_misses(moved, tmp_path / "cache") == (1, 0)


def test_the_build_compiles_its_own_package_not_the_working_directorys(tmp_path):
    """setup.py runs the build from the source tree: the compile must import the package being built."""
    checkout = tmp_path / "deteval"
    checkout.mkdir()
    (checkout / "__init__.py").write_text("raise ImportError('the source tree in the working directory')\n")
    import deteval

    parent = str(Path(deteval.__file__).resolve().parent.parent)
    code = f"import sys; sys.path[0] = {parent!r}\nfrom deteval._runtime.shipped import build\n"
    code += "build(sys.argv[1], 1, [])"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "out")], env=env, cwd=tmp_path, check=True)
