"""Score curves bounded to a number of points (``max_points``, the CLI's ``--curves`` default) and ``--curves-raw``.

A bounded curve is a subset of the full curve's points, values unchanged, with the first, last and
best-F points among them; ``--curves-raw`` writes what ``write_pr_curves`` always wrote.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import deteval
from deteval.analysis.curve_sampling import curve_points
from deteval.analysis.curves import all_curves, json_text
from deteval.cli import main, sample_pair
from deteval.cli.parse import CURVE_POINTS
from deteval.result import jsonable

POINTS = 10  # small enough that the sample's larger curves are cut


@pytest.fixture(scope="module")
def sample():
    return deteval.evaluate(*sample_pair())


def _pairs(full: dict, cut: dict):
    """(kind, full curve, bounded curve, index of the best point in the full curve) for every class and micro."""
    for f, c in zip([*full["classes"], full["micro"]], [*cut["classes"], cut["micro"]]):
        vs = f["vs_score"]
        best = int(np.argmax(vs["fbeta"])) if len(vs["fbeta"]) and f["npos"] else None
        yield "vs_score", vs, c["vs_score"], best
        yield "raw", f["raw"], c["raw"], None if best is None else int(vs["tp"][best] + vs["fp"][best]) - 1


def test_bounded_curves_are_subsets_with_first_last_and_best(sample):
    full = all_curves(sample)["score_curves"]
    cut = all_curves(sample, max_points=POINTS)["score_curves"]
    n_cut = 0
    for kind, f, c, best in _pairs(full, cut):
        n = len(f["precision"])
        if n <= POINTS:
            assert "index" not in c and all(np.array_equal(f[k], c[k], equal_nan=True) for k in f), kind
            continue
        n_cut += 1
        index = c["index"]
        assert len(index) <= POINTS and np.all(np.diff(index) > 0)
        assert {0, n - 1} <= set(index.tolist())
        if best is not None:
            assert best in index
        for key, values in f.items():
            assert np.array_equal(c[key], values[index], equal_nan=True), (kind, key)
    assert n_cut >= 5  # the test did cut curves


def test_best_point_is_kept_where_the_grids_miss_it():
    recall = np.linspace(0, 1, 10_000)
    keep = curve_points(recall, 4_321, 10)
    assert len(keep) <= 10 and 4_321 in keep and keep[0] == 0 and keep[-1] == 9_999


def test_no_ground_truth_is_cut_by_rank():
    keep = curve_points(np.full(1_000, np.nan), None, 50)
    assert 45 <= len(keep) <= 50 and keep[0] == 0 and keep[-1] == 999
    assert np.ptp(np.diff(keep)) <= 1  # an even grid of ranks


def test_short_curves_are_kept_whole_and_bounds_below_three_are_refused():
    assert curve_points(np.arange(5.0), 2, 5) is None
    assert curve_points(np.arange(5.0), 2, None) is None
    with pytest.raises(ValueError, match="at least 3"):
        curve_points(np.arange(5.0), 2, 2)


def test_json_text_is_json_dumps_with_indent_1():
    obj = {
        "a": np.array([1.5, np.nan, -np.inf, np.inf, 1e-300, 0.1]),
        "b": [np.int64(3), 2, None, True, 0.25],
        "c": {"empty": [], "nothing": {}, "text": "x, y: \u00e9", "nested": [[1, 2], [], [np.float32(0.5)]]},
        "d": (np.arange(3), "s", float("nan")),
        "e": np.zeros((2, 2), dtype=np.int64),
        5: math.pi,
    }
    assert json_text(obj) == json.dumps(jsonable(obj), indent=1)


def test_curves_raw_writes_every_point_as_before_and_the_default_is_bounded(sample, tmp_path):
    raw, bounded = tmp_path / "raw.json", tmp_path / "bounded.json"
    assert main(["--sample", "--quiet", "--curves", str(raw), "--curves-raw"]) == 0
    assert main(["--sample", "--quiet", "--curves", str(bounded)]) == 0
    # the text write_pr_curves wrote before curves were bounded
    assert raw.read_text() == json.dumps(jsonable(all_curves(sample)), indent=1) + "\n"
    expect = json.loads(json.dumps(jsonable(all_curves(sample, max_points=CURVE_POINTS))))
    assert json.loads(bounded.read_text()) == expect
