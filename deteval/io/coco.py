"""COCO ground truth and COCO results files into the columnar containers.

Validation happens here, before any kernel: each error names the file, the
record (list and index, with its id when it has one) and the rule broken.
The loaders only read the user's objects; nothing they are given is modified.

A file is read one of two ways, with the same containers, warnings and errors:
large files by the byte scanner (:mod:`deteval.io.scan`) straight into arrays,
anything else (and whatever the scanner declines) by the general reader
(:mod:`deteval.io.coco_json`). Both give columns to :mod:`deteval.io.coco_columns`,
which applies pycocotools' reading rules once.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from deteval._startup.compile_ahead import compile_ahead
from deteval.errors import DetevalWarning, InputError
from deteval.io.coco_columns import GtColumns, detections_from_columns, ground_truth_from_columns, loadres_branch
from deteval.io.coco_json import ground_truth_of_json, results_of_json
from deteval.io.corner_pairs import check_corner_pairs
from deteval.io.json_source import is_path, read_bytes, read_json
from deteval.tuning import TUNING
from deteval.types import Detections, GroundTruth, IdTable, has_duplicates, last_occurrence, ranks_of
from deteval.vocabulary import IOU_TYPES

__all__ = ["DetevalWarning", "InputError", "load_coco_gt", "load_coco_pair", "load_coco_results"]

_FAST_GT = tuple(IOU_TYPES)  # the iou types whose ground truth the scanner reads: every one of the table
_FAST_RESULTS = tuple(IOU_TYPES)  # and whose results


def load_coco_gt(source: Any, iou_type: str = "bbox", strict: bool = False, lvis_fields: bool = False) -> GroundTruth:
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

    Image records that repeat an id are one image, as pycocotools keys them by
    id, with one :class:`DetevalWarning` naming the count and the first repeat;
    with ``strict=True`` the first repeat is an :class:`InputError` instead.
    A ground truth with no categories (``"categories": []``) is valid: as in
    pycocotools 2.0.11 it scores every stat -1 (and its results are skipped
    with the warning above), with no per-class rows.

    What pycocotools scores, deteval scores as it does, with one :class:`DetevalWarning`
    per oddity (count and first record; with ``strict`` that record's :class:`InputError`):
    boxes of negative size, NaN or infinite box coordinates, areas or scores (a NaN score ranks
    last: see ``Detections.nan_scores``; beside a -inf score it is an error), repeated annotation
    ids (each record of an id scored as the last one, as pycocotools' id lookups do), a
    missing ``iscrowd``, polygons on images of height or width 0 (empty masks), LVIS's
    fields (``neg_category_ids``, ``not_exhaustive_category_ids``, ``frequency``). With
    ``lvis_fields=True`` (the caller is an LVIS protocol: it reads those fields and never
    ``iscrowd``) neither of the last two is said. numpy and torch values
    in records given as objects are read as their Python values.

    Raises
    ------
    InputError
        Malformed JSON, missing keys, a bbox that is not 4 numbers, duplicate
        category ids; with ``strict``, any of the oddities above.
    """
    raw = read_bytes(source, "ground truth") if is_path(source) else None
    if raw is not None and iou_type in _FAST_GT and _scanned(len(raw), iou_type):
        fast = gt_from_scan(raw, str(source), iou_type, strict, lvis_fields)
        if fast is not None:
            return fast
    data, name = read_json(source, "ground truth", raw)
    return ground_truth_of_json(data, name, iou_type, strict, lvis_fields)


def load_coco_results(source: Any, gt: GroundTruth, iou_type: str = "bbox", strict: bool = False) -> Detections:
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

    Boxes of negative size or with NaN or infinite coordinates, results without masks in
    mask evaluation and polygons on images of size 0 are scored as pycocotools scores them,
    with one :class:`DetevalWarning` each (``strict``: an :class:`InputError`).

    Raises
    ------
    InputError
        Malformed JSON, a result that is not an object, missing keys, an
        ``image_id`` not in the ground truth, a bbox that is not 4 numbers, a
        missing, non-numeric or non-finite score, malformed masks or keypoints;
        with ``strict``, the oddities above.
    """
    return _checked(_load_results(source, gt, iou_type, strict), gt, iou_type, strict)


def _load_results(source: Any, gt: GroundTruth, iou_type: str, strict: bool) -> Detections:
    raw = read_bytes(source, "results") if is_path(source) else None
    if raw is not None and iou_type in _FAST_RESULTS and _scanned(len(raw), iou_type):
        fast = results_from_scan(scan_results(raw, iou_type), str(source), gt, iou_type)
        if fast is not None:
            return fast
    data, name = read_json(source, "results", raw)
    return results_of_json(data, name, gt, iou_type, strict)


def _checked(dets: Detections, gt: GroundTruth, iou_type: str, strict: bool) -> Detections:
    """Results read from a file or records, checked for mistakes that score silently (corner-pair boxes)."""
    if iou_type == "bbox":
        check_corner_pairs(dets, gt, strict)
    return dets


def load_coco_pair(preds: Any, gt: Any, iou_type: str = "bbox", strict: bool = False) -> tuple[Detections, GroundTruth]:
    """:func:`load_coco_gt` then :func:`load_coco_results`, the same containers and errors, sooner.

    Either may be given loaded already (a :class:`Detections` or :class:`GroundTruth` is taken as it
    is); paths and JSON objects are loaded. A results file large enough for the byte scanner is
    scanned in pieces by pool threads while the ground truth loads (the scanner needs no ground
    truth and releases the GIL), and by this thread once the ground truth is read; the scanned
    columns are checked against the ground truth afterwards, exactly as :func:`load_coco_results`
    checks them. ``strict`` is :func:`load_coco_gt`'s (a loaded :class:`GroundTruth` is not re-checked).
    """
    if isinstance(gt, GroundTruth) or isinstance(preds, Detections):
        gt_loaded = gt if isinstance(gt, GroundTruth) else load_coco_gt(gt, iou_type=iou_type, strict=strict)
        dets = preds if isinstance(preds, Detections) else load_coco_results(preds, gt_loaded, iou_type, strict)
        return dets, gt_loaded
    scan = None
    big_gt = is_path(gt) and iou_type in _FAST_GT and _scanned(_file_size(gt), iou_type)
    if is_path(preds) and iou_type in _FAST_RESULTS and _scanned(_file_size(preds), iou_type):
        # with a cold kernel cache, helper processes compile the scanners and large inputs' sorts meanwhile
        compile_ahead(_scan_group(iou_type), "sort-large")
        scan = _start_results_scan(preds, iou_type)
    elif big_gt:
        compile_ahead(_scan_group(iou_type))
    gt_loaded = load_coco_gt(gt, iou_type=iou_type, strict=strict)
    cols = scan() if scan is not None else None
    if cols is not None:
        fast = results_from_scan(cols, str(preds), gt_loaded, iou_type)
        if fast is not None:
            return _checked(fast, gt_loaded, iou_type, strict), gt_loaded
    return load_coco_results(preds, gt_loaded, iou_type=iou_type, strict=strict), gt_loaded


def _scan_group(iou_type: str) -> str:
    """The kernel group (``deteval._startup.kernel_signatures.GROUPS``) of the scanners a load of ``iou_type`` runs:
    keypoint results go through the box scanner's kernel (their rows are wider, the types the same)."""
    return IOU_TYPES[iou_type].scan_group


def _scanned(size: int, iou_type: str) -> bool:
    """Whether the byte scanner reads a file of ``size`` bytes: from ``TUNING.fast_path_bytes`` on, and
    for box evaluation from a 32nd of that (256 kB) once its kernels are in numba's cache.

    A warm process imports numba for the evaluation anyway, and the scanner reads a 4 MB results
    file in ~10 ms where JSON parsing and Python lists take ~0.15 s; with a cold cache its
    compile (~15 s) is not worth it for such a file.
    """
    if size >= TUNING.fast_path_bytes:
        return True
    warm_ok = IOU_TYPES[iou_type].warm_scan  # the box scanners' kernels, which _scanners_cached asks about
    return warm_ok and size >= TUNING.fast_path_bytes // TUNING.warm_scan_divisor and _scanners_cached(iou_type)


_scanners_known: set[str] = set()  # the IoU types whose scan kernels were found cached, in this process
# in the group, but run only to move keypoint columns (numeric.tail_columns): a box scan never compiles it
_KEYPOINTS_ONLY = {"deteval.numeric._shift_rows"}


def _scanners_cached(iou_type: str) -> bool:
    """Whether every kernel a scan for ``iou_type`` (``"bbox"`` or ``"keypoints"``) runs, the group
    ``coco-bbox-scan`` of :data:`deteval._startup.kernel_signatures.GROUPS`, is at hand without compiling."""
    if iou_type in _scanners_known:
        return True
    from deteval._runtime import group_cached

    if not group_cached("coco-bbox-scan", skip=() if iou_type == "keypoints" else _KEYPOINTS_ONLY):
        return False
    _scanners_known.add(iou_type)
    return True


def _file_size(path: Any) -> int:
    try:
        return os.path.getsize(path)
    except OSError:  # reported by load_coco_results, after any error in the ground truth
        return -1


# ---------------------------------------------------------------------------------------------
# The byte scanner's columns. It declines (None) whatever is not plainly such a file, and these
# decline whatever needs an error message, which the general reader then gives. Its kernels take
# ~15-25 s to compile once, so small files skip it.
# ---------------------------------------------------------------------------------------------
def gt_from_scan(
    raw: bytes, name: str, iou_type: str = "bbox", strict: bool = False, lvis_fields: bool = False
) -> GroundTruth | None:
    """Ground truth read by the scanner, as the general reader reads it, or ``None`` (the general reader's)."""
    from deteval.io.scan.gt import parse_gt_columns
    from deteval.io.scan.gt_segm import gt_masks

    cols = parse_gt_columns(raw, segm=iou_type == "segm", obb=iou_type == "obb", keypoints=iou_type == "keypoints")
    if cols is None:
        return None
    im, an, ca = cols["images"], cols["annotations"], cols["categories"]
    img_ids, img_first = np.unique(im["id"], return_index=True)
    # a repeated id's size is its last record's, as pycocotools' id -> record dict keeps it
    img_last = img_first if len(img_ids) == len(im["id"]) else last_occurrence(im["id"])
    cat_ids, cat_first = np.unique(ca["id"], return_index=True)
    boxes = an["bbox"]
    if len(cat_ids) != len(ca["id"]) or has_duplicates(an["id"]) or ((boxes[:, 2] < 0) | (boxes[:, 3] < 0)).any():
        return None
    n = len(boxes)
    columns = GtColumns(
        images=IdTable(
            img_ids, height=im["height"][img_last], width=im["width"][img_last], file_rank=ranks_of(img_first)
        ),
        categories=IdTable(cat_ids, names=[ca["name"][i] for i in cat_first]),
        ann_id=an["id"],
        image_id=an["image_id"],
        category_id=an["category_id"],
        bbox=boxes,
        has_bbox=an.get("has_bbox", np.ones(n, bool)),
        area=an["area"],
        has_area=an.get("has_area", np.ones(n, bool)),
        crowd=an["iscrowd"] != 0,
        ignore=an["ignore"] != 0,
        repeated_image_ids=im["id"] if len(img_ids) != len(im["id"]) else None,
        has_crowd=an["has_iscrowd"],
        lvis_found=cols["lvis_found"],
    )
    if iou_type == "obb":
        columns.obb = an["obb"]
    if iou_type == "keypoints":
        columns.keypoints, columns.num_keypoints = an["keypoints"], an["num_keypoints"]
    if iou_type == "segm":
        # the scanned segmentations of every annotation; one dropped (no such image) is the general reader's
        columns.segmentations = lambda kept, h, w: gt_masks(an["segmentation"], h, w) if len(kept) == n else None
    return ground_truth_from_columns(columns, name, strict, lvis_fields)


def _start_results_scan(path: Any, iou_type: str) -> Callable[[], dict | None]:
    """The scan of a results file begun on pool threads (see ``start_results_scan``): the function returned
    gives its columns, or ``None`` for the general path (which reports any error, after the ground truth's).

    With masks read, the whole of it runs on a thread of its own, beside the ground truth's rasterising:
    a piece's masks are copied out as it is scanned, and the pieces' join would wait for the ground truth."""
    from deteval.io.scan.results import start_results_scan

    def read_and_start() -> Callable[[], dict | None]:
        try:
            raw = read_bytes(path, "results", populate=False)  # each piece's pages, as it is scanned
        except InputError:
            return lambda: None
        return start_results_scan(raw, masks=_mask_mode(iou_type))

    if iou_type == "segm":
        from deteval.jit import in_background

        return in_background(lambda: read_and_start()()).result
    return read_and_start()


def scan_results(raw: bytes, iou_type: str) -> dict | None:
    """The scanner's columns of a results file (no ground truth needed), or ``None``."""
    from deteval.io.scan.results import parse_results_columns

    return parse_results_columns(raw, masks=_mask_mode(iou_type))


def _mask_mode(iou_type: str) -> str:
    """What the results scanner does with masks: read them for mask evaluation, else skip them; oriented boxes
    are read in their own mode."""
    return {"segm": "read", "obb": "obb", "keypoints": "keypoints"}.get(iou_type, "skip")


def results_from_scan(cols: dict | None, name: str, gt: GroundTruth, iou_type: str = "bbox") -> Detections | None:
    """Results read by the scanner (``cols`` from :func:`scan_results`), as the general reader reads
    them, or ``None`` (the general reader's).

    Box evaluation skips masks and keypoints: with a box in every result pycocotools' ``loadRes``
    takes its bbox branch and reads neither. Mask evaluation needs compressed RLE in every result.
    """
    if cols is None:
        return None
    from deteval.jit import run_tasks

    # numpy releases the GIL in each: side by side on threads
    (image, img_found), (category, cat_found) = run_tasks([
        partial(gt.images.lookup, cols["image_id"]), partial(gt.categories.lookup, cols["category_id"]),
    ])  # fmt: skip
    if not (img_found.all() and cat_found.all()):
        return None  # an error, or a warning: the general reader's
    boxes, has_bbox, masks = cols["bbox"], cols["has_bbox"], cols.get("masks")
    if iou_type == "obb":  # the scanner's "bbox" holds the oriented boxes (N, 5); negative sizes are accepted
        return detections_from_columns(name, image, category, cols["score"], "obb", None, obb=boxes)
    if iou_type == "keypoints":
        has_bbox = np.asarray(has_bbox)
        if cols["n"] == 0 or (has_bbox[0] and not has_bbox.all()):  # the general reader names a missing box
            return None
        if has_bbox[0] and ((boxes[:, 2] < 0) | (boxes[:, 3] < 0)).any():
            return None
        # loadRes's bbox branch (the given boxes and their w*h) where the first result has one, else the keypoints'
        branch = "bbox" if has_bbox[0] else "keypoints"
        boxes = boxes if has_bbox[0] else None
        return detections_from_columns(name, image, category, cols["score"], branch, boxes, keypoints=cols["keypoints"])
    if ((boxes[:, 2] < 0) | (boxes[:, 3] < 0)).any():
        return None
    branch = "bbox"
    if masks is not None:
        has_bbox = np.asarray(has_bbox)
        branch = loadres_branch(bool(cols["n"] == 0 or has_bbox[0]), True, False)
        if branch == "bbox" and not has_bbox.all():  # every box needed: the general reader names the first missing
            return None
    return detections_from_columns(name, image, category, cols["score"], branch, boxes, has_bbox, masks)
