"""--bootstrap, --slices and ``deteval compare`` for the crowdpose, dota and openimages protocols on the
command line (each equal to the Python API); a protocol without replay refuses in one line, exit 2; the
--lrp and --tide refusals name the protocols that define them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import DATA_DIR

import deteval
from deteval import protocols
from deteval.cli import main

DOTA = DATA_DIR / "dota"
OI = DATA_DIR / "openimages"
OI_FILES = [
    str(OI / "challenge_dets.csv"),
    str(OI / "challenge_boxes.csv"),
    "--labels",
    str(OI / "challenge_labels.csv"),
]
CROWD = DATA_DIR / "crowdpose"
CROWD_FILES = [str(CROWD / "example_crowdpose_preds.json"), str(CROWD / "example_crowdpose_val.json")]

pytestmark = pytest.mark.filterwarnings("ignore:.*(self-intersecting|ignored detections)")


def _bootstrap_json(tmp_path, argv: list[str]) -> dict:
    out = tmp_path / "o.json"
    assert (
        main([*argv, "--bootstrap", "7", "--seed", "3", "--json", str(out), "--bootstrap-replicates", "--quiet"]) == 0
    )
    return json.loads(out.read_text())


@pytest.mark.slow
# the fixture's helicopter file: a class its ground truth does not name (tests/unit/protocols/test_dota.py asserts it)
@pytest.mark.filterwarnings("ignore:.*the ground truth does not name:deteval.errors.DetevalWarning")
def test_dota_bootstrap_and_slices_equal_the_api(tmp_path):
    res = deteval.evaluate(str(DOTA / "dets"), str(DOTA / "gt"), protocol="dota")
    ids = res.replay.image_ids.tolist()
    (tmp_path / "s.json").write_text(json.dumps({"a": ids[: len(ids) // 2], "b": ids[len(ids) // 2 :]}))
    d = _bootstrap_json(tmp_path, ["--protocol", "dota", str(DOTA / "dets"), str(DOTA / "gt"), "--slices",
                                   str(tmp_path / "s.json")])  # fmt: skip
    assert np.array_equal(np.array(d["bootstrap"]["replicates"]), deteval.bootstrap(res, n=7, seed=3).replicates)
    sliced = deteval.evaluate(str(DOTA / "dets"), str(DOTA / "gt"), protocol="dota", slices=json.loads(
        (tmp_path / "s.json").read_text())).slices  # fmt: skip
    assert d["slices"] == [{"slice": k, **v} for k, v in sliced.items()]


@pytest.mark.slow
def test_crowdpose_and_openimages_bootstrap_equal_the_api(tmp_path):
    d = _bootstrap_json(tmp_path, ["--protocol", "crowdpose", "--iou-type", "keypoints", *CROWD_FILES])
    api = deteval.bootstrap(*CROWD_FILES, n=7, seed=3, protocol="crowdpose", iou_type="keypoints")
    assert np.array_equal(np.array(d["bootstrap"]["replicates"]), api.replicates)
    d = _bootstrap_json(tmp_path, ["--protocol", "openimages", *OI_FILES])
    api = deteval.bootstrap(*OI_FILES[:2], n=7, seed=3, protocol="openimages", labels=OI_FILES[3])
    assert np.array_equal(np.array(d["bootstrap"]["replicates"]), api.replicates)


@pytest.mark.slow
# the fixture's helicopter file: a class its ground truth does not name (tests/unit/protocols/test_dota.py asserts it)
@pytest.mark.filterwarnings("ignore:.*the ground truth does not name:deteval.errors.DetevalWarning")
def test_compare_takes_every_registered_protocol(capsys):
    dets, gt = str(DOTA / "dets"), str(DOTA / "gt")
    assert main(["compare", dets, dets, gt, "--protocol", "dota", "--bootstrap", "9", "--json", "-"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {row["delta"] for row in d["stats"]} == {0.0} and {row["p_value"] for row in d["stats"]} == {1.0}
    a, b = CROWD_FILES[0], CROWD_FILES[1]
    assert main(["compare", a, a, b, "--protocol", "crowdpose", "--iou-type", "keypoints", "--bootstrap", "5"]) == 0
    assert "Paired bootstrap (5 replicates, seed 0)" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # argparse's choices are the registry's
        main(["compare", a, a, b, "--protocol", "nonesuch"])
    err = capsys.readouterr().err
    assert all(name in err for name in protocols.available()), err


def test_a_protocol_without_replay_refuses_in_one_line(capsys, monkeypatch):
    from deteval.protocols.base import Protocol
    from deteval.protocols.openimages import OpenImagesProtocol

    monkeypatch.setattr(OpenImagesProtocol, "replay", Protocol.replay)  # the base's: no replay
    rule = "protocol 'openimages' does not support bootstrap, compare and slices"
    assert main(["--protocol", "openimages", *OI_FILES, "--bootstrap", "5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and rule in err[0] and "--bootstrap" in err[0]
    a, b = OI_FILES[0], OI_FILES[1]
    assert main(["compare", a, a, b, "--protocol", "openimages"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"deteval: error: protocol: {rule}"]


@pytest.mark.parametrize(
    "flag, text",
    [
        ("--lrp", "optimal LRP is defined for --protocol coco, not voc07"),
        ("--tide", "TIDE is defined for --protocol coco --iou-type bbox or segm, not voc07 bbox"),
    ],
)
def test_analyses_of_another_protocol_refuse(capsys, flag, text):
    voc = DATA_DIR / "voc100_native"
    argv = ["--protocol", "voc07", str(voc / "dets_txt"), str(voc / "gt_xml"), "--names", str(voc / "voc.names")]
    assert main([*argv, flag, "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and text in err[0] and flag in err[0]
