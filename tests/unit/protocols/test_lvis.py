"""The lvis protocol's own rules: bad LVIS input, the per-image cut, the CLI, the printed summary.

Its numbers are checked against lvis-api in tests/parity/test_lvis_parity.py.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json

import numpy as np
import pytest
from support.lvis_oracle import assert_same, fixture_files, run_lvis

import deteval
from deteval.cli import main
from deteval.errors import InputError
from deteval.io.coco import load_coco_gt
from deteval.matching.federated import top_per_group


def _gt() -> dict:
    return {
        "images": [
            {"id": 1, "height": 50, "width": 50, "neg_category_ids": [2], "not_exhaustive_category_ids": []},
            {"id": 2, "height": 50, "width": 50, "neg_category_ids": [], "not_exhaustive_category_ids": [1]},
        ],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100},
            {"id": 2, "image_id": 2, "category_id": 1, "bbox": [5, 5, 10, 10], "area": 100},
        ],
        "categories": [{"id": 1, "name": "a", "frequency": "f"}, {"id": 2, "name": "b", "frequency": "r"}],
    }


_DETS = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9}]


def _error(gt, dets=_DETS) -> InputError:
    with pytest.raises(InputError) as exc:
        deteval.evaluate(dets, gt, protocol="lvis")
    return exc.value


def test_category_without_frequency():
    gt = _gt()
    del gt["categories"][1]["frequency"]
    err = _error(gt)
    assert err.source == "<ground truth>" and err.record == "categories[1] (id=2)" and "frequency" in err.rule
    gt["categories"][1]["frequency"] = "rare"
    assert "'rare'" in _error(gt).rule


def test_unknown_category_in_neg_and_not_exhaustive_lists():
    gt = _gt()
    gt["images"][1]["neg_category_ids"] = [2, 7]
    err = _error(gt)
    assert err.record == "images[1] (id=2)" and "neg_category_ids names 7" in err.rule
    gt = _gt()
    gt["images"][0]["not_exhaustive_category_ids"] = ["1"]
    err = _error(gt)
    assert err.record == "images[0] (id=1)" and "not_exhaustive_category_ids names '1'" in err.rule


def test_missing_federated_lists():
    gt = _gt()
    del gt["images"][0]["not_exhaustive_category_ids"]
    err = _error(gt)
    assert err.record == "images[0] (id=1)" and "'not_exhaustive_category_ids'" in err.rule


def test_result_on_an_image_outside_the_ground_truth(tmp_path):
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(_gt()))
    err = _error(str(path), [*_DETS, {"image_id": 9, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5}])
    assert err.source == "<results>" and "9" in str(err) and "image" in err.rule
    err = _error(str(path), [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1]}])  # no score
    assert "score" in str(err)


# a COCO file read as COCO warns of its missing iscrowd; asserted here: LVIS refuses it
@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")
def test_a_coco_ground_truth_is_refused():
    gt = load_coco_gt(_gt())
    assert "LVIS ground truth" in _error(gt).rule


def test_inputs_are_not_modified_and_loaded_containers_give_the_same():
    gt, dets = _gt(), copy.deepcopy(_DETS)
    first = deteval.evaluate(dets, gt, protocol="lvis")
    assert gt == _gt() and dets == _DETS
    preds, gt_loaded = deteval.load(dets, gt, protocol="lvis")
    again = deteval.evaluate(preds, gt_loaded, protocol="lvis")
    assert again.stats == first.stats
    assert_same(first, run_lvis(gt, dets))


def test_top_per_group_keeps_ties_in_row_order():
    image = np.array([0, 0, 0, 0, 1, 0], np.int32)
    score = np.array([0.5, 0.9, 0.5, 0.5, 0.1, 0.7])
    assert top_per_group(image, score, 3).tolist() == [True, True, False, False, True, True]
    assert top_per_group(image, score, 1).tolist() == [False, True, False, False, True, False]
    assert top_per_group(image, score, -1).all() and top_per_group(image, score, 5).all()


def test_preset_max_dets_must_be_an_integer():
    with pytest.raises(InputError, match="max_dets must be an integer"):
        deteval.evaluate(_DETS, _gt(), protocol="lvis", config={"max_dets": [1, 10]})
    with pytest.raises(InputError, match="iou_type"):
        deteval.evaluate(_DETS, _gt(), protocol="lvis", iou_type="keypoints")


@pytest.fixture(scope="module")
def lvis100(tmp_path_factory):
    return fixture_files(tmp_path_factory.mktemp("lvis100"))


def test_cli_json_keys_summary_and_frequency_column(lvis100, tmp_path, capsys):
    out = tmp_path / "out.json"
    gt, dets = lvis100["lvis_val_100"], lvis100["dets_bbox"]
    assert main(["--protocol", "lvis", "--json", str(out), "--per-class", dets, gt]) == 0
    printed = capsys.readouterr().out
    ev = run_lvis(gt, dets, "bbox")
    data = json.loads(out.read_text())
    assert list(data["stats"]) == list(ev.results)
    assert data["stats"] == {k: float(v) for k, v in ev.results.items()}
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        ev.print_results()
    assert printed.startswith(buf.getvalue())  # lvis-api's layout, line for line; then the per-class table
    assert "frequency" in printed.splitlines()[len(ev.results) + 1]
    rows = {r["category_id"]: r for r in data["per_class"]}
    freq = {c["id"]: c["frequency"] for c in json.load(open(gt))["categories"]}
    assert {k: r["frequency"] for k, r in rows.items()} == freq


def test_lvis_ground_truth_loads_without_coco_warnings(tmp_path, recwarn):
    """LVIS files carry no iscrowd and do carry the federated fields: neither is an oddity for --protocol lvis,
    while the COCO protocol warns about both."""
    files = fixture_files(tmp_path)
    deteval.evaluate(files["dets_bbox"], files["lvis_val_100"], protocol="lvis")
    assert not [w for w in recwarn if issubclass(w.category, deteval.DetevalWarning)]
    with pytest.warns(deteval.DetevalWarning, match="--protocol lvis"):
        load_coco_gt(_gt())


def test_repeated_annotation_id_is_refused():
    gt = _gt()
    gt["annotations"][1]["id"] = 1
    with pytest.raises(InputError, match=r"annotations\[1\] \(id=1\): repeats the id of annotations\[0\]"):
        deteval.evaluate(_DETS, gt, protocol="lvis")


def test_nan_score_is_refused_and_strict_reaches_the_results():
    dets = copy.deepcopy(_DETS) + [{"image_id": 2, "category_id": 1, "bbox": [5, 5, 10, 10], "score": float("nan")}]
    with pytest.warns(deteval.DetevalWarning), pytest.raises(InputError, match="score is NaN"):
        deteval.evaluate(dets, _gt(), protocol="lvis")
    dets[1]["score"] = float("inf")
    with pytest.raises(InputError, match=r"results\[1\]: score is inf"):
        deteval.evaluate(dets, _gt(), protocol="lvis", strict=True)
