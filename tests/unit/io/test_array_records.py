"""Records built in memory from numpy values (ids as ``np.int64``, boxes as ndarrays, scores as ``np.float32``,
RLE counts as ``bytes``, keypoints as arrays) are read as their Python values: the same result as the plain
records, and a valid number is never refused for its type (the torch twin: test_array_records_torch.py)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import deteval
from deteval import InputError
from deteval.io.json_source import python_value, python_values

_GT = {
    "images": [{"id": 1, "height": 40, "width": 50}, {"id": 2, "height": 40, "width": 50}],
    "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
    "annotations": [
        {"id": 1, "image_id": 1, "category_id": 1, "bbox": [2, 3, 20, 10], "area": 200, "iscrowd": 0,
         "segmentation": [[2, 3, 22, 3, 22, 13, 2, 13]], "keypoints": [5, 5, 2, 9, 9, 2], "num_keypoints": 2},
        {"id": 2, "image_id": 2, "category_id": 2, "bbox": [10, 10, 30, 20], "area": 600, "iscrowd": 0,
         "segmentation": [[10, 10, 40, 10, 40, 30, 10, 30]], "keypoints": [20, 20, 2, 0, 0, 0], "num_keypoints": 1},
        {"id": 3, "image_id": 2, "category_id": 1, "bbox": [0, 0, 8, 8], "area": 64, "iscrowd": 0,
         "segmentation": [[0, 0, 8, 0, 8, 8, 0, 8]], "keypoints": [4, 4, 2, 6, 6, 2], "num_keypoints": 2},
    ],
}  # fmt: skip
_DT = [
    {"image_id": 1, "category_id": 1, "bbox": [2.5, 3, 19, 10], "score": 0.9, "keypoints": [5, 6, 1, 9, 8, 1]},
    {"image_id": 2, "category_id": 2, "bbox": [11, 10, 30, 18.5], "score": 0.75, "keypoints": [21, 20, 1, 3, 3, 1]},
    {"image_id": 2, "category_id": 1, "bbox": [1, 0, 8, 8], "score": 0.5, "keypoints": [4, 5, 1, 6, 7, 1]},
    {"image_id": 1, "category_id": 2, "bbox": [30, 20, 10, 10], "score": 0.3, "keypoints": [30, 20, 1, 0, 0, 0]},
]


def _numpy_gt(gt: dict) -> dict:
    gt = copy.deepcopy(gt)
    for im in gt["images"]:
        im.update(id=np.int64(im["id"]), height=np.int32(im["height"]), width=np.uint16(im["width"]))
    for c in gt["categories"]:
        c["id"] = np.int64(c["id"])
    for a in gt["annotations"]:
        a.update(
            id=np.int64(a["id"]), image_id=np.int32(a["image_id"]), category_id=np.uint8(a["category_id"]),
            bbox=np.array(a["bbox"], np.float64), area=np.float32(a["area"]), iscrowd=np.bool_(a["iscrowd"]),
            segmentation=[np.array(p, np.float32) for p in a["segmentation"]],
            keypoints=np.array(a["keypoints"]), num_keypoints=np.int64(a["num_keypoints"]),
        )  # fmt: skip
    return gt


def _numpy_dt(dt: list) -> list:
    out = []
    for r in copy.deepcopy(dt):
        out.append({
            "image_id": np.int64(r["image_id"]), "category_id": np.int64(r["category_id"]),
            "bbox": np.array(r["bbox"], np.float64), "score": np.float64(r["score"]),
            "keypoints": np.array(r["keypoints"], np.float64),
        })  # fmt: skip
    return out


# box results scored as masks warn (tests/parity); compared here: array records against lists
@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")
@pytest.mark.parametrize("iou_type", ["bbox", "segm", "keypoints"])
def test_numpy_records_score_as_python_records(iou_type):
    kw = {"kpt_sigmas": [0.5, 0.5]} if iou_type == "keypoints" else {}
    want = deteval.evaluate(_DT, _GT, iou_type=iou_type, **kw)
    got = deteval.evaluate(_numpy_dt(_DT), _numpy_gt(_GT), iou_type=iou_type, **kw)
    assert got.stats == want.stats
    assert np.array_equal(got.precision, want.precision)


def test_float32_scores_and_boxes_are_read_at_their_value():
    dt = _numpy_dt(_DT)
    for r in dt:
        r["score"], r["bbox"] = np.float32(r["score"]), r["bbox"].astype(np.float32)
    plain = [dict(r, score=float(r["score"]), bbox=r["bbox"].tolist()) for r in dt]
    assert deteval.evaluate(dt, _GT).stats == deteval.evaluate(plain, _GT).stats


def test_rle_counts_as_bytes_and_size_as_array():
    from pycocotools import mask as mask_utils

    pixels = np.zeros((40, 50), np.uint8, order="F")
    pixels[3:13, 2:22] = 1
    rle = mask_utils.encode(pixels)  # counts are bytes here
    plain = [{"image_id": 1, "category_id": 1, "score": 0.9, "segmentation": {"size": rle["size"],
              "counts": rle["counts"].decode()}}]  # fmt: skip
    arrays = [{"image_id": np.int64(1), "category_id": np.int64(1), "score": np.float32(0.9),
               "segmentation": {"size": np.array(rle["size"]), "counts": rle["counts"]}}]  # fmt: skip
    want = deteval.evaluate(plain, _GT, iou_type="segm")
    assert deteval.evaluate(arrays, _GT, iou_type="segm").stats == want.stats


def test_array_ids_of_strings_and_results_as_2d_rows():
    gt = copy.deepcopy(_GT)
    for im in gt["images"]:
        im["id"] = np.str_(f"img{im['id']}")
    for a in gt["annotations"]:
        a["image_id"] = f"img{a['image_id']}"
    dt = [dict(r, image_id=f"img{r['image_id']}") for r in _DT]
    assert deteval.evaluate(dt, gt).stats == deteval.evaluate(_DT, _GT).stats


def test_not_a_number_is_still_refused():
    dt = _numpy_dt(_DT)
    dt[1]["bbox"] = np.array([1, 2, 3])
    with pytest.raises(InputError, match=r"results\[1\]: bbox must be a list of 4 numbers, got \[1, 2, 3\]"):
        deteval.evaluate(dt, _GT)
    dt = _numpy_dt(_DT)
    dt[0]["image_id"] = np.float64(1.5)  # not an integer id, whatever its type (1.0 is read as 1)
    with pytest.raises(InputError, match=r"image_id must be an integer or a string, got 1.5"):
        deteval.evaluate(dt, _GT)


def test_python_values_leaves_plain_columns_alone():
    plain = [[1, 2.5, 3, 4], [5, 6, 7, 8]]
    assert python_values(plain) is plain
    nested = [[[1.0, 2.0, 3.0]], {"size": [1, 2], "counts": b"x"}]
    assert python_values(nested) is nested
    mixed = [[np.float32(1.5), 2], np.array([3, 4]), {"counts": np.array([1, 2])}, np.int8(7)]
    out = python_values(mixed)
    assert out == [[1.5, 2], [3, 4], {"counts": [1, 2]}, 7]
    assert [type(x) for x in out[0]] == [float, int] and type(out[3]) is int
    assert python_value((np.int64(1), 2)) == (1, 2)
