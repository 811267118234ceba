"""Ids as real writers produce them, scored as pycocotools 2.0.11 scores them (run live here), with one
DetevalWarning per form and the error under ``strict``: integral floats (numpy floats serialised as JSON),
booleans, and results mixing integer and string category ids. A null ground-truth box under box
evaluation is refused, as pycocotools refuses it."""

from __future__ import annotations

import json
import warnings

import pytest
from support.oracle import assert_same, run_pycocotools

import deteval
from deteval import DetevalWarning, InputError


def _gt(img_ids, cat_ids) -> dict:
    anns = [
        {"id": len(img_ids) * j + k + 1, "image_id": i, "category_id": c, "bbox": [10 + j, 10 + 3 * k, 30, 30],
         "area": 900.0, "iscrowd": 0}
        for k, i in enumerate(img_ids) for j, c in enumerate(cat_ids)
    ]  # fmt: skip
    return {
        "images": [{"id": i, "width": 100, "height": 100} for i in img_ids],
        "categories": [{"id": c, "name": f"c{k}"} for k, c in enumerate(cat_ids)],
        "annotations": anns,
    }


def _dets(img_ids, cat_ids) -> list:
    out = []
    for k, i in enumerate(img_ids):
        for j, c in enumerate(cat_ids):
            out.append({"image_id": i, "category_id": c, "bbox": [11 + j, 10 + 3 * k, 30, 28], "score": 0.5 + 0.01 * k})
            out.append({"image_id": i, "category_id": c, "bbox": [50, 50, 20, 20], "score": 0.3 + 0.02 * j})
    return out


CASES = {
    # name: (gt, dets, the warnings' words)
    "float ids everywhere": (_gt([1.0, 2.0, 3.0], [1.0, 2.0]), _dets([1.0, 2.0, 3.0], [1.0, 2.0]), ["fraction part"]),
    "float ids in results": (_gt([1, 2, 3], [1, 2]), _dets([1.0, 2.0, 3], [2.0, 1]), ["fraction part"]),
    "boolean ids": (_gt([False, True], [0, 1]), _dets([False, True], [True, False]), ["true/false"]),
    "mixed category ids in results": (_gt([1, 2, 3], [1, 2]), _dets([1, 2, 3], [1, "2"]), ["another kind"]),
    "mixed, string ground truth": (_gt([1, 2], ["a", "b"]), _dets([1, 2], [1, "b"]), ["another kind"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_scored_as_pycocotools_with_a_warning(name, tmp_path):
    gt, dets, words = CASES[name]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = deteval.evaluate(str(tmp_path / "dt.json"), str(tmp_path / "gt.json"))
    assert_same(res, run_pycocotools(dets, gt))
    messages = [str(w.message) for w in caught if issubclass(w.category, DetevalWarning)]
    for word in words:
        assert any(word in m for m in messages), messages
    with pytest.raises(InputError):
        deteval.evaluate(str(tmp_path / "dt.json"), str(tmp_path / "gt.json"), strict=True)


def test_fractional_and_inexact_float_ids_are_refused(tmp_path):
    for bad in (1.5, 2.0**64):
        gt = _gt([bad, 2], [1])
        with pytest.raises(InputError, match="must be an integer or a string"):
            deteval.evaluate(_dets([2], [1]), gt)


def test_a_null_box_is_refused_for_boxes_as_pycocotools_refuses_it():
    gt = _gt([1, 2], [1])
    gt["annotations"][0]["bbox"] = None
    with pytest.raises(TypeError):
        run_pycocotools(_dets([1, 2], [1]), gt)
    with pytest.raises(InputError, match=r"annotations\[0\].*bbox is null"):
        deteval.evaluate(_dets([1, 2], [1]), gt)


@pytest.mark.parametrize("with_nan", [False, True])
def test_an_integer_score_past_64_bits_scores_alike_whichever_parser_reads(with_nan, tmp_path):
    """A NaN elsewhere sends the file to the standard library's parser: the same acceptance, the same numbers."""
    gt, dets = _gt([1, 2, 3], [1, 2]), _dets([1, 2, 3], [1, 2])
    dets[0]["score"] = 2**70
    if with_nan:
        dets[3]["score"] = float("nan")
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        res = deteval.evaluate(str(tmp_path / "dt.json"), str(tmp_path / "gt.json"))
    assert_same(res, run_pycocotools(dets, gt))
