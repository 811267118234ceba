"""The one-line notice on stderr while a first run compiles the kernels, and its silence otherwise.

Each run is a fresh process with its own numba cache directory: an empty one compiles every kernel
(a few seconds), so the cold runs are kept to two.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import deteval
from deteval.cli import COMPILE_NOTICE

# tests of what a cold cache does: the kernels an installed package ships are ignored
pytestmark = pytest.mark.usefixtures("no_shipped_kernels")

ROOT = Path(deteval.__file__).resolve().parents[1]


def _stderr(cache: Path, *flags: str) -> str:
    env = os.environ | {"PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-m", "deteval", "--sample", *flags],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.mark.slow
def test_the_notice_is_printed_once_when_compiling_and_never_when_warm(tmp_path):
    err = _stderr(tmp_path / "cache")
    assert err.count(COMPILE_NOTICE) == 1, err
    assert err.splitlines().count(COMPILE_NOTICE) == 1  # a line of its own
    warm = _stderr(tmp_path / "cache")
    assert "compiling" not in warm, warm


@pytest.mark.slow
def test_quiet_compiles_without_the_notice(tmp_path):
    err = _stderr(tmp_path / "cache", "--quiet")
    assert err == "", err
    assert any((tmp_path / "cache").rglob("*.nbi"))  # it did compile (and cache) the kernels


def test_the_hook_is_called_once_per_registration():
    from deteval import jit

    heard = []
    jit.on_first_compile(lambda: heard.append(1))
    try:

        @jit.njit
        def add_one(x):  # not cached: compiled at each first call
            return x + 1

        assert add_one(1) == 2
        assert add_one(1.5) == 2.5  # a second compilation: not heard again
    finally:
        jit.on_first_compile(None)
    assert heard == [1]
