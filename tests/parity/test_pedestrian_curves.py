"""Miss rate against FPPI (``--curves`` for citypersons and crowdhuman): the curves the references compute.

CrowdHuman: CrowdDet's ``eval_MR`` and ``eval_AP`` return their curves (vendored reference). CityPersons:
``accumulate``'s FPPI and recall, read from the authors' script when DETEVAL_CITYPERSONS_REF names a
checkout; always, the points of each curve reproduce the MR the parity suites check."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from support import citypersons_reference, crowddet_reference
from support.pedestrian_data import (
    citypersons_batches,
    citypersons_case,
    crowdhuman_batches,
    crowdhuman_case,
    crowdhuman_edges,
)

import deteval
from deteval import Evaluator
from deteval.analysis.curves import all_curves
from deteval.cli import main
from deteval.protocols.citypersons import log_average_miss_rate


@pytest.mark.parametrize("seed", range(8))
def test_crowdhuman_curves_are_crowddets(tmp_path, seed):
    gts, dts = crowdhuman_case(seed, n_images=[3, 10, 20][seed % 3], scale=[4, 10, 16][seed % 3])
    result = deteval.evaluate(dts, gts, protocol="crowdhuman")
    c = all_curves(result)["miss_rate_curves"]["all"]
    ref = crowddet_reference.apmr_curves(tmp_path, gts, dts)
    for key in ("fppi", "miss_rate", "recall", "precision", "score"):
        assert c[key].tolist() == ref[key], key
    assert c["MR"] == result.stats["MR"]
    assert float(np.exp(np.log(c["miss_rate_at_points"]).mean())) == result.stats["MR"]


def test_crowdhuman_edges_curves_are_crowddets(tmp_path):
    gts, dts = crowdhuman_edges()
    c = all_curves(deteval.evaluate(dts, gts, protocol="crowdhuman"))["miss_rate_curves"]["all"]
    ref = crowddet_reference.apmr_curves(tmp_path, gts, dts)
    assert all(c[k].tolist() == ref[k] for k in ("fppi", "miss_rate", "recall", "precision", "score"))


@pytest.mark.filterwarnings("ignore::deteval.DetevalWarning")
@pytest.mark.parametrize("seed", range(12))
def test_citypersons_curves_reproduce_the_mr(seed):
    gt, res = citypersons_case(seed, n_images=[3, 12, 25][seed % 3], scale=[4, 8, 16][seed % 3])
    result = deteval.evaluate(res, gt, protocol="citypersons")
    curves = all_curves(result)["miss_rate_curves"]
    for row in result.per_class:
        c = curves[row["setup"]]
        if row["MR"] == -1:
            assert c is None
            continue
        assert c["MR"] == row["MR"] == log_average_miss_rate(np.array(row["recall_at_fppi"]))
        with np.errstate(divide="ignore"):  # the reference's exp(mean(log(1 - recall))) on the stored points
            assert float(np.exp(np.mean(np.log(c["miss_rate_at_points"])))) == row["MR"]
        assert c["miss_rate_at_points"].tolist() == (1 - np.array(row["recall_at_fppi"])).tolist()
        assert np.all(np.diff(c["fppi"]) >= 0) and np.all(np.diff(c["miss_rate"]) <= 0)
        assert len(c["fppi"]) == row["ndet"]


@pytest.mark.skipif(citypersons_reference.checkout() is None, reason="set DETEVAL_CITYPERSONS_REF")
@pytest.mark.filterwarnings("ignore::deteval.DetevalWarning", "ignore:divide by zero:RuntimeWarning")
@pytest.mark.parametrize("seed", range(1, 12))
def test_citypersons_curves_are_the_scripts(tmp_path, seed):
    pytest.importorskip("scipy")
    gt, res = citypersons_case(seed, n_images=[3, 12, 25][seed % 3], scale=[4, 8, 16][seed % 3])
    if not res:
        pytest.skip("no results: the reference's loadRes reads anns[0]")
    result = deteval.evaluate(copy.deepcopy(res), copy.deepcopy(gt), protocol="citypersons")
    curves = all_curves(result)["miss_rate_curves"]
    theirs: list = []
    citypersons_reference.mr(tmp_path, copy.deepcopy(gt), copy.deepcopy(res), curves=theirs)
    for (label, c), ref in zip(curves.items(), theirs):
        if c is None or ref is None:
            assert c is None and ref is None, label
            continue
        assert c["fppi"].tolist() == ref[0].tolist(), label
        assert c["miss_rate"].tolist() == (1 - np.array(ref[1], np.float64)).tolist(), label


def test_thinned_curves_keep_the_full_curves_values():
    gts, dts = crowdhuman_case(7, n_images=20, scale=16)
    result = deteval.evaluate(dts, gts, protocol="crowdhuman")
    full = all_curves(result)["miss_rate_curves"]["all"]
    thin = all_curves(result, max_points=40)["miss_rate_curves"]["all"]
    assert len(full["fppi"]) > 40 and len(thin["fppi"]) <= 40
    idx = thin["index"]
    assert idx[0] == 0 and idx[-1] == len(full["fppi"]) - 1
    for key in ("fppi", "miss_rate", "score", "recall", "precision"):
        assert thin[key].tolist() == full[key][idx].tolist()
    assert thin["MR"] == full["MR"]


@pytest.mark.filterwarnings("ignore::deteval.DetevalWarning")
def test_streamed_results_have_the_same_curves():
    gt, res = citypersons_case(5, n_images=12, scale=8)
    for a in gt["annotations"]:
        a["id"] += 1
    ev = Evaluator("citypersons")
    for p, t in citypersons_batches(gt, res):
        ev.update([p], [t])
    a, b = all_curves(ev.compute()), all_curves(deteval.evaluate(res, gt, protocol="citypersons"))
    assert json.dumps(a, default=lambda x: x.tolist()) == json.dumps(b, default=lambda x: x.tolist())
    gts, dts = crowdhuman_case(5, n_images=10, scale=8)
    gts = sorted(gts, key=lambda g: g["ID"])
    ev = Evaluator("crowdhuman")
    for p, t in crowdhuman_batches(gts, dts):
        ev.update([p], [t])
    a, b = all_curves(ev.compute()), all_curves(deteval.evaluate(dts, gts, protocol="crowdhuman"))
    assert json.dumps(a, default=lambda x: x.tolist()) == json.dumps(b, default=lambda x: x.tolist())


def test_cli_curves(tmp_path, capsys):
    gts, dts = crowdhuman_case(3, n_images=10, scale=8)
    (tmp_path / "gt.odgt").write_text("".join(json.dumps(r) + "\n" for r in gts))
    (tmp_path / "dt.odgt").write_text("".join(json.dumps(r) + "\n" for r in dts))
    out = tmp_path / "curves.json"
    argv = ["--protocol", "crowdhuman", "--quiet", "--curves", str(out), str(tmp_path / "dt.odgt"),
            str(tmp_path / "gt.odgt")]
    assert main(argv) == 0, capsys.readouterr().err
    written = json.loads(out.read_text())
    assert written["protocol"] == "crowdhuman"
    assert written["miss_rate_curves"]["all"]["fppi"] == crowddet_reference.apmr_curves(tmp_path, gts, dts)["fppi"]
