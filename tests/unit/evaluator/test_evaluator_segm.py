"""Evaluator with masks: fed image by image, equal to evaluate(iou_type="segm") bit for bit."""

from __future__ import annotations

import contextlib
import io
import json
import random

import numpy as np
import pytest
from conftest import DATA_DIR
from pycocotools import mask as mask_utils
from pycocotools.coco import COCO

import deteval
from deteval import InputError

# pycocotools' decode (used here to make binary masks) trips a numpy 2 deprecation on every call
pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")

PAIR = DATA_DIR / "coco_fake100"
GT, RES = PAIR / "instances_val2014_100.json", PAIR / "instances_val2014_fakesegm100_results.json"


def _images(to=np.asarray):
    """(pred, target) dicts per image, masks decoded to (n, h, w) arrays, in a shuffled order."""
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO(str(GT))
    results = json.loads(RES.read_text())
    by_image: dict = {}
    for r in results:
        by_image.setdefault(r["image_id"], []).append(r)
    ids = sorted(coco.getImgIds())
    random.Random(0).shuffle(ids)
    for iid in ids:
        im, anns, rs = coco.imgs[iid], coco.loadAnns(coco.getAnnIds(imgIds=[iid])), by_image.get(iid, [])
        shape = (-1, im["height"], im["width"])
        target = {
            "image_id": iid,
            "labels": to(np.array([a["category_id"] for a in anns])),
            "masks": to(np.array([coco.annToMask(a) for a in anns]).reshape(shape)),
            "iscrowd": to(np.array([a["iscrowd"] for a in anns])),
            "area": to(np.array([a["area"] for a in anns], float)),
        }
        pred = {
            "image_id": iid,
            "labels": to(np.array([r["category_id"] for r in rs])),
            "scores": to(np.array([r["score"] for r in rs], float)),
            "masks": to(np.array([mask_utils.decode(r["segmentation"]) for r in rs]).reshape(shape)),
        }
        yield pred, target, [c["id"] for c in coco.dataset["categories"]]


def _feed(batch_size: int, to=np.asarray) -> deteval.EvalResult:
    items = list(_images(to))
    ev = deteval.Evaluator(iou_type="segm", box_format="xywh", categories=items[0][2])
    for i in range(0, len(items), batch_size):
        chunk = items[i : i + batch_size]
        ev.update([p for p, _, _ in chunk], [t for _, t, _ in chunk])
    return ev.compute()


@pytest.mark.parametrize("batch_size", [1, 7, 100])
def test_masks_fed_in_batches_equal_evaluate(batch_size):
    # the results carry no bbox, so pycocotools (and evaluate) read each mask's own area
    ref = deteval.evaluate(RES, GT, iou_type="segm")
    res = _feed(batch_size)
    for name in ("precision", "recall", "scores"):
        assert np.array_equal(getattr(res, name), getattr(ref, name)), name
    assert res.stats == ref.stats


def test_torch_bool_masks():
    torch = pytest.importorskip("torch", reason="the torch extra is not installed")
    ref = deteval.evaluate(RES, GT, iou_type="segm")
    res = _feed(16, to=lambda a: torch.as_tensor(a.astype(bool) if a.ndim == 3 else a))
    assert np.array_equal(res.precision, ref.precision) and res.stats == ref.stats


def test_missing_masks_and_count_mismatch():
    ev = deteval.Evaluator(iou_type="segm")
    target = {"labels": np.array([1]), "masks": np.ones((1, 4, 4))}
    pred = {"labels": np.array([1]), "scores": np.array([0.5])}
    with pytest.raises(InputError, match=r"preds: update 1, preds\[0\]: missing key 'masks' \(iou_type 'segm'\)"):
        ev.update([pred], [target])
    pred["masks"] = np.ones((2, 4, 4))
    with pytest.raises(InputError, match=r"preds\[0\]: 2 masks for 1 labels"):
        ev.update([pred], [target])
    pred["masks"] = np.ones((4, 4))
    with pytest.raises(InputError, match=r"masks must be an array of shape \(n, height, width\)"):
        ev.update([pred], [target])
