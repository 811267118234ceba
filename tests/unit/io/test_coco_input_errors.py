"""The bad-input catalog: every rule gives a clear error naming the source, the record and the rule."""

from __future__ import annotations

import copy
import json
import math
import warnings

import numpy as np
import pytest

import deteval
from deteval import InputError
from deteval.cli import main as cli_main


def _gt() -> dict:
    return {
        "images": [{"id": 1, "height": 100, "width": 100}, {"id": 2, "height": 100, "width": 100}],
        "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20], "area": 400, "iscrowd": 0},
            {"id": 2, "image_id": 2, "category_id": 2, "bbox": [0, 0, 50, 40], "area": 2000, "iscrowd": 0},
        ],
    }


def _dets() -> list:
    return [
        {"image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20], "score": 0.9},
        {"image_id": 2, "category_id": 2, "bbox": [0, 0, 40, 40], "score": 0.8},
    ]


def _write(tmp_path, name, obj) -> str:
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return str(path)


def _error(preds, gt, **kw) -> str:
    with pytest.raises(InputError) as info:
        deteval.evaluate(preds, gt, **kw)
    return str(info.value)


def test_malformed_json_names_file_and_position(tmp_path):
    gt = _write(tmp_path, "gt.json", _gt())
    preds = _write(tmp_path, "preds.json", '[{"image_id": 1,\n "score": }]')
    msg = _error(preds, gt)
    assert msg.startswith(preds) and "malformed JSON at line 2, column" in msg


def test_missing_file(tmp_path):
    msg = _error(str(tmp_path / "nope.json"), _gt())
    assert "nope.json" in msg and "not found" in msg


def test_gt_missing_list():
    gt = _gt()
    del gt["annotations"]
    assert _error(_dets(), gt) == "<ground truth>: ground truth is missing the 'annotations' list"


def test_gt_not_an_object(tmp_path):
    gt = _write(tmp_path, "gt.json", [1, 2])
    assert "ground truth must be a JSON object, got list" in _error(_dets(), gt)


@pytest.mark.parametrize("key", ["bbox", "image_id", "category_id", "id"])
def test_gt_annotation_missing_key(key):
    gt = _gt()
    del gt["annotations"][1][key]
    msg = _error(_dets(), gt)
    assert "annotations[1]" in msg and f"missing key {key!r}" in msg


@pytest.mark.parametrize("key", ["bbox", "image_id", "category_id", "score"])
def test_result_missing_key(tmp_path, key):
    dets = _dets()
    del dets[1][key]
    preds = _write(tmp_path, "preds.json", dets)
    assert _error(preds, _gt()) == f"{preds}: results[1]: missing key {key!r}"


def test_result_image_not_in_gt():
    dets = _dets()
    dets[1]["image_id"] = 999
    msg = _error(dets, _gt())
    assert msg.startswith("<results>: results[1]: image_id 999 is not an image of the ground truth")


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_score_under_strict(tmp_path, value):
    """Scored as pycocotools ranks them by default (tests/parity/test_odd_inputs.py); strict refuses them."""
    dets = _dets()
    dets[0]["score"] = value
    preds = _write(tmp_path, "preds.json", dets)  # json.dump writes NaN/Infinity literals
    rule = "score is NaN" if math.isnan(value) else f"score is {value!r}"
    assert _error(preds, _gt(), strict=True) == f"{preds}: results[0]: {rule}"


# what pycocotools scores is scored (with a warning: tests/parity/test_odd_inputs.py); strict refuses it


def test_non_finite_bbox():
    dets = _dets()
    dets[1]["bbox"] = [0, 0, math.nan, 4]
    assert "results[1]: bbox is not finite" in _error(dets, _gt(), strict=True)


def test_non_finite_gt_area():
    gt = _gt()
    gt["annotations"][0]["area"] = math.inf
    assert "annotations[0] (id=1): area is not finite" in _error(_dets(), gt, strict=True)


@pytest.mark.parametrize("bbox", [[0, 0, -1, 5], [0, 0, 5, -0.5]])
def test_negative_size(bbox):
    dets = _dets()
    dets[0]["bbox"] = bbox
    assert "results[0]: bbox has a negative width or height" in _error(dets, _gt(), strict=True)
    gt = _gt()
    gt["annotations"][1]["bbox"] = bbox
    assert "annotations[1] (id=2): bbox has a negative width or height" in _error(_dets(), gt, strict=True)


@pytest.mark.parametrize("bbox", [[0, 0, 5], [0, 0, 5, 5, 1], "0 0 5 5", None])
def test_bbox_wrong_length(bbox):
    dets = _dets()
    dets[1]["bbox"] = bbox
    assert "results[1]: bbox must be a list of 4 numbers" in _error(dets, _gt())


@pytest.mark.parametrize("score", ["0.5", None, True, [0.5]])
def test_non_numeric_score(score):
    dets = _dets()
    dets[0]["score"] = score
    assert "results[0]: score must be numeric" in _error(dets, _gt())


def test_non_numeric_bbox_entry():
    dets = _dets()
    dets[0]["bbox"] = [0, "1", 5, 5]
    assert "results[0]: bbox must be numeric" in _error(dets, _gt())


def test_duplicate_gt_annotation_ids():
    gt = _gt()
    gt["annotations"][1]["id"] = 1
    assert "annotations[1]: duplicate id 1 (also annotations[0])" in _error(_dets(), gt, strict=True)


def test_duplicate_category_ids():
    gt = _gt()
    gt["categories"][1]["id"] = 1
    assert "categories[1]: duplicate id 1 (also categories[0])" in _error(_dets(), gt)


def test_result_not_an_object():
    dets = _dets()
    dets[1] = [1, 1, 0, 0, 5, 5, 0.5]
    assert _error(dets, _gt()) == "<results>: results[1]: expected an object, got list"


def test_results_not_a_list():
    assert "results must be a JSON list of detections, got int" in _error(5, _gt())


def test_ids_mixing_ints_and_strings():
    gt = _gt()
    gt["images"][1]["id"] = "2"
    assert "images: id values mix integers and strings" in _error(_dets(), gt)


def test_float_image_id():
    dets = _dets()
    dets[0]["image_id"] = 1.5  # 1.0 is read as 1, as pycocotools matches it (tests/parity/test_id_forms.py)
    assert "results[0]: image_id must be an integer or a string, got 1.5" in _error(dets, _gt())


def test_swapped_arguments(tmp_path):
    gt = _write(tmp_path, "gt.json", _gt())
    msg = _error(gt, gt)
    assert "is this ground truth? Did you swap PREDS and GT? The order is PREDS GT" in msg


def test_compat_needs_three_max_dets():
    assert "pycocotools' summary reads 3 max-dets values" in _error(_dets(), _gt(), max_dets=[1, 10])
    res = deteval.evaluate(_dets(), _gt(), max_dets=[1, 10], compat=False)
    assert list(res.stats)[6:8] == ["AR1", "AR10"]


def test_bad_iou_threshold():
    assert "IoU thresholds must be a non-empty list in [0, 1]" in _error(_dets(), _gt(), iou_thrs=[0.5, 1.5])


def test_unknown_category_is_skipped_with_a_warning():
    dets = _dets() + [{"image_id": 1, "category_id": 77, "bbox": [0, 0, 5, 5], "score": 0.99}]
    with pytest.warns(
        deteval.DetevalWarning, match=r"skipped 1 results whose category_id is not in the ground truth \(77\)"
    ):
        res = deteval.evaluate(dets, _gt())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clean = deteval.evaluate(_dets(), _gt())
    assert np.array_equal(res.precision, clean.precision)


def test_gt_annotation_on_unlisted_image_is_dropped_with_a_warning():
    gt = _gt()
    gt["annotations"].append({"id": 9, "image_id": 5, "category_id": 1, "bbox": [0, 0, 5, 5], "area": 25, "iscrowd": 0})
    with pytest.warns(deteval.DetevalWarning, match="1 annotations name an image"):
        deteval.evaluate(_dets(), gt)


def test_empty_results_give_zero_ap_not_a_crash():
    res = deteval.evaluate([], _gt())
    # nothing was detected: AP and AR are 0 where there is ground truth (cat: area 400, small;
    # dog: area 2000, medium) and -1 where there is none, as pycocotools leaves them
    assert {k: v for k, v in res.stats.items() if v != 0.0} == {"APl": -1.0, "ARl": -1.0}
    with_gt = {(0, 0), (0, 1), (1, 0), (1, 2)}  # (category, area range: all, small, medium, large)
    for k in range(2):
        for a in range(4):
            expected = 0.0 if (k, a) in with_gt else -1.0
            assert (res.precision[:, :, k, a] == expected).all() and (res.recall[:, k, a] == expected).all()


def test_inputs_are_not_modified():
    gt, dets = _gt(), _dets()
    gt_copy, dets_copy = copy.deepcopy(gt), copy.deepcopy(dets)
    deteval.evaluate(dets, gt)
    assert gt == gt_copy and dets == dets_copy


def test_cli_reports_errors_with_exit_status_2(tmp_path, capsys):
    gt = _write(tmp_path, "gt.json", _gt())
    dets = _dets()
    dets[0]["score"] = "high"
    preds = _write(tmp_path, "preds.json", dets)
    assert cli_main([preds, gt]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"deteval: error: {preds}: results[0]: score must be numeric, got 'high'"


def test_non_numeric_image_size():
    gt = _gt()
    gt["images"][1]["height"] = "100"
    assert "images[1] (id=2): height must be numeric, got '100'" in _error(_dets(), gt)


def test_overflowing_box_area_is_inf_without_a_warning(recwarn):
    """w*h beyond float range is inf, silently, as pycocotools' Python product makes it."""
    from support.oracle import assert_same, run_pycocotools

    gt = {
        "images": [{"id": 1, "height": 10, "width": 10}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 1e200, 1e200], "iscrowd": 0, "area": 4.0},
            {"id": 2, "image_id": 1, "category_id": 1, "bbox": [0, 0, 2, 2], "iscrowd": 0, "area": 4.0},
        ],
    }
    dt = [
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 1e200, 1e200], "score": 0.5},
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 2, 2], "score": 0.4},
    ]
    res = deteval.evaluate(dt, gt)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    assert_same(res, run_pycocotools(dt, gt))
