"""COCO ground truth and COCO results files into the columnar containers.

Validation happens here, before any kernel: each error names the file, the
record (list and index, with its id when it has one) and the rule broken.
The loaders only read the user's objects; nothing they are given is modified.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from deteval.errors import InputError
from deteval.io.json_source import is_path, read_bytes, read_json
from deteval.tuning import TUNING
from deteval.types import Detections, GroundTruth, IdTable, has_duplicates, xywh_area


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


def load_coco_gt(source: Any, iou_type: str = "bbox") -> GroundTruth:
    """Load COCO ground truth (a path, or the loaded ``dict``) into a :class:`GroundTruth`.

    ``iou_type`` says which geometry to read besides boxes: ``"segm"`` reads
    ``segmentation`` (polygons rasterised at the image's size, RLE) into
    ``masks``; ``"keypoints"`` reads ``keypoints`` into ``keypoints`` (N, 3K)
    and ``num_keypoints`` (counted from the visibility flags when absent) into
    ``num_keypoints``.

    Images and categories are ordered by ascending id, as pycocotools orders
    ``imgIds``/``catIds``; annotations keep file order. Annotations whose
    image or category is not listed are dropped with a :class:`DetevalWarning`
    (pycocotools drops them silently). A missing ``iscrowd`` is taken as 0 and
    a missing ``area`` as the box's ``w*h`` (pycocotools raises ``KeyError``).
    For masks a missing ``bbox`` is the mask's extent (pycocotools reads none
    there) and, with ``area`` missing too, the area is the mask's.

    Raises
    ------
    InputError
        Malformed JSON, missing keys, non-finite numbers, a bbox that is not
        4 numbers or has a negative size, duplicate annotation or category ids.
    """
    raw = read_bytes(source, "ground truth") if is_path(source) else None
    if raw is not None and iou_type in ("bbox", "segm") and len(raw) >= TUNING.fast_path_bytes:
        fast = _gt_fast(raw, str(source), iou_type)
        if fast is not None:
            return fast
    data, name = read_json(source, "ground truth", raw)
    if not isinstance(data, dict):
        raise InputError(name, None, f"ground truth must be a JSON object, got {type(data).__name__}")
    images = _get_list(data, "images", name)
    categories = _get_list(data, "categories", name)
    anns = _get_list(data, "annotations", name)

    img_ids, img_first = _id_table(images, name, "images", unique=False)
    firsts = [images[i] for i in img_first]
    height = _numbers([im.get("height", -1) for im in firsts], name, "images", "height", firsts)
    width = _numbers([im.get("width", -1) for im in firsts], name, "images", "width", firsts)
    cat_ids, cat_first = _id_table(categories, name, "categories", unique=True)
    cat_names = [str(categories[i].get("name", categories[i]["id"])) for i in cat_first]
    image_table = IdTable(img_ids, height=height, width=width)
    category_table = IdTable(cat_ids, names=cat_names)

    ann_ids = _ids(_column(anns, "id", name, "annotations"), name, "annotations", "id", anns)
    if has_duplicates(ann_ids):
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
    # pycocotools never reads a ground-truth box for masks: there it may be absent (the mask's extent is used)
    bbox_raw = _column(anns, "bbox", name, "annotations", default=None if iou_type == "segm" else KeyError)
    no_box = np.array([b is None for b in bbox_raw], dtype=bool).reshape(-1)
    if no_box.any():
        bbox_raw = [[0, 0, 0, 0] if b is None else b for b in bbox_raw]
    boxes = _numbers(bbox_raw, name, "annotations", "bbox", anns, width=4)
    _check_box_sizes(boxes, name, "annotations", anns)
    area_raw = _column(anns, "area", name, "annotations", default=None)
    missing_area = np.array([a is None for a in area_raw], dtype=bool).reshape(-1)
    area = xywh_area(boxes)
    if not missing_area.all():
        present = [i for i in range(len(anns)) if not missing_area[i]]
        area[present] = _numbers(
            [area_raw[i] for i in present], name, "annotations", "area", [anns[i] for i in present]
        )
    crowd = _flags(_column(anns, "iscrowd", name, "annotations", default=0), name, "annotations", "iscrowd", anns)
    ignore = _flags(_column(anns, "ignore", name, "annotations", default=0), name, "annotations", "ignore", anns)

    keep = img_found & cat_found
    extra = {}
    if iou_type == "segm":
        from deteval.io.masks import masks_from_segmentations  # numba: only for masks

        kept = np.flatnonzero(keep)
        kept_anns = [anns[i] for i in kept]
        segs = _column(kept_anns, "segmentation", name, "annotations")
        masks = masks_from_segmentations(segs, height[image[kept]], width[image[kept]], name, "annotations", kept_anns)
        extra["masks"] = masks
        boxless = np.flatnonzero(no_box[kept])
        if len(boxless):
            from deteval.io.masks import rle_extents

            rows = kept[boxless]
            sub = masks.take(boxless)
            boxes[rows] = rle_extents(sub.counts, sub.offsets, sub.height, sub.width)
            area[rows[missing_area[rows]]] = sub.area[missing_area[rows]]  # no box, no area: the mask's
    elif iou_type == "keypoints":
        kpts = _keypoints(_column(anns, "keypoints", name, "annotations"), name, "annotations", anns)
        counted = (kpts[:, 2::3] > 0).sum(axis=1)
        given = _column(anns, "num_keypoints", name, "annotations", default=None)
        num = _numbers(
            [counted[i] if v is None else v for i, v in enumerate(given)], name, "annotations", "num_keypoints", anns
        )
        extra["keypoints"] = kpts[keep]
        extra["num_keypoints"] = num[keep]
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
        **extra,
    )


def load_coco_pair(preds: Any, gt: Any, iou_type: str = "bbox") -> tuple[Detections, GroundTruth]:
    """:func:`load_coco_gt` then :func:`load_coco_results`, the same containers and errors, sooner.

    A results file large enough for the byte scanner is scanned in pieces by
    pool threads while the ground truth loads (the scanner needs no ground
    truth and releases the GIL), and by this thread once the ground truth is
    read; the scanned columns are checked against the ground truth afterwards,
    exactly as :func:`load_coco_results` checks them.
    """
    scan = None
    if is_path(preds) and iou_type in _FAST_RESULTS and _file_size(preds) >= TUNING.fast_path_bytes:
        scan = _start_results_scan(preds, iou_type)
    gt_loaded = load_coco_gt(gt, iou_type=iou_type)
    cols = scan() if scan is not None else None
    if cols is not None:
        fast = _results_fast(cols, str(preds), gt_loaded, iou_type)
        if fast is not None:
            return fast, gt_loaded
    return load_coco_results(preds, gt_loaded, iou_type=iou_type), gt_loaded


def _file_size(path: Any) -> int:
    try:
        return os.path.getsize(path)
    except OSError:  # reported by load_coco_results, after any error in the ground truth
        return -1


def _start_results_scan(path: Any, iou_type: str) -> Callable[[], dict | None]:
    """The scan of a results file begun on pool threads (see ``start_results_scan``): the function returned
    gives its columns, or ``None`` for the general path (which reports any error, after the ground truth's).

    Masks are decoded once every piece is scanned, which takes as long as the scan: the whole of it then
    runs on a thread of its own, beside the ground truth's rasterising, as the pieces' join would wait
    for the ground truth."""
    from deteval.io.scan.results import start_results_scan

    def read_and_start() -> Callable[[], dict | None]:
        try:
            raw = read_bytes(path, "results")
        except InputError:
            return lambda: None
        return start_results_scan(raw, masks=_mask_mode(iou_type))

    if iou_type == "segm":
        from deteval.jit import in_background

        return in_background(lambda: read_and_start()()).result
    return read_and_start()


def _loadres_branch(first: Any) -> str:
    """Which of pycocotools' ``loadRes`` branches reads these results: decided by the first one."""
    if isinstance(first, dict):
        if "bbox" in first and first["bbox"] != []:
            return "bbox"
        if "segmentation" in first:
            return "segm"
        if "keypoints" in first:
            return "keypoints"
    return "none"


def load_coco_results(source: Any, gt: GroundTruth, iou_type: str = "bbox") -> Detections:
    """Load COCO results (a path, or the loaded ``list``) against ``gt``.

    Boxes and areas follow pycocotools' ``loadRes``, which picks one reading
    for all results from the first one: if it has a ``bbox``, every result
    needs one and its area is ``w*h`` (for masks too: the reason detectron2
    drops ``bbox`` from mask results); else if it has a ``segmentation``, the
    area is the mask's and a missing box is the mask's extent; else the box
    and area are the keypoints' extent. ``iou_type="segm"`` also reads the
    masks into ``masks`` (a box-only result becomes its box polygon, as in
    pycocotools) and their areas into ``mask_area``; ``"keypoints"`` reads
    ``keypoints``.

    Results whose category is not in the ground truth are skipped with a
    :class:`DetevalWarning` giving the count (pycocotools skips them
    silently). An empty list is valid, and so is a COCO dataset dict whose
    ``annotations`` carry scores.

    Raises
    ------
    InputError
        Malformed JSON, a result that is not an object, missing keys, an
        ``image_id`` not in the ground truth, a bbox that is not 4 finite
        numbers or has a negative size, a missing, non-numeric or non-finite
        score, malformed masks or keypoints.
    """
    raw = read_bytes(source, "results") if is_path(source) else None
    if raw is not None and iou_type in _FAST_RESULTS and len(raw) >= TUNING.fast_path_bytes:
        fast = _results_fast(_scan_results(raw, iou_type), str(source), gt, iou_type)
        if fast is not None:
            return fast
    data, name = read_json(source, "results", raw)
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
    cat_vals = _column(data, "category_id", name, lst)
    category, keep = gt.categories.lookup(_ids(cat_vals, name, lst, "category_id", data))
    score = _numbers(_column(data, "score", name, lst), name, lst, "score", data)
    if not keep.all():
        missing = sorted({str(c) for c, f in zip(cat_vals, keep) if not f})
        warnings.warn(
            f"{name}: skipped {int((~keep).sum())} results whose category_id is not in the ground truth "
            f"({', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}), as pycocotools does",
            DetevalWarning,
            stacklevel=2,
        )
    kept = np.flatnonzero(keep)
    data = [data[i] for i in kept] if len(kept) < len(data) else data
    image, category, score = image[kept], category[kept], score[kept]

    branch = _loadres_branch(data[0]) if data else "bbox"
    if branch == "none":
        raise InputError(name, _record(lst, 0, data[0]), "a result needs a 'bbox', a 'segmentation' or 'keypoints'")
    extra: dict = {}
    boxes = None
    if branch == "bbox":
        boxes = _numbers(_column(data, "bbox", name, lst), name, lst, "bbox", data, width=4)
        _check_box_sizes(boxes, name, lst, data)
    masks = None
    if branch == "segm" or iou_type == "segm":
        from deteval.io.masks import masks_from_segmentations  # numba: only for masks

        if branch == "bbox":  # pycocotools gives box-only results their box as a polygon
            segs = [r["segmentation"] if "segmentation" in r else _box_polygon(b) for r, b in zip(data, boxes)]
        else:
            segs = _column(data, "segmentation", name, lst)
        masks = masks_from_segmentations(segs, gt.images.height[image], gt.images.width[image], name, lst, data)
        extra["masks"] = masks
        extra["mask_area"] = masks.area
    kpts = None
    if branch == "keypoints" or iou_type == "keypoints":
        kpts = _keypoints(_column(data, "keypoints", name, lst), name, lst, data)
        extra["keypoints"] = kpts

    if branch == "bbox":
        area = xywh_area(boxes)
    elif branch == "segm":
        from deteval.io.masks import rle_extents

        boxes = rle_extents(masks.counts, masks.offsets, masks.height, masks.width)
        given = [i for i, r in enumerate(data) if r.get("bbox", []) != []]  # [] reads as absent, as there
        if given:
            sub = [data[i] for i in given]
            boxes[given] = _numbers([r["bbox"] for r in sub], name, lst, "bbox", sub, width=4)
            _check_box_sizes(boxes[given], name, lst, sub)
        area = extra["mask_area"]
    else:  # keypoints: the extent of all keypoints, unlabelled (0, 0) ones included
        x, y = kpts[:, 0::3], kpts[:, 1::3]
        x0, x1, y0, y1 = x.min(axis=1), x.max(axis=1), y.min(axis=1), y.max(axis=1)
        boxes = np.stack([x0, y0, x1 - x0, y1 - y0], axis=1)
        area = (x1 - x0) * (y1 - y0)
    return Detections(
        image=image,
        category=category,
        boxes=boxes,
        score=score,
        area=area,
        box_format="xywh",
        source=name,
        **extra,
    )


def _box_polygon(box: np.ndarray) -> list:
    x1, y1 = box[0], box[1]
    x2, y2 = x1 + box[2], y1 + box[3]
    return [[x1, y1, x1, y2, x2, y2, x2, y1]]


# Fast paths: plain box files (and ground truth with polygon or RLE masks, results with
# compressed-RLE masks) parsed by deteval.io.scan straight into columns, bit-identical to
# the general path. They decline (None) whatever needs a warning or an error message, which the
# general path then gives. Their kernels take ~15-25 s to compile once, so small files skip them.


def _gt_fast(raw: bytes, name: str, iou_type: str = "bbox") -> GroundTruth | None:
    """Ground truth read by the scanner, as the general path reads it, or ``None`` (the general path's).

    Mask evaluation reads every annotation's segmentation; a missing box is then the mask's
    extent and, with the area missing too, the area the mask's, as in ``load_coco_gt``.
    """
    from deteval.io.scan.gt import parse_gt_columns
    from deteval.io.scan.gt_segm import gt_masks

    cols = parse_gt_columns(raw, segm=iou_type == "segm")
    if cols is None:
        return None
    im, an, ca = cols["images"], cols["annotations"], cols["categories"]
    img_ids, img_first = np.unique(im["id"], return_index=True)
    cat_ids, cat_first = np.unique(ca["id"], return_index=True)
    if len(cat_ids) != len(ca["id"]) or has_duplicates(an["id"]):
        return None
    images = IdTable(img_ids, height=im["height"][img_first], width=im["width"][img_first])
    categories = IdTable(cat_ids, names=[ca["name"][i] for i in cat_first])
    image, img_found = images.lookup(an["image_id"])
    category, cat_found = categories.lookup(an["category_id"])
    boxes = an["bbox"]
    if not (img_found.all() and cat_found.all()) or ((boxes[:, 2] < 0) | (boxes[:, 3] < 0)).any():
        return None
    area = an["area"]
    extra: dict = {}
    if iou_type == "segm":
        masks = gt_masks(an["segmentation"], images.height[image], images.width[image])
        if masks is None:
            return None
        extra["masks"] = masks
        boxless = np.flatnonzero(~an["has_bbox"])
        if len(boxless):
            from deteval.io.masks import rle_extents

            sub = masks.take(boxless)
            boxes[boxless] = rle_extents(sub.counts, sub.offsets, sub.height, sub.width)
            no_area = ~an["has_area"][boxless]
            area[boxless[no_area]] = sub.area[no_area]
    return GroundTruth(
        image=image,
        category=category,
        boxes=boxes,
        area=area,
        crowd=an["iscrowd"] != 0,
        ignore=an["ignore"] != 0,
        difficult=np.zeros(len(boxes), dtype=bool),
        ann_id=an["id"],
        images=images,
        categories=categories,
        box_format="xywh",
        source=name,
        **extra,
    )


_FAST_RESULTS = ("bbox", "segm")  # the iou types whose results the scanner reads


def _scan_results(raw: bytes, iou_type: str) -> dict | None:
    """The scanner's columns of a results file (no ground truth needed), or ``None``."""
    from deteval.io.scan.results import parse_results_columns

    return parse_results_columns(raw, masks=_mask_mode(iou_type))


def _mask_mode(iou_type: str) -> str:
    """What the results scanner does with masks: read them for mask evaluation, else skip them."""
    return "read" if iou_type == "segm" else "skip"


def _results_fast(cols: dict | None, name: str, gt: GroundTruth, iou_type: str = "bbox") -> Detections | None:
    """Results read by the scanner (``cols`` from :func:`_scan_results`), as the general path reads
    them, or ``None`` (the general path's).

    Box evaluation skips masks and keypoints: with a box in every result pycocotools' ``loadRes``
    takes its bbox branch and reads neither. Mask evaluation needs compressed RLE in every result;
    the first result decides the branch as in ``loadRes``: with a bbox, every result needs one and
    the area is ``w*h``; without, the area is the mask's and a missing box the mask's extent.
    """
    if cols is None:
        return None
    from deteval.jit import run_tasks

    boxes = cols["bbox"]
    # numpy releases the GIL in each: side by side on threads
    (image, img_found), (category, cat_found), area = run_tasks([
        partial(gt.images.lookup, cols["image_id"]), partial(gt.categories.lookup, cols["category_id"]),
        partial(xywh_area, boxes),
    ])  # fmt: skip
    if not (img_found.all() and cat_found.all()):
        return None
    extra: dict = {}
    if iou_type == "segm":
        masks, has_bbox = cols["masks"], cols["has_bbox"]
        extra = {"masks": masks, "mask_area": masks.area}
        if cols["n"] and not has_bbox[0]:  # loadRes' segm branch: the mask's area, its extent for a missing box
            from deteval.io.masks import rle_extents

            boxless = np.flatnonzero(~has_bbox)
            if len(boxless):
                sub = masks.take(boxless)
                boxes[boxless] = rle_extents(sub.counts, sub.offsets, sub.height, sub.width)
            area = masks.area
        elif not has_bbox.all():  # the bbox branch needs every box: the general path names the first missing
            return None
    if ((boxes[:, 2] < 0) | (boxes[:, 3] < 0)).any():
        return None
    return Detections(
        image=image,
        category=category,
        boxes=boxes,
        score=cols["score"],
        area=area,
        box_format="xywh",
        source=name,
        **extra,
    )
