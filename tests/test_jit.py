"""deteval.jit and deteval.numba_start: numba's start-up costs cut without changing what numba can do; threads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from deteval.jit import SharedTasks, num_threads, run_chunks, run_tasks


def _run(code: str, cache_dir) -> None:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


_CALL = (  # two small kernels, called directly (group_order sorts small inputs with numpy)
    "import sys, numpy as np\n"
    "from deteval.accumulate import _in_group_order\n"
    "from deteval.sorting import counting_sort_kernel\n"
    "assert not _in_group_order(np.zeros(3, np.int64), np.zeros(3, np.int64), np.array([0, 2, 1]))\n"
    "assert counting_sort_kernel(np.array([2, 0, 1]), np.arange(3), False, 3).tolist() == [1, 2, 0]\n"
)


def test_a_compile_does_not_import_scipy_but_numba_still_finds_blas(tmp_path):
    code = _CALL + (
        "from numba.core import entrypoints\n"  # numba's extensions were loaded before the compile
        "assert entrypoints._already_initialized\n"
        "assert 'scipy.linalg' not in sys.modules, 'scipy.linalg imported by a kernel compile'\n"
        "import importlib.util, numba, numba.np.arraymath as am\n"
        "assert am._HAVE_BLAS == (importlib.util.find_spec('scipy') is not None)\n"
        "if am._HAVE_BLAS:\n"
        "    f = numba.njit(lambda a, b: np.dot(a, b))\n"
        "    assert f(np.ones(3), np.ones(3)) == 3.0\n"
    )
    _run(code, tmp_path)  # an empty cache: the kernels compile


def test_a_cache_load_skips_numba_registries_and_compiling_still_works(tmp_path):
    _run(_CALL, tmp_path)  # fills the cache
    code = _CALL + (
        "for mod in ('numba.np.arraymath', 'numba.np.linalg', 'scipy.linalg'):\n"
        "    assert mod not in sys.modules, mod + ' imported by a cached kernel load'\n"
        "from deteval.accumulate import _in_group_order\n"
        "assert _in_group_order.stats.cache_hits, 'the kernel was compiled, not loaded'\n"
        "import numba\n"  # after a light load, numba still compiles new code (its compiler refreshes)
        "f = numba.njit(lambda a: np.sort(a)[::-1].cumsum())\n"
        "assert f(np.array([2.0, 1.0, 3.0])).tolist() == [3.0, 5.0, 6.0]\n"
        "import deteval.jit as j, numba.np.arraymath as am, importlib.util\n"
        "assert am._HAVE_BLAS == (importlib.util.find_spec('scipy') is not None)\n"
    )
    _run(code, tmp_path)


def test_a_warm_process_loads_without_numba_extras_and_still_compiles_against_loaded_kernels(tmp_path):
    _run(_CALL, tmp_path)  # fills the cache, and the file of numba's runtime helpers
    code = _CALL + (
        "import deteval.numba_start as j\n"
        "from numba.core.runtime import rtsys\n"
        "assert isinstance(rtsys.library, j._LoadedLibrary), 'the runtime helpers were compiled, not loaded'\n"
        "for mod in ('scipy', 'yaml', 'numba.np.arrayobj', 'numpy.ma'):\n"
        "    assert mod not in sys.modules, mod + ' imported'\n"
        "from numba.core import entrypoints\n"
        "assert not entrypoints._already_initialized, 'extension entry points read for a cached kernel'\n"
        "from deteval.sorting import counting_sort_kernel as counting_sort\n"
        "lib = next(iter(counting_sort.overloads.values())).library\n"
        "assert isinstance(lib, j._LoadedLibrary) and lib._shared_module is None, 'bitcode parsed at load'\n"
        "import numba\n"  # a new kernel that calls a loaded one links its bitcode, parsed now
        "@numba.njit\n"
        "def twice(key, order, every_row, n):\n"  # the flag an argument: a literal False types another way
        "    return counting_sort(key, counting_sort(key, order, every_row, n), every_row, n)\n"
        "assert twice(np.array([2, 0, 1, 0]), np.arange(4), False, 3).tolist() == [1, 3, 2, 0]\n"
        "assert lib._shared_module is not None\n"
        "assert numba.njit(lambda n: np.empty(n).size + np.zeros(2).sum())(3) == 3\n"
        "import numba.np.arrayobj\n"  # the real module, after environments were built without it
        "assert numba.njit(lambda n: np.ones(n).sum())(4) == 4.0\n"
    )
    _run(code, tmp_path)


def test_preload_loads_what_the_cache_holds_and_compiles_nothing(tmp_path):
    code = (
        "import numpy as np\n"
        "from deteval.jit import preload\n"
        "from deteval.sorting import counting_sort_kernel\n"
        "preload([counting_sort_kernel, len])\n"  # not a kernel: skipped
        "loaded = len(counting_sort_kernel.overloads)\n"
        "assert not counting_sort_kernel.stats.cache_misses\n"
        "print(loaded)\n"
        "assert counting_sort_kernel(np.array([2, 0, 1]), np.arange(3), False, 3).tolist() == [1, 2, 0]\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    run = [sys.executable, "-c", code]
    empty = subprocess.run(run, env=env, check=True, capture_output=True, text=True).stdout.split()
    assert empty == ["0"]  # an empty cache: nothing loaded, nothing compiled by preload (the call compiled)
    warm = subprocess.run(run, env=env, check=True, capture_output=True, text=True).stdout.split()
    assert warm == ["1"]  # the compilation the first process cached, loaded before any call


def test_a_damaged_runtime_helpers_file_is_compiled_again(tmp_path):
    _run(_CALL, tmp_path)
    (stored,) = tmp_path.rglob("deteval-nrt-*.pkl")
    stored.write_bytes(b"not a pickle")
    _run(_CALL + "assert np.zeros(3).sum() == 0\n", tmp_path)  # kernels allocate through the helpers
    check = "import deteval.numba_start as j\nfrom numba.core.runtime import rtsys\n" + _CALL + (
        "assert isinstance(rtsys.library, j._LoadedLibrary)\n"
    )
    _run(check, tmp_path)  # rewritten whole, and loaded


def test_a_numba_config_file_is_read_as_numba_would(tmp_path):
    import deteval

    root = str(Path(deteval.__file__).resolve().parent.parent)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": root}
    env.pop("NUMBA_BOUNDSCHECK", None)
    here, later = tmp_path / "here", tmp_path / "later"
    for d in (here, later):
        d.mkdir()
    (here / ".numba_config.yaml").write_text("boundscheck: 1\n")
    (later / ".numba_config.yaml").write_text("boundscheck: 1\n")
    code = "import deteval.jit, numba.core.config as c\nassert c.BOUNDSCHECK == 1, c.BOUNDSCHECK\n"
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=here)
    # a file found only later (after a change of directory) is read then, yaml imported as numba would
    code = (
        "import os, sys, deteval.jit, numba.core.config as c\n"
        "assert 'yaml' not in sys.modules and not c.BOUNDSCHECK\n"
        f"os.chdir({str(later)!r})\n"
        "c.reload_config()\n"
        "assert c.BOUNDSCHECK == 1, c.BOUNDSCHECK\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=tmp_path)


def test_array_types_are_numbas():
    from numba.core import errors
    from numba.core.typing import typeof

    from deteval import numba_start

    base = np.arange(24.0).reshape(4, 6)
    ro = base.copy()
    ro.flags.writeable = False
    arrays = [base, base.T, base[:, ::2], base[1:3], ro, np.zeros(0, np.int8), np.array(3), np.ones(3, np.bool_),
              np.frombuffer(b"abc", np.uint8), np.zeros((2, 2), np.complex64)]  # fmt: skip
    for a in arrays:
        assert typeof.typeof(a) == numba_start._numba_typeof_ndarray(a, typeof.Purpose.argument), a
    # numba's own answers: a masked array is refused, a dtype numba does not take too
    for a in (np.ma.masked_array([1, 2]), np.zeros(2, [("a", object)])):
        with pytest.raises(errors.NumbaError):
            typeof.typeof(a)


def _fill(lo, hi, out):
    out[lo:hi] += np.arange(lo, hi)


def test_run_chunks_covers_every_item_once(monkeypatch):
    for threads in ("1", "3"):
        monkeypatch.setenv("NUMBA_NUM_THREADS", threads)
        assert num_threads() == int(threads)
        for n, cost in [(0, None), (1, None), (10, None), (257, np.arange(257) % 7), (40, np.zeros(40))]:
            out = np.zeros(n, np.int64)
            run_chunks(_fill, n, cost, out)
            assert np.array_equal(out, np.arange(n))


def test_shared_tasks_run_each_task_once_give_results_in_order_and_raise_a_tasks_error(monkeypatch):
    import threading
    import time

    monkeypatch.setenv("NUMBA_NUM_THREADS", "3")
    ran = []

    def task(k):
        time.sleep(0.001 * (k % 3))  # uneven: threads take tasks out of step
        ran.append((k, threading.get_ident()))
        return k * k

    tasks = [lambda k=k: task(k) for k in range(60)]
    shared = SharedTasks(tasks, helpers=2)
    assert shared.results() == [k * k for k in range(60)]
    assert shared._tasks is None  # released when done: tasks holding their owner leave no cycle
    assert sorted(k for k, _ in ran) == list(range(60))
    assert len({t for _, t in ran}) > 1, "no helper took a task"
    shared = SharedTasks([lambda: 1, lambda: [][0], lambda: 3], helpers=2)
    with pytest.raises(IndexError):
        shared.results()
    assert SharedTasks([], helpers=2).results() == []
    assert run_tasks([lambda: 1, lambda: 2]) == [1, 2]


def test_run_chunks_in_a_forked_child_after_the_parent_used_threads(monkeypatch):
    import os

    monkeypatch.setenv("NUMBA_NUM_THREADS", "2")
    out = np.zeros(100, np.int64)
    run_chunks(_fill, 100, None, out)  # the parent's pool now has threads
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            child = np.zeros(100, np.int64)
            run_chunks(_fill, 100, None, child)
            os._exit(0 if np.array_equal(child, np.arange(100)) else 1)
        finally:
            os._exit(2)
    for _ in range(200):  # the child must finish, not wait on threads it never had
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.WEXITSTATUS(status) == 0
            return
        __import__("time").sleep(0.05)
    os.kill(pid, 9)
    raise AssertionError("run_chunks hung in a forked child")


def test_a_change_to_a_called_kernels_file_recompiles_the_caller(tmp_path):
    import shutil

    import deteval

    pkg = tmp_path / "pkg"
    shutil.copytree(Path(deteval.__file__).parent, pkg / "deteval", ignore=shutil.ignore_patterns("__pycache__"))
    code = (
        "import numpy as np\n"
        "from deteval.accumulate import accumulate, _accumulate_kernel\n"
        "st = np.ones((2, 1, 1), np.int8)\n"
        "accumulate(np.zeros(2, np.int32), np.arange(2, dtype=np.int32), np.zeros(2, np.int32), np.ones(2),"
        " st, np.full((1, 1), 2), np.array([1]), np.linspace(0, 1, 3))\n"
        "print(sum(_accumulate_kernel.stats.cache_hits.values()))\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(pkg)}

    def hits() -> int:
        run = [sys.executable, "-c", code]
        out = subprocess.run(run, env=env, cwd=tmp_path, check=True, capture_output=True, text=True)
        return int(out.stdout.split()[-1])

    assert hits() == 0  # compiled
    assert hits() == 1  # loaded
    # the accumulate kernel carries the machine code of groups.sort_by_score_desc: a change there must reach it
    with open(pkg / "deteval" / "matching" / "groups.py", "a") as f:
        f.write("\n# changed\n")
    assert hits() == 0
