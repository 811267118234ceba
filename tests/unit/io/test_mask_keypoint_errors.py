"""Bad masks and keypoints: each rule gives an InputError "SOURCE: RECORD: RULE", before any kernel runs.

In-memory inputs are named "<ground truth>" and "<results>"; parameters by their argument
name ("kpt_sigmas", "use_cats").
"""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys

import pytest
from conftest import TESTS_DIR

import deteval
from deteval import InputError
from deteval.cli import main as cli_main

GT = "<ground truth>"
RES = "<results>"


def _gt_segm() -> dict:
    """Two 4x5 images: a polygon GT and a crowd region as uncompressed RLE."""
    return {
        "images": [{"id": 1, "height": 4, "width": 5}, {"id": 2, "height": 4, "width": 5}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {
                "id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "area": 6, "bbox": [0, 0, 3, 2],
                "segmentation": [[0, 0, 3, 0, 3, 2, 0, 2]],
            },
            {
                "id": 2, "image_id": 2, "category_id": 1, "iscrowd": 1, "area": 4, "bbox": [0, 0, 2, 2],
                "segmentation": {"size": [4, 5], "counts": [0, 2, 2, 2, 14]},
            },
        ],
    }  # fmt: skip


def _dt_segm() -> list:
    return [{"image_id": 1, "category_id": 1, "score": 0.9, "segmentation": {"size": [4, 5], "counts": "0220<"}}]


def _gt_kpts(k: int = 17) -> dict:
    return {
        "images": [{"id": 1, "height": 100, "width": 100}],
        "categories": [{"id": 1, "name": "person"}],
        "annotations": [
            {
                "id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "area": 100, "bbox": [0, 0, 10, 10],
                "num_keypoints": k, "keypoints": [5, 5, 2] * k,
            }
        ],
    }  # fmt: skip


def _dt_kpts(k: int = 17) -> list:
    return [{"image_id": 1, "category_id": 1, "score": 0.9, "keypoints": [5, 5, 1] * k}]


def _error(preds, gt, **kw) -> str:
    with pytest.raises(InputError) as info:
        deteval.evaluate(preds, gt, **kw)
    return str(info.value)


def test_valid_inputs_evaluate():
    """The fixtures themselves are fine (each test below breaks one thing)."""
    assert deteval.evaluate(_dt_segm(), _gt_segm(), iou_type="segm").stats["AP"] >= 0
    assert deteval.evaluate(_dt_kpts(), _gt_kpts(), iou_type="keypoints").stats["AP"] > 0.99


# --------------------------------------------------------------------------------------
# RLE


def test_rle_counts_not_summing_to_image_size():
    gt = _gt_segm()
    gt["annotations"][1]["segmentation"]["counts"] = [0, 2, 2, 2, 13]
    assert _error(_dt_segm(), gt, iou_type="segm") == (
        f"{GT}: annotations[1] (id=2): RLE runs sum to 19, not height*width = 4*5 = 20"
    )
    dt = _dt_segm()
    dt[0]["segmentation"]["counts"] = "0220;"  # last run 11 instead of 12
    assert (
        _error(dt, _gt_segm(), iou_type="segm") == f"{RES}: results[0]: RLE runs sum to 19, not height*width = 4*5 = 20"
    )


def test_rle_counts_summing_to_image_size_of_the_rle_not_of_the_image():
    """An RLE keeps its own size (pycocotools evaluates it, with IoU -1 against other sizes)."""
    dt = _dt_segm()
    dt[0]["segmentation"] = {"size": [2, 3], "counts": [1, 5]}
    deteval.evaluate(dt, _gt_segm(), iou_type="segm")


def test_rle_negative_run():
    gt = _gt_segm()
    gt["annotations"][1]["segmentation"]["counts"] = [0, 2, -2, 6, 14]
    assert _error(_dt_segm(), gt, iou_type="segm") == f"{GT}: annotations[1] (id=2): RLE has a negative run"
    dt = _dt_segm()
    dt[0]["segmentation"] = {"size": [1, 1], "counts": "O2"}  # 'O': 31 with the sign bit: a run of -1
    assert _error(dt, _gt_segm(), iou_type="segm") == f"{RES}: results[0]: RLE has a negative run"


@pytest.mark.parametrize(
    "counts",
    ["0220P", "0220~", "0 2", "0220\x7f"],
    ids=["dangling-continuation", "char-above-range", "space", "del"],
)
def test_malformed_compressed_rle(counts):
    dt = _dt_segm()
    dt[0]["segmentation"]["counts"] = counts
    assert _error(dt, _gt_segm(), iou_type="segm") == f"{RES}: results[0]: malformed compressed RLE string"


def test_malformed_compressed_rle_non_ascii():
    """Not read as '?' (a valid char, run 15, which would make this a valid 1x15 mask)."""
    gt = _gt_segm()
    gt["images"][0].update(height=1, width=15)
    gt["annotations"][0]["segmentation"] = {"size": [1, 15], "counts": [15]}
    dt = [{"image_id": 1, "category_id": 1, "score": 0.9, "segmentation": {"size": [1, 15], "counts": "é"}}]
    assert _error(dt, gt, iou_type="segm") == f"{RES}: results[0]: malformed compressed RLE string"


@pytest.mark.parametrize(
    "size",
    [[4], [4, 5, 1], None, "4x5", [4.0, 5], [-4, 5], [True, 5], "missing"],
    ids=["one", "three", "none", "str", "float", "negative", "bool", "missing"],
)
def test_rle_size_not_height_width(size):
    dt = _dt_segm()
    if size == "missing":
        del dt[0]["segmentation"]["size"]
        size = None
    else:
        dt[0]["segmentation"]["size"] = size
    assert _error(dt, _gt_segm(), iou_type="segm") == (
        f"{RES}: results[0]: RLE 'size' must be [height, width], got {size!r}"
    )


@pytest.mark.parametrize("counts, kind", [(3, "int"), (None, "NoneType"), ({"a": 1}, "dict")])
def test_rle_counts_wrong_type(counts, kind):
    gt = _gt_segm()
    gt["annotations"][1]["segmentation"]["counts"] = counts
    assert _error(_dt_segm(), gt, iou_type="segm") == (
        f"{GT}: annotations[1] (id=2): RLE 'counts' must be a list or a string, got {kind}"
    )


@pytest.mark.parametrize("counts", [[0.0, 2, 2, 2, 14], [0, 2, 2, 2, "14"], [False, 2, 2, 2, 14]])
def test_uncompressed_rle_counts_not_integers(counts):
    gt = _gt_segm()
    gt["annotations"][1]["segmentation"]["counts"] = counts
    assert _error(_dt_segm(), gt, iou_type="segm") == (
        f"{GT}: annotations[1] (id=2): uncompressed RLE 'counts' must be integers"
    )


RUN_TOO_LARGE = "RLE has a run beyond 2**32 - 1 (pycocotools stores uint32)"


@pytest.mark.parametrize(
    "seg",
    [
        {"size": [4, 5], "counts": [2**70, 20]},  # beyond int64
        {"size": [4, 5], "counts": [2**63 - 1, 2**63 - 1, 22]},  # the int64 sum wraps to 20 = 4*5
        {"size": [2**33, 2], "counts": [2**34]},  # sums right, does not fit uint32
        {"size": [4, 5], "counts": [2**32, 2**32 + 20]},  # sums right in uint32 arithmetic only
    ],
    ids=["int64", "int64-wrap", "above-uint32", "uint32-wrap"],
)
def test_uncompressed_rle_run_too_large(seg):
    """pycocotools' np.array(counts, dtype=np.uint32) raises OverflowError on these; nothing may wrap silently."""
    gt = _gt_segm()
    gt["annotations"][1]["segmentation"] = seg
    assert _error(_dt_segm(), gt, iou_type="segm") == f"{GT}: annotations[1] (id=2): {RUN_TOO_LARGE}"


# --------------------------------------------------------------------------------------
# polygons and segmentation types


@pytest.mark.parametrize(
    "poly, n",
    [
        ([[0, 0, 3, 0]], 4),
        ([[0, 0, 3, 0, 3]], 5),
        ([[0, 0, 3, 0, 3, 2, 1]], 7),
        ([[]], 0),
        ([[0, 0, 3, 0, 3, 2], [1, 1]], 2),
    ],
    ids=["2-points", "odd-5", "odd-7", "empty-part", "second-part-short"],
)
def test_polygon_too_few_points_or_odd_length(poly, n):
    gt = _gt_segm()
    gt["annotations"][0]["segmentation"] = poly
    assert _error(_dt_segm(), gt, iou_type="segm") == (
        f"{GT}: annotations[0] (id=1): a polygon needs at least 3 points (6 numbers, even count), got {n}"
    )


def test_polygon_list_empty():
    gt = _gt_segm()
    gt["annotations"][0]["segmentation"] = []
    assert _error(_dt_segm(), gt, iou_type="segm") == f"{GT}: annotations[0] (id=1): empty polygon list"


@pytest.mark.parametrize(
    "poly",
    [[[0, 0, "3", 0, 3, 2]], [[0, 0, None, 0, 3, 2]], [[0, 0, True, 0, 3, 2]], [0, 0, 3, 0, 3, 2]],
    ids=["str", "none", "bool", "flat-list"],
)
def test_polygon_non_numeric_coordinate(poly):
    gt = _gt_segm()
    gt["annotations"][0]["segmentation"] = poly
    assert _error(_dt_segm(), gt, iou_type="segm") == (
        f"{GT}: annotations[0] (id=1): a polygon must be a list of numbers [x1, y1, x2, y2, ...]"
    )


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_polygon_non_finite_coordinate(value):
    gt = _gt_segm()
    gt["annotations"][0]["segmentation"] = [[0, 0, value, 0, 3, 2]]
    assert (
        _error(_dt_segm(), gt, iou_type="segm") == f"{GT}: annotations[0] (id=1): a polygon has a non-finite coordinate"
    )


def test_polygon_result_non_numeric_coordinate():
    """A polygon result (bbox branch) is checked like a GT polygon, naming the result."""
    dt = [{"image_id": 1, "category_id": 1, "score": 0.9, "bbox": [0, 0, 3, 2], "segmentation": [[0, 0, "x", 0, 3, 2]]}]
    assert _error(dt, _gt_segm(), iou_type="segm") == (
        f"{RES}: results[0]: a polygon must be a list of numbers [x1, y1, x2, y2, ...]"
    )


@pytest.mark.parametrize("seg, kind", [("abc", "str"), (5, "int"), (None, "NoneType"), (2.5, "float")])
def test_segmentation_wrong_type(seg, kind):
    gt = _gt_segm()
    gt["annotations"][0]["segmentation"] = seg
    assert _error(_dt_segm(), gt, iou_type="segm") == (
        f"{GT}: annotations[0] (id=1): segmentation must be polygons or RLE, got {kind}"
    )
    dt = _dt_segm()
    dt[0]["segmentation"] = seg
    assert _error(dt, _gt_segm(), iou_type="segm") == (
        f"{RES}: results[0]: segmentation must be polygons or RLE, got {kind}"
    )


def test_segmentation_missing():
    gt = _gt_segm()
    del gt["annotations"][0]["segmentation"]
    assert _error(_dt_segm(), gt, iou_type="segm") == f"{GT}: annotations[0] (id=1): missing key 'segmentation'"


@pytest.mark.parametrize("drop", [["height"], ["width"], ["height", "width"]], ids=["h", "w", "hw"])
def test_polygon_gt_on_image_without_size(drop):
    gt = _gt_segm()
    for key in drop:
        del gt["images"][0][key]
    assert _error(_dt_segm(), gt, iou_type="segm") == (
        f"{GT}: annotations[0] (id=1): a polygon needs the image's height and width in the ground truth 'images'"
    )


def test_polygon_gt_on_image_of_size_zero_is_refused_when_strict():
    """pycocotools scores it (an empty mask: tests/parity/test_odd_inputs.py); strict refuses it."""
    gt = _gt_segm()
    gt["images"][0]["height"] = 0
    assert _error(_dt_segm(), gt, iou_type="segm", strict=True) == (
        f"{GT}: annotations[0] (id=1): a polygon on an image of size 0x5"
    )


def test_polygon_result_on_image_without_size():
    gt = _gt_segm()
    del gt["images"][1]["height"]
    dt = [{"image_id": 2, "category_id": 1, "score": 0.9, "bbox": [0, 0, 3, 2], "segmentation": [[0, 0, 3, 0, 3, 2]]}]
    assert _error(dt, gt, iou_type="segm") == (
        f"{RES}: results[0]: a polygon needs the image's height and width in the ground truth 'images'"
    )
    # an RLE GT on that image needs no size from the image
    deteval.evaluate(_dt_segm(), gt, iou_type="segm")


POLYGON_TOO_LARGE = "a polygon coordinate beyond ±1e+06 (pycocotools' rasteriser overflows)"


@pytest.mark.parametrize("value", [1e6 + 1, -1e6 - 1, 5e8, 1e300])
def test_polygon_coordinate_too_large(value):
    """(int)(x*5+.5) overflows in pycocotools' rleFrPoly near 4.3e8 (a crash); 1e7 already takes ~1.3 GB."""
    gt = _gt_segm()
    gt["annotations"][0]["segmentation"] = [[0, 0, 3, 0, value, 2]]
    assert _error(_dt_segm(), gt, iou_type="segm") == f"{GT}: annotations[0] (id=1): {POLYGON_TOO_LARGE}"
    dt = [
        {"image_id": 1, "category_id": 1, "score": 0.9, "bbox": [0, 0, 3, 2], "segmentation": [[0, 0, 3, value, 3, 2]]}
    ]
    assert _error(dt, _gt_segm(), iou_type="segm") == f"{RES}: results[0]: {POLYGON_TOO_LARGE}"


def test_polygon_coordinate_that_overflows_rasterisation_in_subprocess(tmp_path):
    """The same through the CLI in a subprocess: should the check regress, a segfault must not take pytest down."""
    gt = _gt_segm()
    gt["annotations"][0]["segmentation"] = [[0, 0, 5e8, 0, 5e8, 5e8]]
    gt_path, dt_path = tmp_path / "gt.json", tmp_path / "dt.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(_dt_segm()))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(TESTS_DIR.parent), env.get("PYTHONPATH", "")] if p)
    cmd = [sys.executable, "-m", "deteval", "--iou-type", "segm", "--quiet", str(dt_path), str(gt_path)]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 2, f"exit status {proc.returncode}; stderr: {proc.stderr[-2000:]}"
    assert proc.stderr.strip() == f"deteval: error: {gt_path}: annotations[0] (id=1): {POLYGON_TOO_LARGE}"


# --------------------------------------------------------------------------------------
# keypoints


def test_keypoints_length_not_multiple_of_three():
    gt = _gt_kpts()
    gt["annotations"][0]["keypoints"] = [5, 5, 2] * 16 + [5, 5]
    assert _error(_dt_kpts(), gt, iou_type="keypoints") == (
        f"{GT}: annotations[0] (id=1): keypoints must be a list of 3K numbers (x, y, v), "
        "as long as annotations[0]'s; got 50"
    )
    dt = _dt_kpts()
    dt[0]["keypoints"] = [5, 5, 1] * 16 + [5, 5]
    assert _error(dt, _gt_kpts(), iou_type="keypoints") == (
        f"{RES}: results[0]: keypoints must be a list of 3K numbers (x, y, v), as long as results[0]'s; got 50"
    )


def test_keypoints_lengths_differ_between_records():
    gt = _gt_kpts()
    gt["annotations"].append(dict(copy.deepcopy(gt["annotations"][0]), id=2, keypoints=[1, 1, 1] * 16))
    assert _error(_dt_kpts(), gt, iou_type="keypoints") == (
        f"{GT}: annotations[1] (id=2): keypoints must be a list of 3K numbers (x, y, v), "
        "as long as annotations[0]'s; got 48"
    )
    assert _error(_dt_kpts() + _dt_kpts(16), _gt_kpts(), iou_type="keypoints") == (
        f"{RES}: results[1]: keypoints must be a list of 3K numbers (x, y, v), as long as results[0]'s; got 48"
    )


@pytest.mark.parametrize(
    "value, shown",
    [("abc", "str"), (None, "NoneType"), (5, "int"), ({"x": 1}, "dict"), ([], "0"), ([[5, 5, 2]] * 17, "17")],
)
def test_keypoints_not_a_flat_list(value, shown):
    dt = _dt_kpts()
    dt[0]["keypoints"] = value
    assert _error(dt, _gt_kpts(), iou_type="keypoints") == (
        f"{RES}: results[0]: keypoints must be a list of 3K numbers (x, y, v), as long as results[0]'s; got {shown}"
    )


@pytest.mark.parametrize("bad", ["2", None])
def test_keypoints_non_numeric(bad):
    gt = _gt_kpts()
    gt["annotations"][0]["keypoints"] = [5, 5, bad] * 17
    msg = _error(_dt_kpts(), gt, iou_type="keypoints")
    assert msg.startswith(f"{GT}: annotations[0] (id=1): keypoints must be numeric, got [5, 5, {bad!r}")


def test_keypoints_non_finite():
    dt = _dt_kpts()
    dt[0]["keypoints"] = [5, 5, math.nan] * 17
    assert _error(dt, _gt_kpts(), iou_type="keypoints").startswith(f"{RES}: results[0]: keypoints is not finite: ")


def test_keypoints_missing():
    dt = _dt_kpts() + [{"image_id": 1, "category_id": 1, "score": 0.5, "bbox": [0, 0, 1, 1]}]
    assert _error(dt, _gt_kpts(), iou_type="keypoints") == f"{RES}: results[1]: missing key 'keypoints'"


@pytest.mark.parametrize("value", ["abc", [1, 2], {"a": 1}], ids=["str", "list", "dict"])
def test_num_keypoints_non_numeric(value):
    gt = _gt_kpts()
    gt["annotations"].append(dict(copy.deepcopy(gt["annotations"][0]), id=2))
    gt["annotations"][0]["num_keypoints"] = value
    assert _error(_dt_kpts(), gt, iou_type="keypoints") == (
        f"{GT}: annotations[0] (id=1): num_keypoints must be numeric, got {value!r}"
    )


def test_keypoint_count_not_matching_sigmas():
    assert _error(_dt_kpts(5), _gt_kpts(5), iou_type="keypoints") == (
        f"{GT}: keypoints have 5 points but there are 17 sigmas"
    )
    assert _error(_dt_kpts(16), _gt_kpts(), iou_type="keypoints") == (
        f"{RES}: keypoints have 16 points but there are 17 sigmas"
    )
    assert _error(_dt_kpts(), _gt_kpts(), iou_type="keypoints", kpt_sigmas=[0.1] * 5) == (
        f"{GT}: keypoints have 17 points but there are 5 sigmas"
    )
    # matching counts are fine
    res = deteval.evaluate(_dt_kpts(5), _gt_kpts(5), iou_type="keypoints", kpt_sigmas=[0.1] * 5)
    assert res.stats["AP"] > 0.99


@pytest.mark.parametrize(
    "sigmas",
    [[0.0] * 17, [-0.1] + [0.1] * 16, [math.nan] * 17, [math.inf] * 17, []],
    ids=["zero", "negative", "nan", "inf", "empty"],
)
def test_non_positive_sigmas(sigmas):
    assert _error(_dt_kpts(), _gt_kpts(), iou_type="keypoints", kpt_sigmas=sigmas) == (
        f"kpt_sigmas: keypoint sigmas must be positive numbers, got {[float(s) for s in sigmas]!r}"
    )


@pytest.mark.parametrize("sigmas", [["a"] * 17, [None] * 17, [{"s": 0.1}] * 17], ids=["str", "none", "dict"])
def test_non_numeric_sigmas(sigmas):
    assert _error(_dt_kpts(), _gt_kpts(), iou_type="keypoints", kpt_sigmas=sigmas) == (
        f"kpt_sigmas: keypoint sigmas must be positive numbers, got {sigmas!r}"
    )


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_sigmas_with_other_iou_type(iou_type):
    preds, gt = (_dt_segm(), _gt_segm()) if iou_type == "segm" else (_dt_kpts(), _gt_kpts())
    if iou_type == "bbox":
        preds[0]["bbox"] = [0, 0, 10, 10]
    assert _error(preds, gt, iou_type=iou_type, kpt_sigmas=[0.1] * 17) == (
        "kpt_sigmas: keypoint sigmas apply to iou_type='keypoints' only"
    )


def test_cli_sigmas_with_bbox(tmp_path, capsys):
    gt_path, dt_path = tmp_path / "gt.json", tmp_path / "dt.json"
    gt_path.write_text(json.dumps(_gt_kpts()))
    dt = _dt_kpts()
    dt[0]["bbox"] = [0, 0, 10, 10]
    dt_path.write_text(json.dumps(dt))
    rc = cli_main([str(dt_path), str(gt_path), "--iou-type", "bbox", "--kpt-sigmas", "0.1", "0.2"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.strip() == "deteval: error: --kpt-sigmas: keypoint sigmas apply to iou_type='keypoints' only"


def test_keypoints_without_categories_in_compat_mode():
    assert _error(_dt_kpts(), _gt_kpts(), iou_type="keypoints", use_cats=False) == (
        "use_cats: pycocotools cannot pool categories for keypoints (computeOks reads no ground truth); "
        "use compat=False"
    )
    res = deteval.evaluate(_dt_kpts(), _gt_kpts(), iou_type="keypoints", use_cats=False, compat=False)
    assert res.stats["AP"] > 0.99


@pytest.mark.parametrize("value", [10**20, -(10**20), 10**400])
def test_polygon_integer_coordinate_too_large_in_memory(value):
    """Python ints beyond int64 (or float64) in an in-memory dict: the same error, not a numpy TypeError."""
    gt = _gt_segm()
    gt["annotations"][0]["segmentation"] = [[0, 0, 3, 0, value, 2]]
    assert _error(_dt_segm(), gt, iou_type="segm") == f"{GT}: annotations[0] (id=1): {POLYGON_TOO_LARGE}"


@pytest.mark.parametrize("size", [1e300, 2.0**62])
def test_polygon_gt_on_an_image_too_large(size):
    """pycocotools raises OverflowError (C unsigned long); here the record and the rule are named."""
    gt = _gt_segm()
    gt["images"][0]["height"] = size
    assert _error(_dt_segm(), gt, iou_type="segm") == (
        f"{GT}: annotations[0] (id=1): the image's size {size:g}x5 is too large for a polygon"
    )
