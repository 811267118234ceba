"""CityPersons ground truth (the dataset authors' COCO-style ``val_gt.json``) and its COCO results.

The ground truth is a COCO dataset whose annotations also carry ``height`` (the person's full height,
which the setups read instead of ``bbox[3]``) and ``vis_ratio``; ``ignore`` is optional (missing: 0).
``iscrowd``, ``area`` and ``vis_bbox`` are not read, as the reference does not read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval.errors import InputError, warn
from deteval.io.coco import load_coco_results
from deteval.io.json_source import read_json
from deteval.types import Detections, GroundTruth, IdTable


@dataclass(frozen=True, eq=False)
class PedestrianGroundTruth(GroundTruth):
    """A :class:`GroundTruth` with the per-row fields the pedestrian setups filter on."""

    height: np.ndarray | None = None  # float64 (N,): the annotated full height
    visibility: np.ndarray | None = None  # float64 (N,): the visible fraction (vis_ratio)


def _record(i: int, rec: Any) -> str:
    rid = rec.get("id") if isinstance(rec, dict) else None
    return f"annotations[{i}]" + (f" (id={rid!r})" if rid is not None else "")


def _int_ids(records: list, key: str, name: str, listname: str) -> np.ndarray:
    out = np.empty(len(records), np.int64)
    for i, r in enumerate(records):
        if not isinstance(r, dict):
            raise InputError(name, f"{listname}[{i}]", f"expected an object, got {type(r).__name__}")
        v = r.get(key)
        if type(v) is not int or not -(2**63) <= v < 2**63:
            raise InputError(name, f"{listname}[{i}]", f"{key} must be a 64-bit integer, got {v!r}")
        out[i] = v
    return out


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)


def citypersons_gt_of_json(data: Any, name: str) -> PedestrianGroundTruth:
    """The ground truth of a parsed CityPersons file (see :func:`load_citypersons_gt`)."""
    if not isinstance(data, dict):
        raise InputError(name, None, f"ground truth must be a JSON object, got {type(data).__name__}")
    lists = {}
    for key in ("images", "categories", "annotations"):
        lists[key] = data.get(key)
        if not isinstance(lists[key], list):
            raise InputError(name, key, "missing, or not a list")
    images, cats, anns = lists["images"], lists["categories"], lists["annotations"]
    img_table = IdTable(np.unique(_int_ids(images, "id", name, "images")))
    cat_ids = _int_ids(cats, "id", name, "categories")
    cat_unique, first = np.unique(cat_ids, return_index=True)
    names = [str(cats[i].get("name", cats[i]["id"])) for i in first]
    cat_table = IdTable(cat_unique, names=names)

    ann_id = _int_ids(anns, "id", name, "annotations")
    image_id = _int_ids(anns, "image_id", name, "annotations")
    category_id = _int_ids(anns, "category_id", name, "annotations")
    uniq, counts = np.unique(ann_id, return_counts=True)
    if (counts > 1).any():  # the reference's id -> record dict would score the last one twice
        dup = int(uniq[np.argmax(counts > 1)])
        i = int(np.flatnonzero(ann_id == dup)[1])
        raise InputError(name, _record(i, anns[i]), f"annotation id {dup} is repeated")
    boxes = np.zeros((len(anns), 4))
    height = np.zeros(len(anns))
    vis = np.zeros(len(anns))
    ignore = np.zeros(len(anns), bool)
    for i, a in enumerate(anns):
        b = a.get("bbox")
        if not isinstance(b, list) or len(b) != 4 or not all(_number(x) for x in b):
            raise InputError(name, _record(i, a), f"bbox must be a list of 4 finite numbers, got {b!r}")
        boxes[i] = b
        for key, col in (("height", height), ("vis_ratio", vis)):
            v = a.get(key)
            if not _number(v):
                raise InputError(name, _record(i, a), f"{key} must be a finite number, got {v!r}")
            col[i] = v
        flag = a.get("ignore", 0)
        if isinstance(flag, (list, dict)) or flag not in (0, 1):  # 0, 1, 0.0, 1.0, false, true
            raise InputError(name, _record(i, a), f"ignore must be 0 or 1, got {flag!r}")
        ignore[i] = bool(flag)
    image, found = img_table.lookup(image_id)
    if not found.all():  # the reference reads annotations of listed images only
        i = int(np.argmin(found))
        warn(f"{name}: skipped {int((~found).sum())} annotations whose image_id is not in images "
             f"(first: {_record(i, anns[i])}), as the reference does")
    category, cat_found = cat_table.lookup(category_id)
    keep = found & cat_found  # a category missing from the table: never read by the reference
    n = int(keep.sum())
    return PedestrianGroundTruth(
        image=image[keep].astype(np.int32),
        category=category[keep].astype(np.int32),
        boxes=boxes[keep],
        area=boxes[keep, 2] * boxes[keep, 3],
        crowd=np.zeros(n, bool),
        ignore=ignore[keep],
        difficult=np.zeros(n, bool),
        ann_id=ann_id[keep],
        images=img_table,
        categories=cat_table,
        source=name,
        height=height[keep],
        visibility=vis[keep],
    )


def load_citypersons_gt(source: Any) -> PedestrianGroundTruth:
    """Load a CityPersons ground truth (a path, or the parsed dict).

    Raises
    ------
    InputError
        Malformed JSON, missing lists or keys, ids that are not integers, a repeated annotation id, a box that
        is not 4 finite numbers, a non-numeric ``height`` or ``vis_ratio``, an ``ignore`` other than 0 or 1.
    """
    data, name = read_json(source, "gt")
    return citypersons_gt_of_json(data, name)


def load_citypersons(preds: Any, gt: Any) -> tuple[Detections, PedestrianGroundTruth]:
    """The ground truth (:func:`load_citypersons_gt`) and COCO results against it (every category kept)."""
    truth = gt if isinstance(gt, PedestrianGroundTruth) else load_citypersons_gt(gt)
    dets = preds if isinstance(preds, Detections) else load_coco_results(preds, truth, "bbox")
    return dets, truth
