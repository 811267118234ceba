"""Records built from torch tensors (0-d ids and scores, 1-d boxes and keypoints, polygons) are read as their
Python values, as numpy's are (test_array_records.py); the io layer never imports torch itself."""

from __future__ import annotations

import copy
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from test_array_records import _DT, _GT  # noqa: E402

import deteval  # noqa: E402
from deteval.io.json_source import python_values  # noqa: E402


def _torch_gt(gt: dict) -> dict:
    gt = copy.deepcopy(gt)
    for im in gt["images"]:
        im.update(id=torch.tensor(im["id"]), height=torch.tensor(im["height"]), width=torch.tensor(im["width"]))
    for a in gt["annotations"]:
        a.update(
            id=torch.tensor(a["id"]), image_id=torch.tensor(a["image_id"], dtype=torch.int32),
            category_id=torch.tensor(a["category_id"]), bbox=torch.tensor(a["bbox"], dtype=torch.float64),
            area=torch.tensor(float(a["area"])), iscrowd=torch.tensor(a["iscrowd"]),
            segmentation=[torch.tensor(p, dtype=torch.float64) for p in a["segmentation"]],
            keypoints=torch.tensor(a["keypoints"]),
        )  # fmt: skip
    return gt


def _torch_dt(dt: list, score_dtype=torch.float64) -> list:
    return [
        {
            "image_id": torch.tensor(r["image_id"]), "category_id": torch.tensor(r["category_id"]),
            "bbox": torch.tensor(r["bbox"], dtype=torch.float64), "score": torch.tensor(r["score"], dtype=score_dtype),
            "keypoints": torch.tensor(r["keypoints"], dtype=torch.float64),
        }
        for r in dt
    ]  # fmt: skip


# box results scored as masks warn (tests/parity); compared here: tensors against lists
@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")
@pytest.mark.parametrize("iou_type", ["bbox", "segm", "keypoints"])
def test_tensor_records_score_as_python_records(iou_type):
    kw = {"kpt_sigmas": [0.5, 0.5]} if iou_type == "keypoints" else {}
    want = deteval.evaluate(_DT, _GT, iou_type=iou_type, **kw)
    got = deteval.evaluate(_torch_dt(_DT), _torch_gt(_GT), iou_type=iou_type, **kw)
    assert got.stats == want.stats
    assert np.array_equal(got.precision, want.precision)


def test_float32_tensor_scores_are_their_float32_value():
    dt = _torch_dt(_DT, torch.float32)
    plain = [dict(r, score=float(np.float32(r["score"]))) for r in _DT]
    assert deteval.evaluate(dt, _GT).stats == deteval.evaluate(plain, _GT).stats


def test_python_values_of_tensors():
    out = python_values([torch.tensor(3), torch.tensor([1.5, 2.0]), [torch.tensor(1), 2]])
    assert out == [3, [1.5, 2.0], [1, 2]] and type(out[0]) is int


def test_the_io_layer_never_imports_torch():
    code = (
        "import sys, numpy as np; import deteval; "
        "deteval.evaluate([{'image_id': np.int64(1), 'category_id': 1, 'bbox': np.ones(4), 'score': np.float32(1)}], "
        "{'images': [{'id': 1}], 'categories': [{'id': 1}], 'annotations': []}); "
        "assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-W", "ignore", "-c", code], check=True, cwd=str(_root()))


def _root():
    from pathlib import Path

    return Path(deteval.__file__).resolve().parent.parent
