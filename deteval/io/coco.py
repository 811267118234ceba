"""COCO ground truth and COCO results files into the columnar containers.

Validation happens here, before any kernel: each error names the file, the
record (list and index, with its id when it has one) and the rule broken.
The loaders only read the user's objects; nothing they are given is modified.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from deteval.errors import InputError
from deteval.io.json_source import read_json
from deteval.types import Detections, GroundTruth, IdTable


class DetevalWarning(UserWarning):
    """Input that deteval accepts but that changes what is evaluated."""


def _record(listname: str, index: int, rec: Any) -> str:
    rid = rec.get("id") if isinstance(rec, dict) else None
    return f"{listname}[{index}]" + (f" (id={rid!r})" if rid is not None else "")


def _column(records: list, key: str, name: str, listname: str, default: Any = KeyError) -> list:
    """``[r[key] for r in records]``, with the first bad record named on failure."""
    try:
        if default is KeyError:
            return [r[key] for r in records]
        return [r.get(key, default) for r in records]
    except (KeyError, TypeError, AttributeError):
        for i, r in enumerate(records):
            if not isinstance(r, dict):
                raise InputError(name, f"{listname}[{i}]", f"expected an object, got {type(r).__name__}") from None
            if key not in r:
                raise InputError(name, _record(listname, i, r), f"missing key {key!r}") from None
        raise


def _ids(values: list, name: str, listname: str, key: str, records: list) -> np.ndarray:
    """Ids as int64 or str array; all of one kind."""
    kinds = {type(v) for v in values}
    if kinds <= {int}:
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            bad = next(i for i, v in enumerate(values) if not -(2**63) <= v < 2**63)
            raise InputError(name, _record(listname, bad, records[bad]), f"{key} does not fit in 64 bits") from None
    if kinds <= {str}:
        return np.array(values, dtype=str) if values else np.array([], dtype=str)
    for i, v in enumerate(values):
        if type(v) not in (int, str):
            rule = f"{key} must be an integer or a string, got {v!r}"
            raise InputError(name, _record(listname, i, records[i]), rule)
    raise InputError(name, listname, f"{key} values mix integers and strings")


def _numbers(values: list, name: str, listname: str, key: str, records: list, width: int | None = None) -> np.ndarray:
    """A float64 array of numbers (rows of ``width`` numbers when given); finite."""
    if len(values) == 0:
        return np.zeros((0,) if width is None else (0, width), dtype=np.float64)
    try:
        arr = np.array(values)
        ok = arr.dtype.kind in "iuf" and (arr.ndim == 1 if width is None else arr.shape[1:] == (width,))
        # numpy reads true as 1.0 when it sits among numbers
        ok = ok and (width is not None or not any(type(v) is bool for v in values))
    except (ValueError, TypeError):
        ok = False
    if not ok:
        for i, v in enumerate(values):
            vs = v if width is not None and isinstance(v, (list, tuple)) else [v]
            if width is not None and (not isinstance(v, (list, tuple)) or len(v) != width):
                rule = f"{key} must be a list of {width} numbers, got {v!r}"
                raise InputError(name, _record(listname, i, records[i]), rule)
            if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in vs):
                raise InputError(name, _record(listname, i, records[i]), f"{key} must be numeric, got {v!r}")
        raise InputError(name, listname, f"{key} values are not numeric")
    arr = arr.astype(np.float64)
    finite = np.isfinite(arr) if width is None else np.isfinite(arr).all(axis=1)
    if not finite.all():
        i = int(np.argmin(finite))
        raise InputError(name, _record(listname, i, records[i]), f"{key} is not finite: {values[i]!r}")
    return arr


def _check_box_sizes(boxes: np.ndarray, name: str, listname: str, records: list) -> None:
    neg = (boxes[:, 2] < 0) | (boxes[:, 3] < 0)
    if neg.any():
        i = int(np.argmax(neg))
        rule = f"bbox has a negative width or height: {records[i]['bbox']!r}"
        raise InputError(name, _record(listname, i, records[i]), rule)


def _flags(values: list, name: str, listname: str, key: str, records: list) -> np.ndarray:
    for i, v in enumerate(values):
        if not isinstance(v, (int, bool)):  # 0/1 or true/false, as pycocotools' int(...)
            raise InputError(name, _record(listname, i, records[i]), f"{key} must be 0/1 or a boolean, got {v!r}")
    return np.array(values, dtype=np.int64).reshape(-1) != 0


def _get_list(data: dict, key: str, name: str) -> list:
    if key not in data:
        raise InputError(name, None, f"ground truth is missing the {key!r} list")
    value = data[key]
    if not isinstance(value, list):
        raise InputError(name, key, f"expected a list, got {type(value).__name__}")
    return value


def _id_table(records: list, name: str, listname: str, unique: bool) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique ids of ``records`` and, per sorted id, the first record's index."""
    ids = _ids(_column(records, "id", name, listname), name, listname, "id", records)
    sorted_ids, first = np.unique(ids, return_index=True)
    if unique and len(sorted_ids) != len(ids):
        seen: dict = {}
        for i, v in enumerate(ids.tolist()):
            if v in seen:
                rule = f"duplicate id {v!r} (also {listname}[{seen[v]}])"
                raise InputError(name, f"{listname}[{i}]", rule)
            seen[v] = i
    return sorted_ids, first


def load_coco_gt(source: Any) -> GroundTruth:
    """Load COCO ground truth (a path, or the loaded ``dict``) into a :class:`GroundTruth`.

    Images and categories are ordered by ascending id, as pycocotools orders
    ``imgIds``/``catIds``; annotations keep file order. Annotations whose
    image or category is not listed are dropped with a :class:`DetevalWarning`
    (pycocotools drops them silently). A missing ``iscrowd`` is taken as 0 and
    a missing ``area`` as the box's ``w*h`` (pycocotools raises ``KeyError``).

    Raises
    ------
    InputError
        Malformed JSON, missing keys, non-finite numbers, a bbox that is not
        4 numbers or has a negative size, duplicate annotation or category ids.
    """
    data, name = read_json(source, "ground truth")
    if not isinstance(data, dict):
        raise InputError(name, None, f"ground truth must be a JSON object, got {type(data).__name__}")
    images = _get_list(data, "images", name)
    categories = _get_list(data, "categories", name)
    anns = _get_list(data, "annotations", name)

    img_ids, img_first = _id_table(images, name, "images", unique=False)
    height = np.array([images[i].get("height", -1) for i in img_first], dtype=np.float64).reshape(-1)
    width = np.array([images[i].get("width", -1) for i in img_first], dtype=np.float64).reshape(-1)
    cat_ids, cat_first = _id_table(categories, name, "categories", unique=True)
    cat_names = [str(categories[i].get("name", categories[i]["id"])) for i in cat_first]
    image_table = IdTable(img_ids, height=height, width=width)
    category_table = IdTable(cat_ids, names=cat_names)

    ann_ids = _ids(_column(anns, "id", name, "annotations"), name, "annotations", "id", anns)
    if len(np.unique(ann_ids)) != len(ann_ids):
        _id_table(anns, name, "annotations", unique=True)  # raises naming the duplicate
    if ann_ids.dtype.kind != "i":
        # pycocotools marks matches with annotation ids; only integers keep its id-0 rule meaningful
        ann_ids = np.arange(1, len(anns) + 1, dtype=np.int64)
    image, img_found = image_table.lookup(
        _ids(_column(anns, "image_id", name, "annotations"), name, "annotations", "image_id", anns)
    )
    category, cat_found = category_table.lookup(
        _ids(_column(anns, "category_id", name, "annotations"), name, "annotations", "category_id", anns)
    )
    boxes = _numbers(_column(anns, "bbox", name, "annotations"), name, "annotations", "bbox", anns, width=4)
    _check_box_sizes(boxes, name, "annotations", anns)
    area_raw = _column(anns, "area", name, "annotations", default=None)
    missing_area = np.array([a is None for a in area_raw], dtype=bool).reshape(-1)
    area = boxes[:, 2] * boxes[:, 3]
    if not missing_area.all():
        present = [i for i in range(len(anns)) if not missing_area[i]]
        area[present] = _numbers(
            [area_raw[i] for i in present], name, "annotations", "area", [anns[i] for i in present]
        )
    crowd = _flags(_column(anns, "iscrowd", name, "annotations", default=0), name, "annotations", "iscrowd", anns)
    ignore = _flags(_column(anns, "ignore", name, "annotations", default=0), name, "annotations", "ignore", anns)

    keep = img_found & cat_found
    if not keep.all():
        warnings.warn(
            f"{name}: {int((~img_found).sum())} annotations name an image and "
            f"{int((img_found & ~cat_found).sum())} a category that the ground truth does not list; "
            "they are not evaluated (as in pycocotools)",
            DetevalWarning,
            stacklevel=2,
        )
    return GroundTruth(
        image=image[keep],
        category=category[keep],
        boxes=boxes[keep],
        area=area[keep],
        crowd=crowd[keep],
        ignore=ignore[keep],
        difficult=np.zeros(int(keep.sum()), dtype=bool),
        ann_id=ann_ids[keep],
        images=image_table,
        categories=category_table,
        box_format="xywh",
        source=name,
    )


def load_coco_results(source: Any, gt: GroundTruth) -> Detections:
    """Load COCO results (a path, or the loaded ``list``) against ``gt``.

    As pycocotools' ``loadRes`` does for box results, the area used for the
    area ranges is the box's ``w*h``. Results whose category is not in the
    ground truth are skipped with a :class:`DetevalWarning` giving the count
    (pycocotools skips them silently). An empty list is valid.

    Raises
    ------
    InputError
        Malformed JSON, a result that is not an object, missing keys, an
        ``image_id`` not in the ground truth, a bbox that is not 4 finite
        numbers or has a negative size, a missing, non-numeric or non-finite
        score.
    """
    data, name = read_json(source, "results")
    lst = "results"
    if isinstance(data, dict) and isinstance(data.get("annotations"), list):
        data, lst = data["annotations"], "annotations"  # a whole COCO dataset of detections
    if not isinstance(data, list):
        raise InputError(name, None, f"results must be a JSON list of detections, got {type(data).__name__}")
    if data and isinstance(data[0], dict) and "score" not in data[0] and "iscrowd" in data[0]:
        rule = "has no 'score' but has 'iscrowd': is this ground truth? The order is PREDS GT"
        raise InputError(name, _record(lst, 0, data[0]), rule)
    img_vals = _column(data, "image_id", name, lst)
    image_ids = _ids(img_vals, name, lst, "image_id", data)
    image, found = gt.images.lookup(image_ids)
    if not found.all():
        i = int(np.argmin(found))
        rule = f"image_id {img_vals[i]!r} is not an image of the ground truth ({gt.source})"
        raise InputError(name, _record(lst, i, data[i]), rule)
    category, cat_found = gt.categories.lookup(
        _ids(_column(data, "category_id", name, lst), name, lst, "category_id", data)
    )
    boxes = _numbers(_column(data, "bbox", name, lst), name, lst, "bbox", data, width=4)
    _check_box_sizes(boxes, name, lst, data)
    score = _numbers(_column(data, "score", name, lst), name, lst, "score", data)
    if not cat_found.all():
        missing = sorted({str(c) for c, f in zip(_column(data, "category_id", name, lst), cat_found) if not f})
        warnings.warn(
            f"{name}: skipped {int((~cat_found).sum())} results whose category_id is not in the ground truth "
            f"({', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}), as pycocotools does",
            DetevalWarning,
            stacklevel=2,
        )
    keep = cat_found
    boxes = boxes[keep]
    return Detections(
        image=image[keep],
        category=category[keep],
        boxes=boxes,
        score=score[keep],
        area=boxes[:, 2] * boxes[:, 3],
        box_format="xywh",
        source=name,
    )
