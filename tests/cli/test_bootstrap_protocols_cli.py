"""--bootstrap, --slices and ``deteval compare`` for the lvis, voc07 and voc10 protocols on the command line
(crowdpose, dota, openimages and the refusal of a protocol without replay: test_bootstrap_more_protocols_cli.py)."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from conftest import DATA_DIR

import deteval
from deteval.cli import main

VOC = DATA_DIR / "voc100_native"
VOC_ARGS = [str(VOC / "dets_txt"), str(VOC / "gt_xml"), "--names", str(VOC / "voc.names")]


@pytest.fixture(scope="module")
def lvis_files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lvis")
    for name in ("lvis_val_100", "dets_bbox"):
        (tmp / f"{name}.json").write_bytes(gzip.decompress((DATA_DIR / "lvis100" / f"{name}.json.gz").read_bytes()))
    return str(tmp / "dets_bbox.json"), str(tmp / "lvis_val_100.json")


@pytest.mark.parametrize("protocol", ["voc07", "voc10"])
def test_voc_bootstrap_and_slices_json_equal_the_api(tmp_path, capsys, protocol):
    out = tmp_path / "o.json"
    ids = [line.strip() for line in (VOC / "reference" / "imageset.txt").read_text().split()]
    (tmp_path / "s.json").write_text(json.dumps({"a": ids[:30], "b": ids[30:]}))
    argv = ["--protocol", protocol, *VOC_ARGS, "--bootstrap", "30", "--seed", "2", "--slices", str(tmp_path / "s.json")]
    assert main([*argv, "--json", str(out), "--bootstrap-replicates"]) == 0
    printed = capsys.readouterr().out
    assert "Bootstrap (30 replicates, seed 2)" in printed
    d = json.loads(out.read_text())
    res = deteval.evaluate(str(VOC / "dets_txt"), str(VOC / "gt_xml"), protocol=protocol, names=VOC / "voc.names",
                           slices={"a": ids[:30], "b": ids[30:]})  # fmt: skip
    api = deteval.bootstrap(res, n=30, seed=2)
    assert np.array_equal(np.array(d["bootstrap"]["replicates"]), api.replicates)
    assert d["slices"] == [{"slice": k, **v} for k, v in res.slices.items()]


def test_lvis_bootstrap_json(tmp_path, capsys, lvis_files):
    out = tmp_path / "o.json"
    assert main(["--protocol", "lvis", *lvis_files, "--bootstrap", "5", "--json", str(out)]) == 0
    d = json.loads(out.read_text())["bootstrap"]
    api = deteval.bootstrap(*lvis_files, n=5, protocol="lvis")
    assert {k: (v["low"], v["high"]) for k, v in d["intervals"].items()} == api.intervals
    assert list(d["intervals"]) == list(api.names) and "APr" in d["intervals"]
    assert main(["--protocol", "lvis", "--fixed-ap", *lvis_files, "--bootstrap", "5"]) == 2
    assert "Fixed AP" in capsys.readouterr().err


def test_compare_voc_and_lvis(tmp_path, capsys, lvis_files):
    out = tmp_path / "c.json"
    dets, gt = str(VOC / "dets_txt"), str(VOC / "gt_xml")
    argv = ["compare", dets, dets, gt, "--protocol", "voc10", "--names", str(VOC / "voc.names"), "--bootstrap", "20"]
    assert main([*argv, "--json", str(out)]) == 0
    assert "Paired bootstrap (20 replicates, seed 0)" in capsys.readouterr().out
    d = json.loads(out.read_text())
    assert {row["delta"] for row in d["stats"]} == {0.0} and {row["p_value"] for row in d["stats"]} == {1.0}
    assert main(["compare", lvis_files[0], *lvis_files, "--protocol", "lvis", "--bootstrap", "5", "--json", "-"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [row["stat"] for row in d["stats"]][-4:] == ["AR@300", "ARs@300", "ARm@300", "ARl@300"]
