"""Ids as real writers produce them, scored as pycocotools 2.0.11 scores them (run live here), with one
DetevalWarning per form and the error under ``strict``: integral floats (numpy floats serialised as JSON),
booleans, results mixing integer and string category ids, and integer ids of 2**63 or more (read as
uint64). A null ground-truth box under box evaluation is refused, as pycocotools refuses it."""

from __future__ import annotations

import json
import warnings

import pytest
from support.oracle import assert_same, run_pycocotools

import deteval
from deteval import DetevalWarning, InputError
from deteval.tuning import TUNING


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


B = 2**63  # the first id past int64
TOP = 2**64 - 1  # the last id of uint64


def _big_ann_ids(gt: dict, ids: list) -> dict:
    for a, i in zip(gt["annotations"], ids):
        a["id"] = i
    return gt


CASES = {
    # name: (gt, dets, the warnings' words)
    "float ids everywhere": (_gt([1.0, 2.0, 3.0], [1.0, 2.0]), _dets([1.0, 2.0, 3.0], [1.0, 2.0]), ["fraction part"]),
    "float ids in results": (_gt([1, 2, 3], [1, 2]), _dets([1.0, 2.0, 3], [2.0, 1]), ["fraction part"]),
    "boolean ids": (_gt([False, True], [0, 1]), _dets([False, True], [True, False]), ["true/false"]),
    "mixed category ids in results": (_gt([1, 2, 3], [1, 2]), _dets([1, 2, 3], [1, "2"]), ["another kind"]),
    "mixed, string ground truth": (_gt([1, 2], ["a", "b"]), _dets([1, 2], [1, "b"]), ["another kind"]),
    # ids of 2**63 or more: Python ints to pycocotools, uint64 here
    "ids past 2**63 everywhere": (
        _big_ann_ids(_gt([TOP, B, B + 5, TOP - 1], [B + 7, TOP]), [B + k for k in range(8)]),
        _dets([TOP, B, B + 5, TOP - 1], [B + 7, TOP]),
        ["2**63 or more"],
    ),
    # beside ids below 2**63, pycocotools' np.unique makes the ids float64: ids that are float64s match
    "ids past 2**63 beside small ones": (
        _big_ann_ids(_gt([TOP - 2047, B, 5, 0], [B + 2**12, 1]), [B + k for k in range(8)]),
        _dets([TOP - 2047, B, 5, 0], [B + 2**12, 1]),
        ["2**63 or more"],
    ),
    "ids past 2**63 in the ground truth only": (
        _gt([TOP - 2047, 3, B, 2], [B + 2**11, 4]),
        _dets([3, 2], [4, 4]),
        ["2**63 or more"],
    ),  # results' int64 ids looked up among uint64 ones
    "a result category past 2**63 the ground truth lacks": (
        _gt([1, 2, 3], [1, 2]),
        _dets([1, 2, 3], [1, TOP]),
        ["2**63 or more", "not in the ground truth (18446744073709551615)"],
    ),
    # annotation id 0 (a match to it is no match in pycocotools) beside ids past 2**63, and a repeat
    "annotation ids 0, past 2**63 and repeated": (
        _big_ann_ids(_gt([1, 2, 3], [1, 2]), [0, TOP, B, TOP, B + 9, B + 2]),
        _dets([1, 2, 3], [1, 2]),
        ["2**63 or more", "repeat"],
    ),
}


@pytest.fixture(params=["general", "scanner"])
def reader(request, monkeypatch):
    """Either COCO reader: the general one, or every file offered to the byte scanner first (which declines
    integers of 19+ digits, ids past 2**63 among them, for the general reader; results with small ids beside
    a ground truth with big ones it reads)."""
    monkeypatch.setattr(TUNING, "fast_path_bytes", 0 if request.param == "scanner" else 1 << 62)
    return request.param


@pytest.mark.parametrize("name", list(CASES))
def test_scored_as_pycocotools_with_a_warning(name, reader, tmp_path):
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


@pytest.mark.parametrize(
    "ids, words",
    [
        ([2**64, 2], "outside the 64-bit range"),
        ([-(2**63) - 1, 2], "outside the 64-bit range"),
        ([B, -1], "beside negative ids"),
    ],
)
def test_ids_no_64_bit_column_holds_are_refused_in_one_line(ids, words):
    for key in ("image", "category", "annotation"):
        gt = _gt(ids if key == "image" else [1, 2], ids if key == "category" else [1, 2])
        if key == "annotation":
            _big_ann_ids(gt, ids)
        with pytest.raises(InputError, match=words) as err:
            deteval.evaluate(_dets([1, 2], [1, 2]), gt)
        assert "\n" not in str(err.value) and "pycocotools scores them" in str(err.value)


def test_ids_past_2_63_that_pycocotools_rounds_are_refused():
    """Beside small ids, pycocotools evaluates float64 ids: TOP becomes 2.0**64, which matches nothing."""
    for imgs, cats in (([TOP, 5], [1, 2]), ([1, 2], [B + 1, 2])):
        with pytest.warns(DetevalWarning, match=r"2\*\*63 or more"), pytest.raises(InputError, match="rounded by"):
            deteval.evaluate(_dets([1, 2], [1, 2]), _gt(imgs, cats))


def test_cli_keeps_ids_past_2_63_exactly_and_strict_refuses(tmp_path):
    from deteval.cli import main

    gt, dets = _gt([TOP, B], [TOP, B]), _dets([TOP, B], [TOP, B])
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    args = [str(tmp_path / "dt.json"), str(tmp_path / "gt.json"), "--quiet"]
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert main([*args, "--json", str(tmp_path / "out.json"), "--csv", str(tmp_path / "out.csv")]) == 0
    text = (tmp_path / "out.json").read_text()
    assert f'"category_id": {TOP}' in text and "e+19" not in text
    assert [c["category_id"] for c in json.loads(text)["per_class"]] == [B, TOP]
    assert (tmp_path / "out.csv").read_text().splitlines()[2].startswith(f"{TOP},")
    assert main([*args, "--strict"]) == 2


def test_slices_of_ids_past_2_63(tmp_path):
    """--slices ids past 2**63 (beside small ones: numpy alone would read that list as float64) select their
    images; a slice equals the evaluation of its images alone (pycocotools on the subset)."""
    from deteval.analysis.slices import slice_stats

    big = TOP - 2047  # a float64 exactly, as ids past 2**63 beside small ones must be
    gt, dets = _gt([big, B, 5], [B, 1]), _dets([big, B, 5], [B, 1])
    with pytest.warns(DetevalWarning, match=r"2\*\*63 or more"):
        res = deteval.evaluate(dets, gt)
    keep = {big, 5}
    sub_gt = {**gt, "images": [im for im in gt["images"] if im["id"] in keep],
              "annotations": [a for a in gt["annotations"] if a["image_id"] in keep]}  # fmt: skip
    want = run_pycocotools([d for d in dets if d["image_id"] in keep], sub_gt).stats
    got = slice_stats(res, {"s": [big, 5]})["s"]
    assert list(got.values())[: len(want)] == [float(v) for v in want]
    with pytest.raises(InputError, match="not in the ground truth"):
        slice_stats(res, {"s": [-1]})
