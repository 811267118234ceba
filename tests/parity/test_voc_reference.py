"""VOC protocols against reference numbers: voc100 (voc_eval.py logic) and toy7, from files and from the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import DATA_DIR

import deteval
from deteval.accumulation import integrators as integ
from deteval.io import voc as voc_io


def evaluate(dets, gt, protocol=None, **options):
    """The VOC protocols through the public API (``protocol`` is required: it has no VOC default)."""
    return deteval.evaluate(dets, gt, protocol=protocol, **options)

DATA = DATA_DIR
VOC = DATA / "voc100_native"
COCO = DATA / "voc100"  # the same data as COCO JSON (difficult objects as crowd)
TOY = DATA / "toy7_text"
REF = json.loads((VOC / "reference" / "voc_eval_reference.json").read_text())
KEYS = {"voc07": "voc07_11pt", "voc10": "voc10_allpt"}
IOUS = {"0.5": 0, "0.75": 1}
TOL = 1e-12

INPUTS = {
    "xml+text": lambda: voc_io.load_voc(VOC / "dets_txt", VOC / "gt_xml", names=VOC / "voc.names"),
    "xml+comp4": lambda: voc_io.load_voc(VOC / "reference" / "comp4_det_files", VOC / "gt_xml"),
    "imageset+comp4": lambda: voc_io.load_voc(
        VOC / "reference" / "comp4_det_files", VOC / "gt_xml", image_set=VOC / "reference" / "imageset.txt"
    ),
    "coco-json": lambda: (COCO / "coco_results_from_dets.json", COCO / "coco_gt_from_voc_difficult_as_crowd.json"),
}


@pytest.fixture(scope="module", params=sorted(INPUTS))
def inputs(request):
    return INPUTS[request.param]()


@pytest.mark.parametrize("protocol", ["voc07", "voc10"])
def test_voc100_reference(inputs, protocol):
    dets, gt = inputs
    res = evaluate(dets, gt, protocol=protocol, iou_thrs=[0.5, 0.75])
    for thr, t in IOUS.items():
        ref = REF[f"iou{thr}_{KEYS[protocol]}"]
        ours = {r["name"]: r[f"AP{round(float(thr) * 100)}"] for r in res.per_class}
        assert set(ours) == set(ref["per_class_AP"])
        for name, value in ref["per_class_AP"].items():
            assert abs(ours[name] - value) <= TOL, (protocol, thr, name)
        assert abs(res.stats[f"mAP{round(float(thr) * 100)}"] - ref["mAP"]) <= TOL
        assert abs(res.arrays["mAP"][t, 0] - ref["mAP"]) <= TOL
    assert res.stats["mAP"] == np.mean([res.stats["mAP50"], res.stats["mAP75"]])
    assert {r["name"]: r["npos"] for r in res.per_class} == REF["npos_non_difficult"]
    assert sum(r["ndet"] for r in res.per_class) == REF["n_dets"]


def test_voc100_one_run_several_integrators():
    # the same matches under every definition: voc11 and all_points give both reference tables
    dets, gt = INPUTS["xml+text"]()
    res = evaluate(
        dets, gt, protocol="voc10", iou_thrs=0.5, integrator=["all_points", "voc11", "coco101", "non_interpolated"]
    )
    assert abs(res.stats["mAP"] - REF["iou0.5_voc10_allpt"]["mAP"]) <= TOL
    assert abs(res.stats["mAP:voc11"] - REF["iou0.5_voc07_11pt"]["mAP"]) <= TOL
    for r in res.per_class:
        assert abs(r["AP:voc11"] - REF["iou0.5_voc07_11pt"]["per_class_AP"][r["name"]]) <= TOL
        assert r["AP:non_interpolated"] <= r["AP"] + 1e-12
    assert 0.0 < res.stats["mAP:coco101"] < 1.0


def test_voc100_counts_and_tables():
    dets, gt = INPUTS["xml+text"]()
    assert len(gt) == REF["n_gt_objects"] and int(gt.difficult.sum()) == 38
    assert len(gt.images) == REF["n_images"] and len(dets) == REF["n_dets"]
    assert gt.categories.names == voc_io.load_names(VOC / "voc.names")
    # comp4 results name the same detections
    d2, _ = INPUTS["xml+comp4"]()
    key = lambda d: sorted(zip(d.image.tolist(), d.category.tolist(), d.score.tolist(), map(tuple, d.boxes.tolist())))  # noqa: E731
    assert key(dets) == key(d2)


def test_voc100_score_scaling_invariance():
    dets, gt = INPUTS["xml+text"]()
    base = evaluate(dets, gt, protocol="voc10", iou_thrs=[0.5, 0.75])
    for factor in (0.5, 1024.0):
        scaled = type(dets)(**{**dets.__dict__, "score": dets.score * factor})
        assert evaluate(scaled, gt, protocol="voc10", iou_thrs=[0.5, 0.75]).stats == base.stats


def test_voc100_detectron2_style_mean():
    dets, gt = INPUTS["xml+text"]()
    res = evaluate(dets, gt, protocol="voc07", iou_thrs="0.5:0.95")
    assert res.params["iou_thresholds"] == [k / 100 for k in range(50, 100, 5)]
    per_t = [res.stats[f"mAP{k}"] for k in range(50, 100, 5)]
    assert res.stats["mAP"] == np.mean(per_t)
    assert abs(res.stats["mAP50"] - REF["iou0.5_voc07_11pt"]["mAP"]) <= TOL
    assert abs(res.stats["mAP75"] - REF["iou0.75_voc07_11pt"]["mAP"]) <= TOL


@pytest.mark.parametrize("protocol", ["voc07", "voc10"])
def test_cli_reproduces_reference(tmp_path, protocol, capsys):
    from deteval.cli import main

    out = tmp_path / "out.json"
    argv = ["--protocol", protocol, "--json", str(out), str(VOC / "dets_txt"), str(VOC / "gt_xml")]
    assert main(argv + ["--names", str(VOC / "voc.names")]) == 0
    assert "mAP" in capsys.readouterr().out
    data = json.loads(out.read_text())
    ref = REF[f"iou0.5_{KEYS[protocol]}"]
    assert abs(data["stats"]["mAP"] - ref["mAP"]) <= TOL
    for row in data["per_class"]:
        assert abs(row["AP"] - ref["per_class_AP"][row["name"]]) <= TOL
    out75 = tmp_path / "out75.json"
    argv75 = [
        "--protocol",
        protocol,
        "--json",
        str(out75),
        str(VOC / "reference" / "comp4_det_files"),
        str(VOC / "gt_xml"),
    ]
    assert main(argv75 + ["--iou", "0.75"]) == 0
    data = json.loads(out75.read_text())
    assert abs(data["stats"]["mAP"] - REF[f"iou0.75_{KEYS[protocol]}"]["mAP"]) <= TOL


def test_cli_input_error_names_file_and_line(tmp_path, capsys):
    from deteval.cli import main

    dets = tmp_path / "dets"
    dets.mkdir()
    (dets / "2007_000027.txt").write_text("14 0.5 1 2 3 4\n14 0.5 1 2 3\n")
    code = main(["--protocol", "voc10", str(dets), str(VOC / "gt_xml"), "--names", str(VOC / "voc.names")])
    assert code == 2
    err = capsys.readouterr().err
    assert "2007_000027.txt: line 2" in err


# --------------------------------------------------------------------------------------
# toy7: 11-point and all-point AP at four IoU thresholds (README, 10 decimals, truncated). The source
# project ranks with Python's sorted(), a stable sort: ties="item" is its order

TOY_11 = [0.3333333333, 0.2683982683, 0.0303030303, 0.0]
TOY_ALL = [0.3371980676, 0.2456866804, 0.0222222222, 0.0]


@pytest.mark.parametrize("protocol,expected", [("voc07", TOY_11), ("voc10", TOY_ALL)])
def test_toy7(protocol, expected):
    res = evaluate(TOY / "dets", TOY / "gts", protocol=protocol, iou_thrs=[0.1, 0.3, 0.5, 0.75], box_format="xywh",
                   ties="item")
    got = res.arrays["ap"][:, 0, 0]
    assert np.all(np.abs(got - np.array(expected)) < 1e-10), got


def test_toy7_expected_curve():
    exp = json.loads((TOY / "expected0_5.json").read_text())["person"]
    res = evaluate(TOY / "dets", TOY / "gts", protocol="voc10", iou_thrs=0.5, box_format="xywh", ties="item")
    order = np.argsort(res.arrays["rank"])
    o = res.arrays["outcome"][0, order]
    rec, prec, _ = integ.precision_recall(o == 1, o == 0, res.per_class[0]["npos"])
    assert len(rec) == len(exp["recall"]) == 24
    assert np.all(np.abs(rec - np.array(exp["recall"])) <= 0.005 + 1e-12)
    assert np.all(np.abs(prec - np.array(exp["precision"])) <= 0.005 + 1e-12)
    assert abs(res.stats["mAP"] - exp["ap"]) <= 0.00005
