"""--bootstrap, --slices and --slice-by on the command line (issue 20, items 1 and 4)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.fake100 import GT, PREDS

import deteval
from deteval.cli import main


def test_bootstrap_json_equals_the_api(tmp_path, capsys):
    out = tmp_path / "o.json"
    argv = [str(PREDS["bbox"]), str(GT), "--bootstrap", "20", "--seed", "4", "--level", "0.9"]
    assert main([*argv, "--json", str(out), "--bootstrap-replicates"]) == 0
    printed = capsys.readouterr().out
    assert "Bootstrap (20 replicates, seed 4): 90% percentile intervals" in printed
    d = json.loads(out.read_text())["bootstrap"]
    api = deteval.bootstrap(str(PREDS["bbox"]), str(GT), n=20, seed=4, level=0.9)
    assert np.array_equal(np.array(d["replicates"]), api.replicates)
    assert {k: (v["low"], v["high"]) for k, v in d["intervals"].items()} == api.intervals
    assert main([*argv, "--json", str(out), "--quiet"]) == 0
    assert "replicates" not in json.loads(out.read_text())["bootstrap"]


def test_slices_file_and_slice_by(tmp_path, capsys):
    gt = json.loads(GT.read_text())
    for i, im in enumerate(gt["images"]):
        im["weather"] = "sun" if i % 2 else "rain"
    gt_path = tmp_path / "gt.json"
    gt_path.write_text(json.dumps(gt))
    ids = [im["id"] for im in gt["images"]]
    slices = {"rain": ids[0::2], "sun": ids[1::2]}
    (tmp_path / "s.json").write_text(json.dumps(slices))
    rows = []
    for flags in (["--slices", str(tmp_path / "s.json")], ["--slice-by", "weather"]):
        out = tmp_path / "o.json"
        assert main([str(PREDS["bbox"]), str(gt_path), *flags, "--json", str(out)]) == 0
        assert "slice" in capsys.readouterr().out
        rows.append(json.loads(out.read_text())["slices"])
    assert rows[0] == rows[1]
    api = deteval.evaluate(PREDS["bbox"], gt_path, slices=slices)
    assert rows[0] == [{"slice": k, **v} for k, v in api.slices.items()]


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--bootstrap", "0"], "at least 1"),
        (["--bootstrap", "5", "--level", "1.5"], "between 0 and 1"),
    ],
)
def test_bad_flags(flags, message, capsys):
    with pytest.raises(SystemExit):
        main([str(PREDS["bbox"]), str(GT), *flags])
    assert message in capsys.readouterr().err


def test_bad_slices_file(tmp_path, capsys):
    (tmp_path / "s.json").write_text('{"a": [999999999]}')
    assert main([str(PREDS["bbox"]), str(GT), "--slices", str(tmp_path / "s.json")]) == 2
    assert "not in the ground truth" in capsys.readouterr().err
    assert main([str(PREDS["bbox"]), str(GT), "--slice-by", "nothing"]) == 2
    assert "no image record" in capsys.readouterr().err
