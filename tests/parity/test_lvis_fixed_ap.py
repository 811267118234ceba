"""Fixed AP parity: deteval's ``--fixed-ap`` (and other per-category caps) == lvis-api's lvis_challenge_2021
branch, on the lvis100 files: every stat with ``==``, the printed lines, and the precision and recall arrays
(their SHA-256: the branch is no release, so its numbers are stored, made by
tests/data/lvis100/make_fixed_ap_expected.py, whose docstring gives the command).
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from support.lvis_oracle import DATA, fixture_files

import deteval
from deteval.cli import main

EXPECTED = json.loads((DATA / "fixed_ap_expected.json").read_text())


@pytest.fixture(scope="module")
def lvis100(tmp_path_factory):
    return fixture_files(tmp_path_factory.mktemp("lvis100"))


def _sha(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, np.float64).tobytes()).hexdigest()


@pytest.mark.parametrize("case", EXPECTED["cases"], ids=lambda c: f"{c['iou_type']}-{c['max_dets_per_cat']}")
def test_fixed_ap_matches_the_2021_branch(lvis100, case):
    gt, dets = lvis100["lvis_val_100"], lvis100[f"dets_{case['iou_type']}"]
    cap = case["max_dets_per_cat"]
    if cap == 10000:
        res = deteval.evaluate(dets, gt, protocol="lvis", iou_type=case["iou_type"], fixed_ap=True)
    else:
        config = {"max_dets": -1, "max_dets_per_cat": cap}
        res = deteval.evaluate(dets, gt, protocol="lvis", iou_type=case["iou_type"], config=config)
    assert res.stats == case["results"] and list(res.stats) == list(case["results"])
    assert res.summary_lines == case["printed"]
    assert _sha(res.precision[..., 0]) == case["precision_sha256"]
    assert _sha(res.recall[..., 0]) == case["recall_sha256"]


def test_fixed_ap_differs_from_the_default_cut_and_the_cli_takes_it(lvis100, tmp_path, capsys):
    gt, dets = lvis100["lvis_val_100"], lvis100["dets_bbox"]
    out = tmp_path / "out.json"
    assert main(["--protocol", "lvis", "--fixed-ap", "--json", str(out), dets, gt]) == 0
    stats = json.loads(out.read_text())["stats"]
    expected = next(c for c in EXPECTED["cases"] if c["iou_type"] == "bbox" and c["max_dets_per_cat"] == 10000)
    assert stats == expected["results"]
    assert capsys.readouterr().out.splitlines()[: len(stats)] == expected["printed"]
    default = deteval.evaluate(dets, gt, protocol="lvis").stats
    assert default["AP"] != stats["AP"]  # six images hold more than 300 results: the cuts differ
