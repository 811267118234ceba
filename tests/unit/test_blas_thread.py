"""deteval's command line gives numpy's idle BLAS thread back; a program that imports deteval is untouched."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from deteval._startup import blas_thread
from deteval._startup.blas_thread import runs_command_line

PY = "/usr/bin/python3"


@pytest.mark.parametrize(
    "argv, orig_argv, expected",
    [
        (["-m"], [PY, "-m", "deteval", "--sample"], True),
        (["-m"], [PY, "-X", "importtime", "-u", "-m", "deteval"], True),
        (["-m"], [PY, "-mdeteval"], True),
        (["-m"], [PY, "-m", "deteval.cli"], False),  # another module of the package imports it
        (["-m"], [PY, "-m", "mytool", "-m", "deteval"], False),  # a program run with -m that imports deteval
        (["-c"], [PY, "-c", "import deteval", "-m", "deteval"], False),
        (["/venv/bin/deteval", "--sample"], [PY, "/venv/bin/deteval", "--sample"], True),
        (["train.py"], [PY, "train.py"], False),
        ([], [], False),
    ],
)
def test_command_line_is_recognised(argv, orig_argv, expected):
    assert runs_command_line(argv, orig_argv) is expected


def test_one_blas_thread_asked_for_by_the_command_line_only(monkeypatch):
    monkeypatch.delitem(sys.modules, "numpy")  # as before numpy's import (restored after the test)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.setattr(sys, "argv", ["train.py"])
    blas_thread.spare_blas_thread()
    assert "OPENBLAS_NUM_THREADS" not in os.environ
    monkeypatch.setattr(sys, "argv", ["/venv/bin/deteval", "--sample"])
    blas_thread.spare_blas_thread()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")  # the user's own setting stays
    blas_thread.spare_blas_thread()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"


def test_importing_deteval_leaves_the_environment_alone():
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    code = "import os, deteval; print(os.environ.get('OPENBLAS_NUM_THREADS'))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "None"
