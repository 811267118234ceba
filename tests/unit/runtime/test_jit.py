"""deteval.jit and deteval._runtime: numba's start-up costs cut without changing what numba can do; threads.

Tests of a patch skip when ``DETEVAL_PLAIN_NUMBA=1`` turns the patches off.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from deteval._runtime import PLAIN
from deteval.jit import SharedTasks, num_threads, run_chunks, run_tasks, using_threads

# tests of what a cold cache does: the kernels an installed package ships are ignored
pytestmark = pytest.mark.usefixtures("no_shipped_kernels")

patched = pytest.mark.skipif(PLAIN, reason="DETEVAL_PLAIN_NUMBA=1: numba's patches are off")


def _run(code: str, cache_dir) -> None:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


_CALL = (  # two small kernels, called directly (group_order sorts small inputs with numpy)
    "import sys, numpy as np\n"
    "from deteval.accumulation.accumulate import _in_group_order\n"
    "from deteval.matching.sorting import counting_sort_kernel\n"
    "assert not _in_group_order(np.zeros(3, np.int64), np.zeros(3, np.int64), np.array([0, 2, 1]))\n"
    "assert counting_sort_kernel(np.array([2, 0, 1]), np.arange(3), False, 3).tolist() == [1, 2, 0]\n"
)


# numpy 1.x imports numpy.ma with numpy (numpy 2 on first use): nothing to save then
_MA_BY_NUMPY = "import sys, numpy\nma_by_numpy = 'numpy.ma' in sys.modules\n"
# numba imported as deteval imports it (kernels with ahead-of-time code never import it)
_NUMBA_BY_DETEVAL = "import deteval._runtime as _r\n_r.numba_njit\n"


@patched
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


@pytest.mark.slow
@patched
def test_a_cache_load_skips_numba_registries_and_compiling_still_works(tmp_path):
    _run(_CALL, tmp_path)  # fills the cache
    code = _CALL + (
        "for mod in ('numba.np.arraymath', 'numba.np.linalg', 'scipy.linalg'):\n"
        "    assert mod not in sys.modules, mod + ' imported by a cached kernel load'\n"
        "from deteval.accumulation.accumulate import _in_group_order\n"
        "assert _in_group_order.stats.cache_hits, 'the kernel was compiled, not loaded'\n"
        "import numba\n"  # after a light load, numba still compiles new code (its compiler refreshes)
        "f = numba.njit(lambda a: np.sort(a)[::-1].cumsum())\n"
        "assert f(np.array([2.0, 1.0, 3.0])).tolist() == [3.0, 5.0, 6.0]\n"
        "import deteval.jit as j, numba.np.arraymath as am, importlib.util\n"
        "assert am._HAVE_BLAS == (importlib.util.find_spec('scipy') is not None)\n"
    )
    _run(code, tmp_path)


@pytest.mark.slow
@patched
def test_a_warm_process_loads_without_numba_extras_and_still_compiles_against_loaded_kernels(tmp_path):
    _run(_CALL, tmp_path)  # fills the cache, and the file of numba's runtime helpers
    code = (
        _MA_BY_NUMPY
        + _CALL
        + (
            "import deteval._runtime.objcode as j\n"
            "from numba.core.runtime import rtsys\n"
            "assert isinstance(rtsys.library, j.LoadedLibrary), 'the runtime helpers were compiled, not loaded'\n"
            "for mod in ('scipy', 'yaml', 'numba.np.arrayobj') + ((), ('numpy.ma',))[not ma_by_numpy]:\n"
            "    assert mod not in sys.modules, mod + ' imported'\n"
            "from numba.core import entrypoints\n"
            "assert not entrypoints._already_initialized, 'extension entry points read for a cached kernel'\n"
            "from deteval.matching.sorting import counting_sort_kernel as counting_sort\n"
            "lib = next(iter(counting_sort.overloads.values())).library\n"
            "assert isinstance(lib, j.LoadedLibrary) and lib._shared_module is None, 'bitcode parsed at load'\n"
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
    )
    _run(code, tmp_path)


@patched
def test_preload_loads_what_the_cache_holds_and_compiles_nothing(tmp_path):
    code = (
        "import numpy as np\n"
        "from deteval.jit import preload\n"
        "from deteval.matching.sorting import counting_sort_kernel\n"
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


@pytest.mark.slow
@patched
def test_a_damaged_runtime_helpers_file_is_compiled_again(tmp_path):
    _run(_CALL, tmp_path)
    (stored,) = tmp_path.rglob("deteval-nrt-*.pkl")
    stored.write_bytes(b"not a pickle")
    _run(_CALL + "assert np.zeros(3).sum() == 0\n", tmp_path)  # kernels allocate through the helpers
    check = (
        "import deteval._runtime.objcode as j\nfrom numba.core.runtime import rtsys\n"
        + _CALL
        + ("assert isinstance(rtsys.library, j.LoadedLibrary)\n")
    )
    _run(check, tmp_path)  # rewritten whole, and loaded


@patched
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
    code = _NUMBA_BY_DETEVAL + "import numba.core.config as c\nassert c.BOUNDSCHECK == 1, c.BOUNDSCHECK\n"
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=here)
    # a file found only later (after a change of directory) is read then, yaml imported as numba would
    code = (
        _NUMBA_BY_DETEVAL + "import os, sys, numba.core.config as c\n"
        "assert 'yaml' not in sys.modules and not c.BOUNDSCHECK\n"
        f"os.chdir({str(later)!r})\n"
        "c.reload_config()\n"
        "assert c.BOUNDSCHECK == 1, c.BOUNDSCHECK\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=tmp_path)


_ARRAYS = (  # every kind of array another numba user could pass: dtypes, layouts, read-only, subclasses
    "import numpy as np\n"
    "base = np.arange(24.0).reshape(4, 6)\n"
    "ro = base.copy()\n"
    "ro.flags.writeable = False\n"
    "dtypes = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,\n"
    "          np.float16, np.float32, np.float64, np.complex64, np.complex128, 'M8[ns]', 'm8[s]', 'M8', 'S3', 'U2',\n"
    "          [('a', 'i4'), ('b', 'f8')], np.dtype([('a', 'u1'), ('b', 'f8')], align=True), '<f8']\n"
    "arrays = [np.zeros((2, 3), d) for d in dtypes] + [np.zeros((2, 3), d)[:, ::2] for d in dtypes]\n"
    "arrays += [base, base.T, base[:, ::2], base[1:3], ro, np.zeros(0, np.int8), np.array(3),\n"
    "           np.frombuffer(b'abcd', np.uint8), np.zeros((2, 0, 3)), np.zeros((1, 1, 1, 1, 1))]\n"
    "arrays.append(np.zeros(2, object))  # numba types it, as an array of pyobject\n"
    "refused = [np.zeros(2, '>i4'), np.zeros(2, [('a', object)]), np.zeros(2, 'V3')]\n"
    "subclasses = [np.zeros(3).view(np.recarray), np.matrix([[1.0]])]\n"
)


@patched
def test_the_ndarray_typeof_gives_numbas_types_and_errors_for_every_array(tmp_path):
    """deteval's typeof for np.ndarray is registered for every numba user: it must be numba's, minus numpy.ma."""
    code = (
        _MA_BY_NUMPY
        + _ARRAYS
        + (
            _NUMBA_BY_DETEVAL + "from deteval._runtime import typeof as t\n"
            "from numba.core.typing import typeof\n"
            "assert t.installed() != ma_by_numpy\n"  # installed unless numpy imported numpy.ma itself
            "arg = typeof.Purpose.argument\n"
            "ours = [typeof.typeof(a, arg) for a in arrays]\n"
            "assert ma_by_numpy or 'numpy.ma' not in sys.modules, 'numpy.ma imported by typing a plain array'\n"
            "\n"
            "def outcome(f, a):\n"
            "    try:\n"
            "        return f(a, arg)\n"
            "    except Exception as e:\n"
            "        return type(e), str(e)\n"
            "\n"
            "odd = [outcome(typeof.typeof, a) for a in refused + subclasses]\n"  # numba's own function answers
            "numbas = [t._numba_typeof_ndarray(a, arg) for a in arrays]\n"
            "assert ours == numbas, [(o, n) for o, n in zip(ours, numbas) if o != n]\n"
            "flags = lambda ts: [(x.mutable, x.aligned, x.layout) for x in ts]\n"
            "assert flags(ours) == flags(numbas)\n"
            "assert odd == [outcome(t._numba_typeof_ndarray, a) for a in refused + subclasses]\n"
            "assert all(type(o) is tuple for o in odd[: len(refused)]), odd\n"
            "import numpy.ma\n"  # then numba's function answers every call
            "assert outcome(typeof.typeof, numpy.ma.masked_array([1, 2])) == "
            "outcome(t._numba_typeof_ndarray, numpy.ma.masked_array([1, 2]))\n"
            "assert [typeof.typeof(a, arg) for a in arrays] == numbas\n"
        )
    )
    _run(code, tmp_path)


@patched
def test_import_hooks_live_only_inside_detevals_own_imports(tmp_path):
    code = (
        "import sys, threading\n"
        + _NUMBA_BY_DETEVAL  # numba imported through the hook, which is gone afterwards
        + "assert not [f for f in sys.meta_path if type(f).__module__.startswith('deteval')], sys.meta_path\n"
        "from deteval._runtime.light_import import scipy_blas_deferred\n"
        "seen = []\n"
        "with scipy_blas_deferred():\n"  # while deteval loads a kernel, other threads import as usual
        "    t = threading.Thread(target=lambda: seen.append(__import__('scipy').__name__))\n"
        "    t.start(); t.join()\n"
        "    try:\n"
        "        import scipy.linalg\n"
        "        raise AssertionError('imported')\n"
        "    except ImportError:\n"
        "        pass\n"
        "assert seen == ['scipy'] or 'numba.np.arraymath' in sys.modules\n"
        "assert not [f for f in sys.meta_path if type(f).__module__.startswith('deteval')], sys.meta_path\n"
    )
    pytest.importorskip("scipy")
    _run(code, tmp_path)


_EVALUATE = (  # the sample evaluated; its stats and the arrays' bytes printed
    _MA_BY_NUMPY + "import hashlib, json, sys\n"
    "import numpy as np\n"
    "import deteval\n"
    "from deteval.cli import sample_pair\n"
    "res = deteval.evaluate(*sample_pair())\n"
    "arrays = hashlib.sha256(b''.join(np.ascontiguousarray(res.arrays[k]).tobytes() for k in sorted(res.arrays)))\n"
    "print(json.dumps({'stats': {k: float(v) for k, v in res.stats.items()}, 'arrays': arrays.hexdigest()}))\n"
    "import numpy as np\n"
    "from numba.core.caching import CompileResultCacheImpl, FunctionCache\n"
    "from numba.core.typing import typeof\n"
    "from deteval import jit; from deteval.accumulation import accumulate\n"
    "from deteval.matching import coco\n"
    "kernels = accumulate.KERNELS + coco.KERNELS\n"
    "runtime = sorted(m for m in sys.modules if m.startswith('deteval._runtime.'))\n"
    "hooks = [f for f in sys.meta_path if type(f).__module__.startswith('deteval')]\n"
    "own = all(type(k._cache) is FunctionCache and type(k._cache._impl) is CompileResultCacheImpl for k in kernels)\n"
    "numba_typeof = typeof.typeof_impl.dispatch(np.ndarray).__module__ == typeof.__name__\n"
    "print(json.dumps({'runtime': runtime, 'hooks': len(hooks), 'own_cache': own, 'numba_typeof': numba_typeof,\n"
    "                  'ma_by_numpy': ma_by_numpy}))\n"
)


@pytest.mark.slow
def test_plain_numba_gives_the_same_numbers_with_no_patch_active(tmp_path):
    def run(plain: bool) -> tuple[dict, dict]:
        env = {k: v for k, v in os.environ.items() if k != "DETEVAL_PLAIN_NUMBA"}
        env["NUMBA_CACHE_DIR"] = str(tmp_path / ("plain" if plain else "patched"))
        if plain:
            env["DETEVAL_PLAIN_NUMBA"] = "1"
        out = subprocess.run([sys.executable, "-c", _EVALUATE], env=env, check=True, capture_output=True, text=True)
        numbers, state = out.stdout.strip().splitlines()[-2:]
        return json.loads(numbers), json.loads(state)

    plain_numbers, plain = run(plain=True)
    patched_numbers, patched = run(plain=False)
    assert plain_numbers == patched_numbers
    assert plain == {
        "runtime": [],
        "hooks": 0,
        "own_cache": True,
        "numba_typeof": True,
        "ma_by_numpy": plain["ma_by_numpy"],
    }
    assert not list((tmp_path / "plain").rglob("deteval-nrt-*"))  # numba's runtime helpers: numba's own way
    assert patched["hooks"] == 0 and not patched["own_cache"]
    assert patched["numba_typeof"] == patched["ma_by_numpy"]  # replaced only where it saves numpy.ma's import
    assert "deteval._runtime.kernel_cache" in patched["runtime"]


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


@pytest.mark.slow
@patched
def test_a_change_to_a_called_kernels_file_recompiles_the_caller(tmp_path):
    import shutil

    import deteval

    pkg = tmp_path / "pkg"
    shutil.copytree(Path(deteval.__file__).parent, pkg / "deteval", ignore=shutil.ignore_patterns("__pycache__"))
    code = (
        "import numpy as np\n"
        "from deteval.accumulation.accumulate import accumulate, _accumulate_kernel\n"
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


def _record(lo, hi, out, seen):
    import threading
    import time

    seen.append(threading.get_ident())
    time.sleep(0.002)  # long enough for the pool's other thread to take a chunk
    out[lo:hi] += np.arange(lo, hi)


def test_using_threads_sets_the_threads_of_the_calling_threads_kernels(monkeypatch):
    import threading

    monkeypatch.setenv("NUMBA_NUM_THREADS", "3")
    me = threading.get_ident()
    for n, chunks in ((1, 1), (2, 8)):  # one thread: the caller, one call; else 4 ranges a thread
        seen: list = []
        out = np.zeros(40, np.int64)
        with using_threads(n):
            assert num_threads() == n
            other: list = []
            t = threading.Thread(target=lambda other=other: other.append(num_threads()))
            t.start()
            t.join()
            assert other == [3]  # another thread keeps the default
            run_chunks(_record, 40, None, out, seen)
            tasks = run_tasks([lambda: threading.get_ident() for _ in range(6)])
        assert np.array_equal(out, np.arange(40))
        assert len(seen) == chunks and len(set(seen)) <= n
        assert (set(seen) == {me}) == (n == 1) and len(set(tasks)) <= n
    assert num_threads() == 3
    with using_threads(None):
        assert num_threads() == 3
    with using_threads(2), using_threads(None):  # None keeps the enclosing block's count
        assert num_threads() == 2
    with pytest.raises(ValueError):
        with using_threads(0):
            pass


def test_evaluator_num_threads_sets_its_kernels_threads_with_the_same_numbers(monkeypatch):
    from deteval import jit
    from deteval.cli import sample_pair
    from deteval.evaluator import Evaluator
    from deteval.io.coco import load_coco_gt, load_coco_results

    preds_path, gt_path = sample_pair()
    gt = load_coco_gt(gt_path)
    dets = load_coco_results(preds_path, gt)
    cat_ids = gt.categories.ids
    preds, targets = [], []
    for i in range(len(gt.images)):
        g, d = np.flatnonzero(gt.image == i), np.flatnonzero(dets.image == i)
        preds.append({"boxes": dets.boxes[d], "scores": dets.score[d], "labels": cat_ids[dets.category[d]]})
        targets.append({"boxes": gt.boxes[g], "labels": cat_ids[gt.category[g]], "area": gt.area[g],
                        "iscrowd": gt.crowd[g].astype(np.int64)})  # fmt: skip
    counts = jit.num_threads
    results = {}
    for n in (1, 2):
        used: list = []
        monkeypatch.setattr(jit, "num_threads", lambda used=used: used.append(counts()) or used[-1])
        ev = Evaluator(box_format="xywh", num_threads=n)
        ev.update(preds, targets)
        monkeypatch.setattr(jit, "num_threads", counts)
        assert used and set(used) == {n}, used  # every pool the matching asked for had n threads
        results[n] = ev.compute()
    assert results[1].stats == results[2].stats
    for key in ("precision", "recall", "scores"):
        assert np.array_equal(results[1].arrays[key], results[2].arrays[key]), key


@patched
def test_the_kernel_digest_covers_jit_every_runtime_module_and_every_kernel_module(tmp_path, monkeypatch):
    import shutil

    import deteval
    from deteval._runtime import digest

    pkg = tmp_path / "deteval"
    shutil.copytree(Path(deteval.__file__).parent, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(digest, "_PACKAGE", str(pkg))
    base = digest.kernel_sources_digest.__wrapped__()  # uncached: the copy is read each time
    runtime = sorted(f"_runtime/{p.name}" for p in (pkg / "_runtime").glob("*.py"))
    assert "_runtime/kernel_cache.py" in runtime
    for rel in ["jit.py", *runtime, "matching/groups.py"]:
        text = (pkg / rel).read_bytes()
        (pkg / rel).write_bytes(text + b"\n# changed\n")
        assert digest.kernel_sources_digest.__wrapped__() != base, rel
        (pkg / rel).write_bytes(text)
    (pkg / "errors.py").write_bytes((pkg / "errors.py").read_bytes() + b"\n# changed\n")  # no kernel there
    assert digest.kernel_sources_digest.__wrapped__() == base
