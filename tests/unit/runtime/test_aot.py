"""Kernels compiled ahead of time (deteval._runtime.aot, aot_build): numba's numbers, numba's types, no numba imported.

The modules are built once here (the box evaluation's kernel groups, into a temporary folder) from this checkout's
sources; an installed package has its own, which CI's README pass checks (.ci/run).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from deteval._runtime import PLAIN
from deteval._runtime.aot import type_key

pytestmark = pytest.mark.skipif(PLAIN, reason="DETEVAL_PLAIN_NUMBA=1: no ahead-of-time code is called")

_GROUPS = ["coco-bbox-scan", "coco-bbox", "sort-large", "coco-report"]  # what the sample's evaluation calls


def _numbas(value) -> str | None:
    from numba import typeof

    try:
        return repr(typeof(value))
    except Exception:  # noqa: BLE001 - numba refuses the value
        return None


_ODD_VALUES = [
    0, -(2**63), 2**63 - 1, 2**63, -(2**63) - 1, 1.5, float("nan"), True, None, 1 + 2j,
    np.int8(1), np.uint64(3), np.float32(1), np.bool_(False), np.complex64(1),
    (), (1,), (1, 2), (1, 2.0), (np.zeros(2), np.zeros(2)), (np.zeros(2), np.zeros(2, np.int32)), ((1, 2), 3),
    np.zeros(2, ">f8"), np.zeros(2, "M8[s]"), np.zeros(2, object), np.zeros(2, "S3"), np.zeros(2, [("a", "i4")]),
    np.zeros(3).view(np.recarray), np.zeros((2, 2)).view(np.memmap), np.float16(1), np.zeros(2, np.float16),
    np.array(3.0), np.zeros((2, 0, 3)), np.zeros((3, 4))[:, ::2], np.zeros((3, 4)).T, np.frombuffer(b"abcd", np.uint8),
    "text", b"bytes", [1, 2], {"a": 1},
]  # fmt: skip


@pytest.mark.parametrize("value", _ODD_VALUES, ids=lambda v: type(v).__name__)
def test_type_key_is_numbas_type_or_none(value):
    """A key must never name another type than numba's: a call would reach code compiled for other types."""
    key = type_key(value)
    assert key is None or key == _numbas(value)


_NAMED = [  # what kernels take: each must get a key (else every call goes to numba)
    0, 2**63 - 1, 1.5, True, None, np.int64(1), np.float64(1), np.bool_(True), np.int32(1),
    np.zeros((2, 3)), np.zeros((2, 3)).T, np.zeros(4)[::2], np.frombuffer(b"abcd", np.uint8), np.zeros(2, np.int8),
    (np.zeros(2), np.zeros(2, np.int64)), (1, 2),
]  # fmt: skip


@pytest.mark.parametrize("value", _NAMED, ids=lambda v: type(v).__name__)
def test_type_key_names_what_kernels_take(value):
    assert type_key(value) == _numbas(value) is not None


_DTYPES = st.sampled_from([np.bool_, np.int8, np.int32, np.int64, np.uint8, np.uint32, np.float32, np.float64])


@given(
    hnp.arrays(_DTYPES, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)),
    st.integers(0, 3), st.booleans(), st.booleans(),
)  # fmt: skip
def test_type_key_of_any_array_view_is_numbas(arr, how, transpose, read_only):
    if how == 1 and arr.ndim:
        arr = arr[..., ::2]
    elif how == 2 and arr.ndim:
        arr = arr[::-1]
    elif how == 3:
        arr = np.asfortranarray(arr)
    if transpose:
        arr = arr.T
    if read_only:
        arr.flags.writeable = False
    assert type_key(arr) == _numbas(arr)


@pytest.fixture(scope="module")
def aot_dir(tmp_path_factory):
    """The modules of the groups a box evaluation of the sample calls, built from this checkout (about 30 s)."""
    pytest.importorskip("numba.pycc")
    if shutil.which(os.environ.get("CC", "cc")) is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler: numba.pycc cannot build")
    target = tmp_path_factory.mktemp("aot") / "_aot"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__import__("deteval").__file__)))
    code = f"import sys; sys.path[0] = {root!r}\nfrom deteval._runtime.aot_build import build\n"
    code += f"build(sys.argv[1], groups={_GROUPS!r})"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))}
    subprocess.run([sys.executable, "-c", code, str(target)], check=True, env=env)
    return target


_EVALUATE = (
    "import hashlib, json, sys\n"
    "import numpy as np\n"
    "import deteval\n"
    "from deteval.cli import sample_pair\n"
    "res = deteval.evaluate(*sample_pair(), iou_type='bbox')\n"
    "rows = hashlib.sha256(json.dumps(res.per_class, default=repr).encode()).hexdigest()\n"
    "arrays = hashlib.sha256(b''.join(np.ascontiguousarray(res.arrays[k]).tobytes() for k in sorted(res.arrays)))\n"
    "stats = {k: float(v) for k, v in res.stats.items()}\n"
    "print(json.dumps({'stats': stats, 'arrays': arrays.hexdigest(), 'rows': rows, 'numba': 'numba' in sys.modules}))\n"
)


def _run(code: str, tmp_path, **env) -> dict:
    full = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), **env}
    full.pop("DETEVAL_PLAIN_NUMBA", None)
    out = subprocess.run([sys.executable, "-c", code], check=True, env=full, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_sample_evaluates_without_numba_to_numbas_bits(aot_dir, tmp_path):
    ahead = _run(_EVALUATE, tmp_path, DETEVAL_AOT_DIR=str(aot_dir))
    jit = _run(_EVALUATE, tmp_path, DETEVAL_AOT="0")
    assert not ahead.pop("numba"), "numba imported: a kernel of the run had no ahead-of-time code"
    assert jit.pop("numba")
    assert ahead == jit


@pytest.mark.slow
def test_a_stale_index_is_ignored(aot_dir, tmp_path):
    stale = tmp_path / "_aot"
    shutil.copytree(aot_dir, stale)
    index = json.loads((stale / "index.json").read_text())
    index["sources"] = "0" * 64  # built from other kernel sources
    (stale / "index.json").write_text(json.dumps(index))
    result = _run(_EVALUATE, tmp_path, DETEVAL_AOT_DIR=str(stale))
    assert result["numba"]


_CALLS = (  # a kernel with ahead-of-time code, called with its recorded types and with others
    "import json, sys\n"
    "import numpy as np\n"
    "from deteval.accumulation.cumulative import cumulative_counts\n"
    "tp = np.array([True, False, True, True]); fp = ~tp; scores = np.array([0.9, 0.9, 0.5, 0.1])\n"
    "ours = [np.asarray(x).tolist() for x in cumulative_counts(tp, fp, scores, True)]\n"
    "before = 'numba' in sys.modules\n"
    "other = [np.asarray(x).tolist() for x in cumulative_counts(tp, fp, scores.astype(np.float32), True)]\n"
    "strided = [np.asarray(x).tolist() for x in cumulative_counts(np.repeat(tp, 2)[::2], fp, scores, True)]\n"
    "after = 'numba' in sys.modules\n"
    "print(json.dumps({'ours': ours, 'other': other, 'strided': strided, 'before': before, 'after': after}))\n"
)


@pytest.mark.slow
def test_other_argument_types_go_to_numba(aot_dir, tmp_path):
    ahead = _run(_CALLS, tmp_path, DETEVAL_AOT_DIR=str(aot_dir))
    jit = _run(_CALLS, tmp_path, DETEVAL_AOT="0")
    assert not ahead["before"] and ahead["after"]  # float32 scores and a strided array: numba's dispatcher
    assert {k: ahead[k] for k in ("ours", "other", "strided")} == {k: jit[k] for k in ("ours", "other", "strided")}


def test_without_a_c_compiler_the_build_says_so_and_leaves_nothing(tmp_path, monkeypatch):
    from deteval._runtime import aot_build

    monkeypatch.setattr(aot_build._pycc().platform, "external_compiler_works", lambda: False)
    with pytest.raises(RuntimeError, match="C compiler"):
        aot_build.build(str(tmp_path / "_aot"), groups=["coco-report"])
    assert not (tmp_path / "_aot").exists()  # setup.py then installs without it: numba runs the kernels


def test_a_kernel_pickles_by_name_and_takes_keywords():
    import pickle

    from deteval.accumulation.cumulative import cumulative_counts

    assert pickle.loads(pickle.dumps(cumulative_counts)) is cumulative_counts
    tp = np.array([True, False, True])
    out = cumulative_counts(tp, ~tp, np.zeros(3), group_ties=False)  # keywords: numba's dispatcher
    assert [x.tolist() for x in out] == [[1, 1, 2], [0, 1, 1], [0, 1, 2]]
