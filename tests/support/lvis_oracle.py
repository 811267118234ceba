"""lvis-api 0.5.3 as the reference oracle for the LVIS parity tests.

lvis-api needs two shims on today's stack, neither of which changes a number it computes:

- it calls ``astype(dtype=np.float)``, removed in numpy 1.24: ``np.float = float`` first (the same type);
- ``lvis/__init__`` imports ``lvis.vis``, which imports ``cv2`` (OpenCV) for drawing only. Where OpenCV is
  not installed or does not load (``opencv-python`` needs the system's libGL), an empty stand-in module
  named ``cv2`` is put in ``sys.modules`` before the import: evaluation never calls it (``LVISEval``,
  ``LVISResults`` and ``LVIS`` read no cv2 name).

:func:`run_lvis` runs ``LVIS``, ``LVISResults`` and ``LVISEval`` on copies of the inputs (lvis-api writes
into the result dicts it is given), silently; :func:`assert_same` compares a deteval result with it.
"""

from __future__ import annotations

import copy
import gzip
import json
import logging
import random
import sys
import types
import warnings
from pathlib import Path

import numpy as np

__all__ = [
    "DATA", "assert_same", "fixture_files", "lvis100_categories", "lvis100_images", "lvis_api", "run_lvis",
    "with_unknown_categories",
]  # fmt: skip

DATA = Path(__file__).resolve().parent.parent / "data" / "lvis100"


def lvis_api():
    """The ``lvis`` package (0.5.3), with the shims of the module docstring."""
    if not hasattr(np, "float"):
        setattr(np, "float", float)  # noqa: B010 - lvis-api's astype(dtype=np.float): float64 arrays, as before
    if "lvis" not in sys.modules:
        try:
            import cv2  # noqa: F401 - installed with tidecv and lvis; may fail to load (no libGL.so.1)
        except ImportError:
            sys.modules["cv2"] = types.ModuleType("cv2", "stand-in: lvis.vis draws with cv2, evaluation never calls it")
    import lvis

    logging.getLogger("lvis").setLevel(logging.ERROR)
    return lvis


def fixture_files(tmp_dir: Path) -> dict[str, str]:
    """The gzipped lvis100 files written out as plain JSON under ``tmp_dir`` (lvis-api reads plain paths)."""
    out = {}
    for name in ("lvis_val_100", "dets_bbox", "dets_segm"):
        path = tmp_dir / f"{name}.json"
        path.write_bytes(gzip.decompress((DATA / f"{name}.json.gz").read_bytes()))
        out[name] = str(path)
    return out


def run_lvis(gt, dets, iou_type: str = "bbox", max_dets: int = 300):
    """``LVISEval`` run on ``gt`` (a path or dict) and ``dets`` (a path or list), results cut to ``max_dets``
    per image; ``Params.max_dets``, which only names the AR stats, set to the same cut."""
    lvis = lvis_api()
    if isinstance(gt, dict):
        gt_obj = lvis.LVIS.__new__(lvis.LVIS)  # LVIS() reads only paths: the same object from a dict
        gt_obj.logger = logging.getLogger("lvis.lvis")
        gt_obj.dataset = copy.deepcopy(gt)
        gt_obj._create_index()
    else:
        gt_obj = lvis.LVIS(str(gt))
    dets = str(dets) if isinstance(dets, (str, Path)) else json.loads(json.dumps(dets))
    with warnings.catch_warnings():  # LVISResults calls the deprecated logger.warn for a list of results
        warnings.simplefilter("ignore", DeprecationWarning)
        results = lvis.LVISResults(gt_obj, dets, max_dets=max_dets)
    ev = lvis.LVISEval(gt_obj, results, iou_type)
    ev.params.max_dets = max_dets
    ev.run()
    return ev


def assert_same(result, ev) -> None:
    """deteval's result equals lvis-api's: every stat with ``==`` (names and order too), and the precision
    and recall arrays bit for bit (deteval keeps a max-dets axis of one)."""
    assert list(result.stats) == list(ev.results), (list(result.stats), list(ev.results))
    for key, value in ev.results.items():
        assert result.stats[key] == value, (key, result.stats[key], value)
    assert np.array_equal(result.precision[..., 0], ev.eval["precision"])
    assert np.array_equal(result.recall[..., 0], ev.eval["recall"])


def lvis100_images(iou_type: str = "bbox", to=np.asarray, order_seed: int | None = 0):
    """The lvis100 fixture as ``Evaluator.update`` inputs: ``(pred, target)`` dicts per image (xywh boxes;
    with ``segm``, binary masks decoded from the GT polygons and the results' RLE), the image's LVIS lists
    and GT ``area`` in the target, results in file order; images shuffled by ``order_seed`` (None: file order).
    ``to`` turns each array into the wanted type (a torch tensor, ...)."""
    import random

    import pycocotools.mask as mask_utils

    gt = json.loads(gzip.decompress((DATA / "lvis_val_100.json.gz").read_bytes()))
    dets = json.loads(gzip.decompress((DATA / f"dets_{iou_type}.json.gz").read_bytes()))
    anns: dict = {}
    for a in gt["annotations"]:
        anns.setdefault(a["image_id"], []).append(a)
    res: dict = {}
    for r in dets:
        res.setdefault(r["image_id"], []).append(r)
    images = list(gt["images"])
    if order_seed is not None:
        random.Random(order_seed).shuffle(images)
    for im in images:
        a, r = anns.get(im["id"], []), res.get(im["id"], [])
        target = {
            "image_id": im["id"],
            "labels": to(np.array([x["category_id"] for x in a], np.int64)),
            "area": to(np.array([x["area"] for x in a], np.float64)),
            "neg_category_ids": to(np.array(im["neg_category_ids"], np.int64)),
            "not_exhaustive_category_ids": to(np.array(im["not_exhaustive_category_ids"], np.int64)),
        }
        pred = {"scores": to(np.array([x["score"] for x in r], np.float64))}
        pred["labels"] = to(np.array([x["category_id"] for x in r], np.int64))
        if iou_type == "bbox":
            target["boxes"] = to(np.array([x["bbox"] for x in a], np.float64).reshape(-1, 4))
            pred["boxes"] = to(np.array([x["bbox"] for x in r], np.float64).reshape(-1, 4))
        else:
            h, w = im["height"], im["width"]
            gt_rles = [mask_utils.merge(mask_utils.frPyObjects(x["segmentation"], h, w)) for x in a]
            target["masks"] = to(np.array([mask_utils.decode(m) for m in gt_rles], np.uint8).reshape(-1, h, w))
            pred["masks"] = to(np.array([mask_utils.decode(x["segmentation"]) for x in r], np.uint8).reshape(-1, h, w))
        yield pred, target


def lvis100_categories() -> list[dict]:
    """The lvis100 ground truth's category records (id, name, frequency, ...)."""
    return json.loads(gzip.decompress((DATA / "lvis_val_100.json.gz").read_bytes()))["categories"]


def with_unknown_categories(dets: list, seed: int, per_image: int = 60, cut: int = 300) -> tuple[list, int]:
    """``dets`` with results of categories no ground truth has (copies of an image's results, relabelled,
    with scores drawn from that image's, ties included) put at random places, on the images at or over
    ``cut`` (so that they push known results out of it) and on a few others; the number of images over
    the cut once they are added."""
    rng = random.Random(seed)
    by_image: dict = {}
    for d in dets:
        by_image.setdefault(d["image_id"], []).append(d)
    busy = [i for i, rows in by_image.items() if len(rows) + per_image > cut]
    quiet = [i for i in by_image if i not in busy][:3]
    out = list(dets)
    for img in busy + quiet:
        rows = by_image[img]
        for _ in range(per_image if img in busy else 2):
            d = copy.deepcopy(rng.choice(rows))
            d["category_id"] = rng.choice([10**6, 10**6 + 1, -5])
            d["score"] = rng.choice(rows)["score"]
            out.insert(rng.randint(0, len(out)), d)
    return out, len(busy)
