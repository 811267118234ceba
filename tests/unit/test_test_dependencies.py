"""The reference tools of pyproject's ``test`` extra import: a parity test that ``importorskip``s one
would otherwise pass silently (skipped) where the extra is incomplete, and CI would stay green."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

# distribution name in the extra -> the module the tests import
MODULES = {
    "pycocotools": "pycocotools.cocoeval",
    "scikit-learn": "sklearn.metrics",
    "tidecv": "tidecv",
    "PyYAML": "yaml",
    "lvis": "lvis",
    "hotcoco": "hotcoco",
    "hypothesis": "hypothesis",
    "pytest": "pytest",
    "ruff": "ruff",
    "pytest-xdist": "xdist",
    "scipy": "scipy.io",
    "Cython": "Cython.Build",
}
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _test_extra() -> list[str]:
    # read by hand: tomllib is Python 3.11+, and deteval supports 3.10
    block = re.search(r"^test = \[(.*?)^\]", PYPROJECT.read_text(), re.S | re.M).group(1)
    return [re.split(r"[=<>!~\[ ]", req, maxsplit=1)[0] for req in re.findall(r'"([^"]+)"', block)]


def test_every_test_dependency_is_named_here():
    assert sorted(_test_extra()) == sorted(MODULES)


@pytest.mark.parametrize("dist", sorted(MODULES))
def test_test_dependency_imports(dist):
    try:
        importlib.import_module(MODULES[dist])
    except ImportError as exc:  # numpy 2 breaks nothing at import in these versions; a missing one fails
        pytest.fail(f"{dist} (pyproject's test extra) does not import: {exc}")
