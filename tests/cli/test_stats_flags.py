"""--calibration, --cal-bins, --cal-iou-thr and --lrp: the API's figures, printed and in --json, from one evaluation."""

from __future__ import annotations

import json

import pytest
from conftest import COCO_PAIRS

import deteval
from deteval.analysis.calibration import calibration
from deteval.analysis.lrp import evaluate_with_ious, optimal_lrp
from deteval.cli import main
from deteval.result import jsonable

PAIR = COCO_PAIRS["coco_fake100"]
ARGS = [str(PAIR.dt_path), str(PAIR.gt_path)]


def test_json_holds_the_api_figures(tmp_path, capsys):
    out = tmp_path / "out.json"
    argv = [*ARGS, "--calibration", "--cal-bins", "7", "--cal-iou-thr", "0.75", "--lrp", "--json", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "Calibration (IoU=0.75, 7 bins" in printed and "Optimal LRP (IoU=0.50)" in printed
    data = json.loads(out.read_text())
    res = evaluate_with_ious(str(PAIR.dt_path), str(PAIR.gt_path))
    assert data["calibration"] == jsonable(calibration(res, 7, 0.75).to_dict())
    assert data["lrp"] == jsonable(optimal_lrp(res).to_dict())
    # keeping the match IoUs changes no other figure
    assert data["stats"] == jsonable(dict(deteval.evaluate(str(PAIR.dt_path), str(PAIR.gt_path)).stats))


@pytest.mark.parametrize(
    "extra, flag",
    [
        (["--calibration", "--cal-iou-thr", "0.42"], "--calibration"),
        (["--calibration", "--cal-bins", "0"], "--cal-bins"),  # checked before loading
        (["--lrp", "--protocol", "voc07"], "--lrp"),
        (["--lrp", "--iou-thrs", "0.75"], "--lrp"),
    ],
)
def test_misuse_names_the_flag(extra, flag, capsys):
    assert main([*ARGS, *extra, "--quiet"]) == 2
    assert flag in capsys.readouterr().err
