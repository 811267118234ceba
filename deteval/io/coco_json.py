"""The general COCO reader: any JSON (already parsed) into checked columns, errors naming the record.

It checks what the files say (types, keys, finite numbers, box sizes, duplicate
ids) in the order a user meets the problems, and leaves what is decided from the
values to :mod:`deteval.io.coco_columns`, which the byte scanner feeds too.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from deteval.errors import InputError, accepted, warn
from deteval.io.coco_columns import (
    LVIS_CATEGORY_FIELDS,
    LVIS_IMAGE_FIELDS,
    GtColumns,
    box_polygon,
    detections_from_columns,
    ground_truth_from_columns,
    loadres_branch,
)
from deteval.io.json_source import python_value, python_values
from deteval.types import Detections, GroundTruth, IdTable, has_duplicates, last_occurrence, ranks_of
from deteval.vocabulary import IOU_TYPES


def ground_truth_of_json(
    data: Any, name: str, iou_type: str = "bbox", strict: bool = False, lvis_fields: bool = False
) -> GroundTruth:
    """The :class:`GroundTruth` of a parsed COCO ground truth (see :func:`deteval.io.coco.load_coco_gt`)."""
    if not isinstance(data, dict):
        rule = f"ground truth must be a JSON object, got {type(data).__name__}"
        if isinstance(data, list) and data and isinstance(data[0], dict) and "score" in data[0]:
            rule += " of detections (records with a score): did you swap PREDS and GT? The order is PREDS GT"
        raise InputError(name, None, rule)
    images = _get_list(data, "images", name)
    categories = _get_list(data, "categories", name)
    anns = _get_list(data, "annotations", name)

    img_ids, img_first = _id_table(images, name, "images", unique=False, strict=strict)
    in_file = None
    if len(img_ids) != len(images):  # the ids again, in file order: for the sizes of repeats and the warning
        in_file = _ids(_column(images, "id", name, "images"), name, "images", "id", images, note=False)
    # a repeated id's size is its last record's, as pycocotools' id -> record dict keeps it
    lasts = [images[i] for i in (img_first if in_file is None else last_occurrence(in_file))]
    height = _numbers(python_values([im.get("height", -1) for im in lasts]), name, "images", "height", lasts)
    width = _numbers(python_values([im.get("width", -1) for im in lasts]), name, "images", "width", lasts)
    cat_ids, cat_first = _id_table(categories, name, "categories", unique=True, strict=strict)
    cat_names = [str(categories[i].get("name", categories[i]["id"])) for i in cat_first]

    lst = "annotations"
    ann_ids = _ids(_column(anns, "id", name, lst), name, lst, "id", anns, strict)
    if ann_ids.dtype.kind not in "iu" and has_duplicates(ann_ids):  # repeated integers: see ground_truth_from_columns
        _id_table(anns, name, lst, unique=True, note=False)  # raises naming the duplicate
    image_ids = _ids(_column(anns, "image_id", name, lst), name, lst, "image_id", anns, strict)
    category_ids = _ids(_column(anns, "category_id", name, lst), name, lst, "category_id", anns, strict)
    # pycocotools never reads a ground-truth box for masks: there it may be absent (the mask's extent is used)
    box_optional = iou_type in IOU_TYPES and IOU_TYPES[iou_type].box_optional
    bbox_raw = _column(anns, "bbox", name, lst, default=None if box_optional else KeyError)
    no_box = np.array([b is None for b in bbox_raw], dtype=bool).reshape(-1)
    if no_box.any() and not box_optional:  # pycocotools reads every box for boxes: a null one raises there
        i = int(np.argmax(no_box))
        raise InputError(name, _record(lst, i, anns[i]), f"bbox is null: {iou_type} evaluation needs a box")
    if no_box.any():
        bbox_raw = [[0, 0, 0, 0] if b is None else b for b in bbox_raw]
    boxes = _numbers(bbox_raw, name, lst, "bbox", anns, width=4, finite=False)
    _odd_boxes(boxes, name, lst, anns, strict)
    area_raw = _column(anns, "area", name, lst, default=None)
    missing_area = np.array([a is None for a in area_raw], dtype=bool).reshape(-1)
    area = np.zeros(len(anns))
    if not missing_area.all():
        present = [i for i in range(len(anns)) if not missing_area[i]]
        sub = [anns[i] for i in present]
        area[present] = _numbers([area_raw[i] for i in present], name, lst, "area", sub, finite=False)
        _odd_areas(area[present], name, lst, sub, strict)
    crowd_raw = _column(anns, "iscrowd", name, lst, default=None)
    has_crowd = np.array([c is not None for c in crowd_raw], dtype=bool).reshape(-1)
    if not has_crowd.all():
        crowd_raw = [0 if c is None else c for c in crowd_raw]
    crowd = _flags(crowd_raw, name, lst, "iscrowd", anns)
    ignore = _flags(_column(anns, "ignore", name, lst, default=0), name, lst, "ignore", anns)
    cols = GtColumns(
        images=IdTable(img_ids, height=height, width=width, file_rank=ranks_of(img_first)),
        categories=IdTable(cat_ids, names=cat_names),
        ann_id=ann_ids,
        image_id=image_ids,
        category_id=category_ids,
        bbox=boxes,
        has_bbox=~no_box,
        area=area,
        has_area=~missing_area,
        crowd=crowd,
        ignore=ignore,
    )
    cols.repeated_image_ids = in_file
    cols.has_crowd = has_crowd
    cols.lvis_found = _lvis_found(images, categories)
    if iou_type == "segm":

        def segmentations(kept: np.ndarray, heights: np.ndarray, widths: np.ndarray):
            from deteval.io.masks import masks_from_segmentations  # numba: only for masks

            kept_anns = [anns[i] for i in kept]
            segs = _column(kept_anns, "segmentation", name, lst)
            return masks_from_segmentations(segs, heights, widths, name, lst, kept_anns, strict)

        cols.segmentations = segmentations
    elif iou_type == "keypoints":
        cols.keypoints = _keypoints(_column(anns, "keypoints", name, lst), name, lst, anns)
        given = _column(anns, "num_keypoints", name, lst, default=None)
        # checked with 0 for the missing ones, which the count of labelled keypoints replaces
        num = _numbers([0 if v is None else v for v in given], name, lst, "num_keypoints", anns)
        num[[v is None for v in given]] = np.nan
        cols.num_keypoints = num
    elif iou_type == "obb":
        cols.obb = _numbers(_column(anns, "obb", name, lst), name, lst, "obb", anns, width=5)
    return ground_truth_from_columns(cols, name, strict, lvis_fields)


def _lvis_found(images: list, categories: list) -> dict[str, str]:
    """LVIS's fields in the ground truth: field -> the first record carrying it (``images[3]``)."""
    found = {}
    lists = (("images", images, LVIS_IMAGE_FIELDS), ("categories", categories, LVIS_CATEGORY_FIELDS))
    for listname, records, fields in lists:
        for field in fields:
            i = next((i for i, r in enumerate(records) if field in r), None)
            if i is not None:
                found[field] = _record(listname, i, records[i])
    return found


def results_of_json(data: Any, name: str, gt: GroundTruth, iou_type: str = "bbox", strict: bool = False) -> Detections:
    """The :class:`Detections` of parsed COCO results (see :func:`deteval.io.coco.load_coco_results`)."""
    lst = "results"
    dataset = isinstance(data, dict) and "images" in data
    if isinstance(data, dict) and isinstance(data.get("annotations"), list):
        data, lst = data["annotations"], "annotations"  # a whole COCO dataset of detections
    if not isinstance(data, list):
        raise InputError(name, None, f"results must be a JSON list of detections, got {type(data).__name__}")
    if data and isinstance(data[0], dict) and "score" not in data[0] and ("iscrowd" in data[0] or dataset):
        why = "has 'iscrowd'" if "iscrowd" in data[0] else "comes with 'images'"
        rule = f"has no 'score' but {why}: is this ground truth? Did you swap PREDS and GT? The order is PREDS GT"
        raise InputError(name, _record(lst, 0, data[0]), rule)
    img_vals = _column(data, "image_id", name, lst)
    image_ids = _ids(img_vals, name, lst, "image_id", data, strict)
    image, found = gt.images.lookup(image_ids)
    if not found.all():
        i = int(np.argmin(found))
        rule = f"image_id {img_vals[i]!r} is not an image of the ground truth ({gt.source})"
        raise InputError(name, _record(lst, i, data[i]), rule)
    cat_vals = _column(data, "category_id", name, lst)
    category, keep = _result_categories(cat_vals, gt, name, lst, data, strict)
    score = _numbers(_column(data, "score", name, lst), name, lst, "score", data, finite=False)
    nan_scores = _odd_scores(score, name, lst, data, strict)
    if not keep.all():
        missing = sorted({str(c) for c, f in zip(cat_vals, keep) if not f})
        warn(
            f"{name}: skipped {int((~keep).sum())} results whose category_id is not in the ground truth "
            f"({', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}), as pycocotools does"
        )
    kept = np.flatnonzero(keep)
    data = [data[i] for i in kept] if len(kept) < len(data) else data
    image, category, score = image[kept], category[kept], score[kept]

    if iou_type == "obb":
        return _marked(_obb_results(data, name, lst, image, category, score), nan_scores, kept, len(keep))
    first = data[0] if data else {"bbox": None}  # every record is an object here (their ids were read)
    # a bbox [] reads as absent, as in loadRes
    branch = loadres_branch(python_value(first.get("bbox", [])) != [], "segmentation" in first, "keypoints" in first)
    if branch == "none":
        raise InputError(name, _record(lst, 0, data[0]), "a result needs a 'bbox', a 'segmentation' or 'keypoints'")
    boxes = None
    if branch == "bbox":
        boxes = _numbers(_column(data, "bbox", name, lst), name, lst, "bbox", data, width=4, finite=False)
        _odd_boxes(boxes, name, lst, data, strict)
    masks = None
    if branch == "segm" or iou_type == "segm":
        from deteval.io.masks import masks_from_segmentations  # numba: only for masks

        if branch == "bbox":  # pycocotools gives box-only results their box as a polygon
            segs = [r["segmentation"] if "segmentation" in r else box_polygon(b) for r, b in zip(data, boxes)]
            maskless = np.array(["segmentation" not in r for r in data], dtype=bool).reshape(-1)
            if maskless.any():
                i = int(np.argmax(maskless))
                what = (
                    "results have no 'segmentation' in mask evaluation: their boxes are scored as masks, "
                    "as in pycocotools"
                )
                accepted(name, strict, int(maskless.sum()), what, _record(lst, i, data[i]), "has no 'segmentation'")
        else:
            segs = _column(data, "segmentation", name, lst)
        heights, widths = gt.images.height[image], gt.images.width[image]
        masks = masks_from_segmentations(segs, heights, widths, name, lst, data, strict)
    kpts = None
    if branch == "keypoints" or iou_type == "keypoints":
        kpts = _keypoints(_column(data, "keypoints", name, lst), name, lst, data)
    has_bbox = None
    if branch == "segm":
        has_bbox = np.array([python_value(r.get("bbox", [])) != [] for r in data], bool).reshape(-1)
        boxes = np.zeros((len(data), 4))
        given = np.flatnonzero(has_bbox).tolist()
        if given:
            sub = [data[i] for i in given]
            given_boxes = python_values([r["bbox"] for r in sub], deep=False)
            boxes[given] = _numbers(given_boxes, name, lst, "bbox", sub, width=4, finite=False)
            _odd_boxes(boxes[given], name, lst, sub, strict)
    dets = detections_from_columns(name, image, category, score, branch, boxes, has_bbox, masks, kpts)
    return _marked(dets, nan_scores, kept, len(keep))


def _marked(dets: Detections, nan_scores: bool, kept: np.ndarray, n_read: int) -> Detections:
    """``dets`` with its NaN-score flag and, where results were skipped, each row's place in the input."""
    marks = {"nan_scores": True} if nan_scores else {}
    if len(kept) < n_read:
        marks["file_row"] = kept.astype(np.int64)
    return dataclasses.replace(dets, **marks) if marks else dets


def _obb_results(data: list, name: str, lst: str, image, category, score) -> Detections:
    """Oriented-box results (hotcoco's ``obb``): each one's ``obb`` [cx, cy, w, h, angle], area ``w*h``. A
    result that also carries a ``bbox`` is refused: hotcoco would take its area (for area ranges) from
    that box instead, which is rarely what was meant."""
    boxed = next((i for i, r in enumerate(data) if python_value(r.get("bbox", [])) != []), None)
    if boxed is not None:
        rule = "has both 'obb' and 'bbox': an obb result carries only 'obb' (hotcoco reads its area from the bbox)"
        raise InputError(name, _record(lst, boxed, data[boxed]), rule)
    obb = _numbers(_column(data, "obb", name, lst), name, lst, "obb", data, width=5)
    return detections_from_columns(name, image, category, score, "obb", None, obb=obb)


# ---------------------------------------------------------------------------------------------
# checked columns of records
# ---------------------------------------------------------------------------------------------
def _record(listname: str, index: int, rec: Any) -> str:
    rid = rec.get("id") if isinstance(rec, dict) else None
    return f"{listname}[{index}]" + (f" (id={rid!r})" if rid is not None else "")


def _column(records: list, key: str, name: str, listname: str, default: Any = KeyError) -> list:
    """``[r[key] for r in records]``, with the first bad record named on failure."""
    try:  # numpy and torch values as Python's (numbers inside lists: _numbers' np.array reads them)
        if default is KeyError:
            return python_values([r[key] for r in records], deep=False)
        return python_values([r.get(key, default) for r in records], deep=False)
    except (KeyError, TypeError, AttributeError):
        for i, r in enumerate(records):
            if not isinstance(r, dict):
                raise InputError(name, f"{listname}[{i}]", f"expected an object, got {type(r).__name__}") from None
            if key not in r:
                rule = f"missing key {key!r}"
                if key == "bbox" and "obb" in r:
                    rule += " (it has 'obb': oriented boxes are evaluated with --iou-type obb, iou_type='obb')"
                raise InputError(name, _record(listname, i, r), rule) from None
        raise


def _ids(
    values: list, name: str, listname: str, key: str, records: list, strict: bool = False, note: bool = True
) -> np.ndarray:
    """Ids as int64 or str array; all of one kind. Integral floats and booleans, which pycocotools matches
    as the integers they equal (``1.0 == 1``, ``True == 1``), are read as those integers with one
    :class:`DetevalWarning` each (``note``; with ``strict`` the error)."""
    kinds = {type(v) for v in values}
    if kinds & {float, bool} and kinds <= {int, float, bool, str}:
        values = _integral_ids(values, kinds, name, listname, key, records, strict, note)
        kinds = {type(v) for v in values}
    if kinds <= {int}:
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            return _wide_ids(values, name, listname, key, records, strict, note)
    if kinds <= {str}:
        return np.array(values, dtype=str) if values else np.array([], dtype=str)
    for i, v in enumerate(values):
        if type(v) not in (int, str):
            rule = f"{key} must be an integer or a string, got {v!r}"
            raise InputError(name, _record(listname, i, records[i]), rule)
    raise InputError(name, listname, f"{key} values mix integers and strings")


def _wide_ids(values: list, name: str, listname: str, key: str, records: list, strict: bool, note: bool) -> np.ndarray:
    """Integer ids past int64 (Python ints, which pycocotools keys its dicts by): where every one of the column
    lies in [0, 2**64), a uint64 column, with one :class:`DetevalWarning` (``note``; ``strict``: the error).
    Beyond 64 bits, or at or past 2**63 beside a negative id, no 64-bit column holds them: refused."""
    big = next(i for i, v in enumerate(values) if not -(2**63) <= v < 2**63)
    out = next((i for i, v in enumerate(values) if not -(2**63) <= v < 2**64), None)
    neg = next((i for i, v in enumerate(values) if v < 0), None)
    if out is not None or neg is not None:
        i = big if out is None else out
        why = "beside negative ids " if out is None else ""
        rule = (
            f"{key} {values[i]} is outside the 64-bit range deteval reads {why}(integers from -2**63, or from 0 "
            "to 2**64-1 where one is 2**63 or more; pycocotools scores them, deteval does not)"
        )
        raise InputError(name, _record(listname, i, records[i]), rule)
    if note:
        n = sum(1 for v in values if v >= 2**63)
        what = f"{key} values of 2**63 or more, read as unsigned 64-bit integers, as pycocotools matches them"
        accepted(name, strict, n, what, _record(listname, big, records[big]), f"{key} is {values[big]}")
    return np.array(values, dtype=np.uint64)


_EXACT_FLOAT = 2**53  # a float id beyond it may not be the integer that was written


def _integral_ids(
    values: list, kinds: set, name: str, listname: str, key: str, records: list, strict: bool, note: bool
) -> list:
    """``values`` with integral floats and booleans as ints (other values as they are, for ``_ids`` to judge)."""
    out = list(values)
    forms = ((bool, "true/false, read as 1/0"), (float, "numbers with a fraction part of 0, read as integers"))
    for kind, what in forms:
        if kind not in kinds:
            continue
        at = [i for i, v in enumerate(values) if type(v) is kind]
        for i in at:
            v = values[i]
            if kind is float and not (v.is_integer() and abs(v) < _EXACT_FLOAT):
                rule = f"{key} must be an integer or a string, got {v!r}"
                if v.is_integer():
                    rule += " (an integer this large must be written without a fraction or exponent)"
                raise InputError(name, _record(listname, i, records[i]), rule)
            out[i] = int(v)
        if note:
            first = at[0]
            accepted(name, strict, len(at), f"{key} values given as {what}, as pycocotools matches them",
                     _record(listname, first, records[first]), f"{key} is {values[first]!r}")  # fmt: skip
    return out


def _numbers(
    values: list, name: str, listname: str, key: str, records: list, width: int | None = None, finite: bool = True
) -> np.ndarray:
    """A float64 array of numbers (rows of ``width`` numbers when given); finite, unless not ``finite``."""
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
        plain = python_values(values)  # tensors inside lists, say
        if plain is not values:
            return _numbers(plain, name, listname, key, records, width, finite)
        for i, v in enumerate(values):
            vs = v if width is not None and isinstance(v, (list, tuple)) else [v]
            if width is not None and (not isinstance(v, (list, tuple)) or len(v) != width):
                rule = f"{key} must be a list of {width} numbers, got {v!r}"
                raise InputError(name, _record(listname, i, records[i]), rule)
            if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in vs):
                raise InputError(name, _record(listname, i, records[i]), f"{key} must be numeric, got {v!r}")
        # every value a number, yet no float array: integers beyond 64 bits (which the standard library's
        # parser gives where orjson declines the file); read as floats, as pycocotools' arithmetic reads them
        try:
            arr = np.array(values, dtype=np.float64)
        except OverflowError:
            i = next(i for i, v in enumerate(values) if _too_big(v))
            raise InputError(name, _record(listname, i, records[i]), f"{key} is too large for a float") from None
        except (ValueError, TypeError):
            raise InputError(name, listname, f"{key} values are not numeric") from None
        if arr.shape[1:] != (() if width is None else (width,)):
            raise InputError(name, listname, f"{key} values are not numeric")
    arr = arr.astype(np.float64)
    if not finite:
        return arr
    ok = np.isfinite(arr) if width is None else np.isfinite(arr).all(axis=1)
    if not ok.all():
        i = int(np.argmin(ok))
        raise InputError(name, _record(listname, i, records[i]), f"{key} is not finite: {values[i]!r}")
    return arr


def _too_big(v: Any) -> bool:
    vs = v if isinstance(v, (list, tuple)) else [v]
    return any(isinstance(x, int) and abs(x) >= 2**1024 for x in vs)


def _odd_boxes(boxes: np.ndarray, name: str, listname: str, records: list, strict: bool) -> None:
    """Boxes pycocotools scores though deteval would rather not: one warning each for non-finite
    coordinates and for negative sizes (errors with ``strict``)."""
    bad = ~np.isfinite(boxes).all(axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        what = (
            f"{listname} have a bbox with a NaN or infinite number; scored as pycocotools scores them (a NaN edge "
            "gives way to the other box's in the overlap, a NaN area is in every area range)"
        )
        rule = f"bbox is not finite: {python_value(records[i]['bbox'])!r}"
        accepted(name, strict, int(bad.sum()), what, _record(listname, i, records[i]), rule)
    neg = (boxes[:, 2] < 0) | (boxes[:, 3] < 0)
    if neg.any():
        i = int(np.argmax(neg))
        what = (
            f"{listname} have a bbox of negative width or height; scored as pycocotools scores them (overlap "
            "from the box's edges as given, area w*h: one negative side puts it outside every area range)"
        )
        rule = f"bbox has a negative width or height: {python_value(records[i]['bbox'])!r}"
        accepted(name, strict, int(neg.sum()), what, _record(listname, i, records[i]), rule)


def _odd_scores(score: np.ndarray, name: str, listname: str, records: list, strict: bool) -> bool:
    """Scores pycocotools ranks though deteval would rather not: infinite ones (ranked first or last), and
    NaN ones, which its stable descending sorts put after every other score. A NaN becomes -inf here (in
    place), which ranks the same where no score is -inf; whether it did is returned (the result shows
    NaN again). NaN beside -inf has no such stand-in: an error, strict or not."""
    nan = np.isnan(score)
    inf = np.isinf(score)
    if inf.any():
        i = int(np.argmax(inf))
        what = f"{listname} have an infinite score; ranked as in pycocotools"
        accepted(name, strict, int(inf.sum()), what, _record(listname, i, records[i]), f"score is {float(score[i])!r}")
    if not nan.any():
        return False
    i = int(np.argmax(nan))
    rule = "score is NaN"
    if (score == -np.inf).any():
        j = int(np.argmax(score == -np.inf))
        rule = f"score is NaN, and {_record(listname, j, records[j])} has -inf: deteval cannot rank both as pycocotools"
        raise InputError(name, _record(listname, i, records[i]), rule)
    what = f"{listname} have a NaN score; ranked last, after every other, as pycocotools' sorts put NaN"
    accepted(name, strict, int(nan.sum()), what, _record(listname, i, records[i]), rule)
    score[nan] = -np.inf
    return True


def _odd_areas(area: np.ndarray, name: str, listname: str, records: list, strict: bool) -> None:
    bad = ~np.isfinite(area)
    if bad.any():
        i = int(np.argmax(bad))
        what = f"{listname} have a NaN or infinite area; scored as in pycocotools (a NaN area is in every area range)"
        rule = f"area is not finite: {python_value(records[i]['area'])!r}"
        accepted(name, strict, int(bad.sum()), what, _record(listname, i, records[i]), rule)


def _flags(values: list, name: str, listname: str, key: str, records: list) -> np.ndarray:
    if not set(map(type, values)) <= {int, bool}:  # else each value is checked, the first bad one named
        for i, v in enumerate(values):
            if not isinstance(v, (int, bool)):  # 0/1 or true/false, as pycocotools' int(...)
                rule = f"{key} must be 0/1 or a boolean, got {v!r}"
                raise InputError(name, _record(listname, i, records[i]), rule)
    return np.array(values, dtype=np.int64).reshape(-1) != 0


def _keypoints(values: list, name: str, listname: str, records: list) -> np.ndarray:
    """Keypoints as float64 (N, 3K): one length for all, a multiple of 3."""
    if not values:
        return np.zeros((0, 0), np.float64)
    lengths = {len(v) if isinstance(v, list) else -1 for v in values}
    if len(lengths) != 1 or min(lengths) <= 0 or min(lengths) % 3:
        for i, v in enumerate(values):
            if not isinstance(v, list) or len(v) % 3 or len(v) != len(values[0]) or not v:
                n = len(v) if isinstance(v, list) else type(v).__name__
                rule = f"keypoints must be a list of 3K numbers (x, y, v), as long as {listname}[0]'s; got {n}"
                raise InputError(name, _record(listname, i, records[i]), rule)
    return _numbers(values, name, listname, "keypoints", records, width=len(values[0]))


def _get_list(data: dict, key: str, name: str) -> list:
    if key not in data:
        raise InputError(name, None, f"ground truth is missing the {key!r} list")
    value = data[key]
    if not isinstance(value, list):
        raise InputError(name, key, f"expected a list, got {type(value).__name__}")
    return value


def _result_categories(
    values: list, gt: GroundTruth, name: str, lst: str, data: list, strict: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Each result's category index and whether the ground truth has it. Integer and string ids mixed in
    the results are scored as pycocotools scores them: those of the ground truth's kind are looked up, the
    others match no category (skipped, with the warning of categories not in the ground truth), with one
    :class:`DetevalWarning` for the mix (``strict``: the error)."""
    kinds = {type(v) for v in values}
    if not ({int, str} <= kinds and kinds <= {int, str, float, bool}):
        return gt.categories.lookup(_ids(values, name, lst, "category_id", data, strict))
    gt_kind = str if gt.categories.ids.dtype.kind == "U" else int
    same = np.array([type(v) is gt_kind or (gt_kind is int and type(v) in (float, bool)) for v in values])
    other = int(np.argmin(same))
    accepted(name, strict, int((~same).sum()), "category_id values of another kind than the ground truth's "
             f"({'strings' if gt_kind is int else 'integers'}), which match no category, as in pycocotools",
             _record(lst, other, data[other]), f"category_id is {values[other]!r}")  # fmt: skip
    at = np.flatnonzero(same)
    category = np.zeros(len(values), np.int32)
    keep = np.zeros(len(values), bool)
    if len(at):
        ids = _ids([values[i] for i in at], name, lst, "category_id", [data[i] for i in at], strict)
        category[at], keep[at] = gt.categories.lookup(ids)
    return category, keep


def _rounded_mix(ids: np.ndarray, first: np.ndarray, name: str, listname: str, records: list) -> None:
    """Refuses a ground truth's image or category ids that mix ids below 2**63 with ids of 2**63 or more
    where one of the latter is no float64: pycocotools' ``np.unique`` of such a mix is a float64 array, whose
    rounded ids match no record (their images, or categories, are left out of its evaluation), which deteval
    does not mimic. Where every id is a float64 exactly, the rounding changes none and the ids match."""
    inexact = next((k for k, v in enumerate(ids.tolist()) if float(v) != v), None)
    if inexact is None:
        return
    i = int(first[inexact])
    rule = (
        f"id {int(ids[inexact])} beside ids below 2**63 is rounded by pycocotools (its np.unique of such ids is "
        "float64, and the rounded id matches no annotation); deteval does not score such ids"
    )
    raise InputError(name, _record(listname, i, records[i]), rule)


def _id_table(
    records: list, name: str, listname: str, unique: bool, strict: bool = False, note: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique ids of ``records`` and, per sorted id, the first record's index."""
    ids = _ids(_column(records, "id", name, listname), name, listname, "id", records, strict, note)
    sorted_ids, first = np.unique(ids, return_index=True)
    if sorted_ids.dtype.kind == "u" and sorted_ids[0] < 2**63:
        _rounded_mix(sorted_ids, first, name, listname, records)
    if unique and len(sorted_ids) != len(ids):
        seen: dict = {}
        for i, v in enumerate(ids.tolist()):
            if v in seen:
                rule = f"duplicate id {v!r} (also {listname}[{seen[v]}])"
                raise InputError(name, f"{listname}[{i}]", rule)
            seen[v] = i
    return sorted_ids, first
