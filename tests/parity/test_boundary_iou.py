"""Boundary IoU parity: ``iou_type="boundary"`` == the official boundary-iou-api (coco protocol) and lvis-api's
lvis_challenge_2021 branch (lvis protocol, default cut and Fixed AP), run inside the tests from their vendored
sources (tests/references/, shims in tests/support/boundary_references.py): every stat with ``==`` and the
precision, recall and scores arrays bit for bit.

Data: the fake100 COCO segm files (polygon GT, crowd regions as uncompressed RLE, compressed RLE results),
as they are and with ``ignore`` flags set on some GT; generated cases (``segm_cases``: crowd pieces, tiny
images, empty and image-sized masks, masks on the borders, results whose RLE size is not the image's, every
loadRes branch, tied scores) with ``ignore`` flags and dilation ratios from 0.005 to 1 (depths of 1 pixel to
more than the image); the lvis100 files. Both references erode with OpenCV (``cv2``).
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from conftest import DATA_DIR
from hypothesis import given, settings
from hypothesis import strategies as st
from support.examples import examples
from support.oracle import assert_same, load_json
from support.strategies import CocoCase
from support.strategies_masks import segm_cases
from support.warned import oddities_warned

import deteval
from deteval.cli import main

cv2 = pytest.importorskip("cv2")

from support.boundary_references import run_boundary_coco, run_lvis_2021  # noqa: E402 - needs cv2

FAKE100_GT = DATA_DIR / "coco_fake100" / "instances_val2014_100.json"
FAKE100_SEGM = DATA_DIR / "coco_fake100" / "instances_val2014_fakesegm100_results.json"


def _official(preds, gt, ratio=0.02, iou_thrs=None, area_ranges=None, max_dets=None, use_cats=True):
    """boundary-iou-api with the case's parameters set as pycocotools' Params hold them."""
    params = {"useCats": 1 if use_cats else 0}
    if iou_thrs is not None:
        params["iouThrs"] = np.array([float(t) for t in iou_thrs], np.float64)
    if area_ranges is not None:
        params["areaRng"] = [[lo, hi] for lo, hi in area_ranges.values()]
        params["areaRngLbl"] = list(area_ranges)
    if max_dets is not None:
        params["maxDets"] = [int(m) for m in max_dets]
    return run_boundary_coco(preds, gt, ratio, **params)


def _with_ignore(gt: dict, every: int) -> dict:
    """``gt`` with ``ignore: 1`` on every ``every``-th annotation and ``ignore: 0`` on the next one."""
    gt = copy.deepcopy(gt)
    for i, ann in enumerate(gt["annotations"]):
        if i % every == 0:
            ann["ignore"] = 1
        elif i % every == 1:
            ann["ignore"] = 0
    return gt


@pytest.fixture(scope="module")
def fake100():
    return load_json(FAKE100_SEGM), load_json(FAKE100_GT)


@pytest.mark.parametrize(
    "ratio", [0.02, pytest.param(0.005, marks=pytest.mark.slow), pytest.param(0.1, marks=pytest.mark.slow)]
)
def test_fake100_equals_boundary_iou_api(fake100, ratio):
    preds, gt = fake100
    expected = _official(preds, gt, ratio)
    res = deteval.evaluate(copy.deepcopy(preds), copy.deepcopy(gt), protocol="coco", iou_type="boundary",
                           dilation_ratio=ratio)  # fmt: skip
    assert_same(res, expected)
    assert res.params["dilation_ratio"] == ratio
    segm = deteval.evaluate(copy.deepcopy(preds), copy.deepcopy(gt), protocol="coco", iou_type="segm")
    assert res.stats["AP"] < segm.stats["AP"]  # boundaries are stricter than masks: the test can fail


@pytest.mark.slow
def test_fake100_ignore_flags_are_honoured(fake100):
    """The official rule: a GT with ``ignore`` set is ignored (pip pycocotools overwrites it with iscrowd)."""
    preds, gt = fake100
    gt = _with_ignore(gt, 5)
    expected = _official(preds, gt)
    res = deteval.evaluate(copy.deepcopy(preds), gt, protocol="coco", iou_type="boundary")
    assert_same(res, expected)
    plain = deteval.evaluate(copy.deepcopy(preds), _with_ignore(load_json(FAKE100_GT), 10**9), protocol="coco",
                             iou_type="boundary")  # fmt: skip
    assert plain.stats["AP"] != res.stats["AP"]


@pytest.mark.slow
def test_fake100_cli(fake100, tmp_path):
    preds, gt = fake100
    out = tmp_path / "out.json"
    code = main(["--protocol", "coco", "--iou-type", "boundary", "--dilation-ratio", "0.05", "--json", str(out),
                 str(FAKE100_SEGM), str(FAKE100_GT)])  # fmt: skip
    assert code == 0
    stats = json.loads(out.read_text())["stats"]
    assert list(stats.values()) == [float(s) for s in _official(preds, gt, 0.05).stats]


@st.composite
def boundary_cases(draw):
    """``segm_cases`` with ``ignore`` flags on some GT, sometimes an image-sized GT and result, and a ratio."""
    case = draw(segm_cases(zero_runs=draw(st.booleans())))
    gt = case.gt
    p_ignore = draw(st.sampled_from([0.0, 0.2, 0.5]))
    for ann in gt["annotations"]:
        if draw(st.floats(0, 1)) < p_ignore:
            ann["ignore"] = draw(st.sampled_from([1, 0, True, False]))
    if draw(st.integers(0, 3)) == 0:  # a whole-image mask in GT and results: its boundary is the image's frame
        img = draw(st.sampled_from(gt["images"]))
        full = {"size": [img["height"], img["width"]], "counts": [0, img["height"] * img["width"]]}
        cat = gt["categories"][0]["id"]
        ann_id = max([a["id"] for a in gt["annotations"]], default=0) + 1
        area = float(img["height"] * img["width"])
        gt["annotations"].append({"id": ann_id, "image_id": img["id"], "category_id": cat, "segmentation": full,
                                  "area": area, "bbox": [0.0, 0.0, float(img["width"]), float(img["height"])],
                                  "iscrowd": 0})  # fmt: skip
        from pycocotools import mask as mask_utils

        seg = mask_utils.frPyObjects(full, img["height"], img["width"])
        seg = {"size": seg["size"], "counts": seg["counts"].decode()}
        pred = {"image_id": img["id"], "category_id": cat, "segmentation": seg, "score": 0.5}
        if "bbox" in case.preds[0]:
            pred["bbox"] = [0.0, 0.0, float(img["width"]), float(img["height"])]
        case.preds.append(pred)
    ratio = draw(st.sampled_from([0.02, 0.02, 0.005, 0.05, 0.1, 0.3, 1.0]))
    return case, ratio


@settings(max_examples=examples(150))
@given(boundary_cases())
def test_generated_equals_boundary_iou_api(drawn):
    case, ratio = drawn
    assert isinstance(case, CocoCase)
    gt_before, preds_before = copy.deepcopy(case.gt), copy.deepcopy(case.preds)
    expected = _official(case.preds, case.gt, ratio, **case.kwargs())
    with oddities_warned():  # generated results may lack a segmentation: scored as the reference scores them
        res = deteval.evaluate(case.preds, case.gt, protocol="coco", iou_type="boundary", compat=True,
                               dilation_ratio=ratio, **case.kwargs())  # fmt: skip
    assert case.gt == gt_before and case.preds == preds_before, "inputs were modified"
    assert_same(res, expected)


# ---- lvis: lvis-api's lvis_challenge_2021 branch


@pytest.fixture(scope="module")
def lvis100(tmp_path_factory):
    from support.lvis_oracle import fixture_files

    return fixture_files(tmp_path_factory.mktemp("lvis100"))


def _assert_same_lvis(res, ev) -> None:
    assert list(res.stats) == list(ev.results), (list(res.stats), list(ev.results))
    for key, value in ev.results.items():
        assert res.stats[key] == value, (key, res.stats[key], value)
    assert np.array_equal(res.precision[..., 0], ev.eval["precision"])
    assert np.array_equal(res.recall[..., 0], ev.eval["recall"])


@pytest.mark.slow
@pytest.mark.parametrize("fixed_ap", [False, True], ids=["default", "fixed-ap"])
def test_lvis100_equals_the_2021_branch(lvis100, fixed_ap):
    gt, dets = lvis100["lvis_val_100"], lvis100["dets_segm"]
    ev = run_lvis_2021(gt, dets, fixed_ap=fixed_ap)
    res = deteval.evaluate(dets, gt, protocol="lvis", iou_type="boundary", fixed_ap=fixed_ap)
    _assert_same_lvis(res, ev)
    segm = deteval.evaluate(dets, gt, protocol="lvis", iou_type="segm", fixed_ap=fixed_ap)
    assert res.stats["AP"] < segm.stats["AP"]


def test_dilation_ratio_is_checked():
    from deteval.errors import InputError

    for bad in (0, -0.1, 1.5, "x", True):
        with pytest.raises(InputError, match="dilation_ratio"):
            deteval.protocols.get("coco").params("boundary", dilation_ratio=bad)
    with pytest.raises(InputError, match="boundary"):
        deteval.protocols.get("coco").params("segm", dilation_ratio=0.02)
    with pytest.raises(InputError, match="boundary"):
        deteval.protocols.get("lvis").params("bbox", dilation_ratio=0.02)
    assert deteval.protocols.get("coco").params("boundary").dilation_ratio == 0.02
    assert deteval.protocols.get("lvis").params("boundary", dilation_ratio=0.1).dilation_ratio == 0.1
