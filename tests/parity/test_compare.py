"""Paired comparison (issue 20, item 2): the same resampled images for both models, self-compare gives
deltas of exactly 0 and p-value 1, and each model's replicates are its bootstrap's."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.fake100 import GT, PREDS
from support.oracle import load_json

import deteval
from deteval.cli import main


def _perturbed(seed: int) -> list:
    preds = load_json(PREDS["bbox"])
    rng = np.random.default_rng(seed)
    for d in preds:
        d["score"] = float(np.clip(d["score"] + rng.normal(0, 0.2), 0.0, 1.0))
    return preds


def test_self_compare_is_zero_with_p_one():
    res = deteval.evaluate(PREDS["bbox"], GT)
    cmp = deteval.compare(res, res, n=50, seed=3)
    assert set(cmp.delta.values()) == {0.0}
    assert all(cmp.intervals[k] == (0.0, 0.0) for k in cmp.names)
    assert set(cmp.p_values.values()) == {1.0}
    assert all(row["delta"] == 0.0 for row in cmp.per_class)


def test_replicates_are_each_models_bootstrap():
    a, b = deteval.evaluate(PREDS["bbox"], GT), deteval.evaluate(_perturbed(1), GT)
    cmp = deteval.compare(a, b, n=40, seed=9)
    assert np.array_equal(cmp.replicates_a, deteval.bootstrap(a, n=40, seed=9).replicates)
    assert np.array_equal(cmp.replicates_b, deteval.bootstrap(b, n=40, seed=9).replicates)
    assert cmp.delta["AP"] == b.stats["AP"] - a.stats["AP"] != 0
    lo, hi = cmp.intervals["AP"]
    assert lo <= hi and 0 <= cmp.p_values["AP"] <= 1
    deltas = [abs(r["delta"]) for r in cmp.per_class]
    assert deltas == sorted(deltas, reverse=True)
    # inputs, not results: the same numbers
    again = deteval.compare(str(PREDS["bbox"]), _perturbed(1), str(GT), n=40, seed=9)
    assert again.to_dict() == cmp.to_dict()


def test_compare_refuses_other_ground_truth():
    gt = load_json(GT)
    gt["images"] = gt["images"][:50]
    keep = {im["id"] for im in gt["images"]}
    gt["annotations"] = [x for x in gt["annotations"] if x["image_id"] in keep]
    other = deteval.evaluate([d for d in load_json(PREDS["bbox"]) if d["image_id"] in keep], gt)
    with pytest.raises(deteval.InputError, match="same ground truth"):
        deteval.compare(deteval.evaluate(PREDS["bbox"], GT), other, n=5)


def test_cli_compare(tmp_path, capsys):
    b_path = tmp_path / "b.json"
    b_path.write_text(json.dumps(_perturbed(2)))
    out = tmp_path / "c.json"
    argv = ["compare", str(PREDS["bbox"]), str(b_path), str(GT), "--bootstrap", "30", "--seed", "1"]
    assert main([*argv, "--json", str(out)]) == 0
    assert "Paired bootstrap (30 replicates, seed 1)" in capsys.readouterr().out
    d = json.loads(out.read_text())
    api = deteval.compare(str(PREDS["bbox"]), str(b_path), str(GT), n=30, seed=1)
    assert d == json.loads(json.dumps(api.to_dict()))
    assert main(["compare", str(PREDS["bbox"]), str(PREDS["bbox"]), str(GT), "--bootstrap", "5", "--quiet"]) == 0
