"""Kernels compiled ahead of time after install (deteval._runtime.aot_cache, aot_background): where they go, when a
build starts, that it appears whole and is then used."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from deteval._runtime import aot_background as background
from deteval._runtime import aot_cache
from deteval._runtime.aot import INDEX


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A user cache of this test's, a package that looks installed (shipped kernels, no modules of its own) and
    a spawn that records instead of starting a build."""
    monkeypatch.setenv("DETEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DETEVAL_AOT_BACKGROUND", "1")
    monkeypatch.delenv("DETEVAL_AOT", raising=False)
    monkeypatch.delenv("DETEVAL_PLAIN_NUMBA", raising=False)
    monkeypatch.setattr(background, "PLAIN", False)
    shipped = tmp_path / "pkg" / "_kernels"
    shipped.mkdir(parents=True)
    monkeypatch.setattr(background, "built_folder", lambda name: str(tmp_path / "pkg" / name))
    spawned = []
    monkeypatch.setattr(background, "_spawn", spawned.append)
    return spawned


def test_the_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DETEVAL_CACHE_DIR", str(tmp_path / "mine"))
    assert aot_cache.cache_root() == str(tmp_path / "mine")
    monkeypatch.delenv("DETEVAL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert aot_cache.cache_root() == str(tmp_path / "xdg" / "deteval")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert aot_cache.cache_root() == str(tmp_path / "home" / ".cache" / "deteval")


def test_the_folder_names_sources_numba_python_and_machine(cache):
    from importlib.metadata import version

    from deteval._runtime.digest import kernel_sources_digest

    name = os.path.basename(aot_cache.user_folder())
    assert kernel_sources_digest() in name and f"numba{version('numba')}" in name
    assert sys.implementation.cache_tag in name


def test_one_build_starts_then_none_while_it_runs(cache):
    assert background.build_in_background()
    assert cache == [aot_cache.user_folder()]
    assert not background.build_in_background()  # the first one's lock
    assert len(cache) == 1


def test_a_stale_lock_is_taken_over(cache):
    folder = aot_cache.user_folder()
    os.makedirs(os.path.dirname(folder))
    with open(folder + ".lock", "w"):
        pass
    assert not background.build_in_background()
    old = time.time() - background.STALE_LOCK_S - 10
    os.utime(folder + ".lock", (old, old))
    assert background.build_in_background() and len(cache) == 1


def test_no_build_when_built_failed_off_or_not_installed(cache, monkeypatch, tmp_path):
    folder = aot_cache.user_folder()
    os.makedirs(folder)
    (open(os.path.join(folder, INDEX), "w")).close()
    assert not background.build_in_background()  # built
    shutil.rmtree(folder)
    with open(folder + ".failed", "w") as f:
        f.write("no working C compiler\n")
    assert not background.build_in_background()  # failed once for these sources: not again
    os.remove(folder + ".failed")
    monkeypatch.setenv("DETEVAL_AOT_BACKGROUND", "0")
    assert not background.build_in_background()
    monkeypatch.setenv("DETEVAL_AOT_BACKGROUND", "1")
    monkeypatch.setenv("DETEVAL_AOT", "0")
    assert not background.build_in_background()
    monkeypatch.delenv("DETEVAL_AOT")
    shutil.rmtree(tmp_path / "pkg" / "_kernels")  # a source tree: kernels compile on use, nothing to build after
    assert not background.build_in_background()
    os.makedirs(tmp_path / "pkg" / "_aot")
    (tmp_path / "pkg" / "_aot" / INDEX).write_text("{}")  # built into the package at install
    os.makedirs(tmp_path / "pkg" / "_kernels")
    assert not background.build_in_background()
    assert cache == []


def test_a_read_only_cache_costs_the_run_nothing(cache, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(background.os, "makedirs", refuse)
    assert not background.build_in_background()


def test_a_failed_build_leaves_a_marker_and_no_folder(tmp_path, monkeypatch):
    from deteval._runtime import aot_build

    def no_compiler(target, groups=None):
        raise RuntimeError("no working C compiler (numba.pycc needs one)")

    monkeypatch.setattr(aot_build, "build", no_compiler)
    monkeypatch.setattr(background.os, "nice", lambda n: 0)
    folder = str(tmp_path / "aot-x")
    open(folder + ".lock", "w").close()
    background.build_into(folder)
    assert not os.path.exists(folder) and not os.path.exists(folder + ".lock")
    assert "C compiler" in open(folder + ".failed").read()
    assert os.listdir(tmp_path) == ["aot-x.failed"]  # nothing built aside is left


def test_the_command_line_starts_it_after_a_run(monkeypatch, capsys):
    import deteval.cli

    calls = []
    monkeypatch.setattr(background, "build_in_background", lambda: calls.append(1) or True)
    assert deteval.cli.main(["--protocol", "coco", "--quiet", "--sample"]) == 0
    assert calls == [1]


_CALLS = (  # a kernel of the coco-report group, called with its recorded types
    "import json, sys\n"
    "import numpy as np\n"
    "from deteval._runtime import aot\n"
    "from deteval.accumulation.cumulative import cumulative_counts\n"
    "tp = np.array([True, False, True, True]); fp = ~tp; scores = np.array([0.9, 0.9, 0.5, 0.1])\n"
    "ours = [np.asarray(x).tolist() for x in cumulative_counts(tp, fp, scores, True)]\n"
    "print(json.dumps({'ours': ours, 'root': aot._root(), 'numba': 'numba' in sys.modules}))\n"
)


@pytest.mark.slow
def test_a_background_build_appears_whole_and_is_used(tmp_path):
    """The build process (one small group) fills the user folder; a later process finds it there and calls the
    kernel without numba, to numba's numbers."""
    pytest.importorskip("numba.pycc")
    if shutil.which(os.environ.get("CC", "cc")) is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler: numba.pycc cannot build")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__import__("deteval").__file__)))
    env = {**os.environ, "DETEVAL_CACHE_DIR": str(tmp_path / "cache"), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    env.pop("DETEVAL_PLAIN_NUMBA", None)
    env.pop("DETEVAL_AOT", None)
    prefix = f"import sys; sys.path[0] = {root!r}\n"
    folder = subprocess.run(
        [sys.executable, "-c", prefix + "from deteval._runtime.aot_cache import user_folder; print(user_folder())"],
        env=env, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    build = prefix + "from deteval._runtime.aot_background import build_into; build_into(sys.argv[1], ['coco-report'])"
    subprocess.run([sys.executable, "-c", build, folder], env=env, check=True)
    assert sorted(os.listdir(tmp_path / "cache")) == [os.path.basename(folder)]  # no lock, nothing aside
    assert os.path.isfile(os.path.join(folder, INDEX))

    def run(**more):
        out = subprocess.run([sys.executable, "-c", prefix + _CALLS], env={**env, **more}, check=True,
                             capture_output=True, text=True)  # fmt: skip
        return json.loads(out.stdout.strip().splitlines()[-1])

    ahead, jit = run(), run(DETEVAL_AOT="0")
    assert ahead["root"] == folder and not ahead["numba"]
    assert jit["root"] is None and jit["numba"] and jit["ours"] == ahead["ours"]
