"""The classic argsort (numpy < 1.25's introsort) against permutations numpy 1.24 made.

``tests/data/argsort_classic`` holds them, made by ``scripts/make_classic_argsort_data.py`` under numpy 1.24:
each case's scores are rebuilt here from its recipe and ``np.argsort(-scores)``'s permutation compared by its
SHA-256; the adversarial inputs that reach the heapsort fallback are stored whole. Under numpy < 1.25 (CI's
lowest-numba pass) the live test compares with ``np.argsort`` itself on random heavy-tie arrays.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from deteval.matching.argsort_classic import classic_argsort, classic_argsort_desc, classic_rank_slices

DATA = Path(__file__).resolve().parents[2] / "data" / "argsort_classic"
_spec = importlib.util.spec_from_file_location(
    "make_classic_argsort_data", Path(__file__).resolve().parents[3] / "scripts" / "make_classic_argsort_data.py"
)
maker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(maker)
CASES = json.loads((DATA / "cases.json").read_text())["cases"]
NUMPY_CLASSIC = tuple(int(p) for p in np.__version__.split(".")[:2]) < (1, 25)


def _id(case: dict) -> str:
    return f"{case['kind']}-{case['n']}"


@pytest.mark.parametrize("case", [c for c in CASES if c["kind"] != "killer"], ids=_id)
def test_stored_permutations(case: dict) -> None:
    scores = maker.inputs(case["kind"], case["n"], case["seed"])
    assert maker.digest(classic_argsort_desc(scores)) == case["sha256"]


@pytest.mark.parametrize("case", [c for c in CASES if c["kind"] == "killer"], ids=_id)
def test_stored_adversarial_permutations(case: dict) -> None:
    keys = np.load(DATA / "killers.npz")[f"n{case['n']}"].astype(np.float64)
    assert maker.digest(classic_argsort_desc(-keys)) == case["sha256"]
    assert maker.digest(classic_argsort(keys)) == case["sha256"]


def test_the_stored_cases_differ_from_a_stable_sort() -> None:
    # the data can fail the kernel: a stable order of ties does not reproduce it
    case = next(c for c in CASES if c["kind"] == "six_decimals" and c["n"] == 10_000)
    scores = maker.inputs(case["kind"], case["n"], case["seed"])
    assert maker.digest(np.argsort(-scores, kind="stable")) != case["sha256"]


def test_rank_slices_is_argsort_per_slice() -> None:
    rs = np.random.RandomState(5)
    score = rs.randint(0, 6, 500) / 5.0
    rows = rs.permutation(500).astype(np.int64)
    offsets = np.array([0, 0, 1, 40, 41, 300, 500], np.int64)
    got = rows.copy()
    classic_rank_slices(got, offsets, score)
    for a, b in zip(offsets[:-1], offsets[1:]):
        part = rows[a:b]
        assert np.array_equal(got[a:b], part[classic_argsort_desc(score[part])])


def test_wrapper_checks() -> None:
    with pytest.raises(ValueError, match="1-D"):
        classic_argsort_desc(np.zeros((2, 2)))
    assert classic_argsort_desc(np.zeros(0)).dtype == np.int64


@pytest.mark.skipif(not NUMPY_CLASSIC, reason="np.argsort is the classic introsort only under numpy < 1.25")
@pytest.mark.parametrize("seed", range(40))
def test_live_numpy_argsort(seed: int) -> None:
    rs = np.random.RandomState(seed)
    for n in (0, 1, 16, 17, 100, 1000, int(rs.randint(2, 100_000))):
        levels = int(rs.choice([1, 2, 5, 50, 1000]))
        scores = rs.randint(0, levels, n) / 7.0
        if seed % 4 == 1:
            scores[rs.random_sample(n) < 0.1] = np.nan
        if seed % 4 == 2:
            scores = np.where(rs.random_sample(n) < 0.5, -0.0, scores * 0.0)
        if seed % 4 == 3:
            scores = np.round(rs.random_sample(n), 6)
        assert np.array_equal(classic_argsort_desc(scores), np.argsort(-scores))


@pytest.mark.skipif(not NUMPY_CLASSIC, reason="np.argsort is the classic introsort only under numpy < 1.25")
def test_live_numpy_argsort_adversarial() -> None:
    for n in (100, 1000, 5000):
        keys = maker.killer(n).astype(np.float64)
        assert np.array_equal(classic_argsort_desc(-keys), np.argsort(keys))
