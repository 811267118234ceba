"""COCO columns into the containers: the one place that applies pycocotools' reading rules.

Two readers feed this step: the general one (:mod:`deteval.io.coco_json`, any
JSON, precise errors) and the byte scanner (:mod:`deteval.io.scan`, plain
files, straight into arrays). Each checks its own input and gives columns
whose values are already what ``json.loads`` gives; what is decided *from*
those values (a missing box becomes the mask's extent, loadRes' branch picks
the area, keypoint results' box and area ...) is decided here, once, so the
two readers cannot drift apart.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from deteval.errors import InputError, accepted, warn
from deteval.types import Detections, GroundTruth, IdTable, has_duplicates, last_occurrence, xywh_area

if TYPE_CHECKING:  # the mask module loads numba: only where masks are read
    from deteval.rle import CompressedMasks, Masks

def record_name(listname: str, index: int, rid: object) -> str:
    """How an error names a record: ``annotations[3] (id=4)`` (the general reader's ``_record`` of columns)."""
    rid = rid.tolist() if isinstance(rid, np.generic) else rid
    return f"{listname}[{index}]" + (f" (id={rid!r})" if rid is not None else "")


# fields of LVIS ground truth (on images, on categories) that the COCO protocol does not read
LVIS_IMAGE_FIELDS = ("neg_category_ids", "not_exhaustive_category_ids")
LVIS_CATEGORY_FIELDS = ("frequency",)


def _lvis_fields(found: dict[str, str], name: str, strict: bool) -> None:
    fields = ", ".join(f"'{k}'" for k in found)
    record = next(iter(found.values()))
    rule = (
        f"has LVIS's {fields}, which the COCO protocol does not read (it scores missing labels as "
        "false positives): is this LVIS ground truth? Then use --protocol lvis"
    )
    if strict:
        raise InputError(name, record, rule)
    warn(
        f"{name}: the ground truth has LVIS's {fields} (first: {record}), which the COCO protocol does not "
        "read: unlabelled categories are scored as false positives; for LVIS use --protocol lvis"
    )


def _first_repeat(ids: np.ndarray) -> tuple[int, int, object]:
    """The first image record repeating an id: its index, the index of the record it repeats, the id."""
    first: dict = {}
    for j, v in enumerate(ids.tolist()):
        if v in first:
            return j, first[v], v
        first[v] = j
    raise AssertionError("no repeated id")  # only called where an id repeats


def _repeated_images(ids: np.ndarray, name: str, strict: bool) -> None:
    """pycocotools keys its images by id, so records repeating an id are one image: scored so, but said,
    naming the first repeat (a merged or concatenated dataset, most likely); an error when ``strict``."""
    j, i, v = _first_repeat(ids)
    if strict:
        raise InputError(
            name, f"images[{j}]", f"repeats the id of images[{i}] (id={v!r}); pycocotools scores them as one image"
        )
    count = len(ids) - len(np.unique(ids))
    warn(
        f"{name}: {count} image records repeat an id listed before (images[{j}] repeats images[{i}], "
        f"id={v!r}); each id is scored as one image, as in pycocotools"
    )


@dataclass(eq=False)
class GtColumns:
    """A ground truth file's annotations as columns, in file order, with its image and category tables."""

    images: IdTable  # heights and widths of the first record of each id (-1 where missing)
    categories: IdTable
    ann_id: np.ndarray  # int64, uint64 (ids past 2**63) or str (then numbered 1, 2, ...)
    image_id: np.ndarray  # the user's ids, int64 or str
    category_id: np.ndarray
    bbox: np.ndarray  # float64 (N, 4); zeros where missing
    has_bbox: np.ndarray  # bool (N,)
    area: np.ndarray  # float64 (N,), the given area where has_area
    has_area: np.ndarray  # bool (N,)
    crowd: np.ndarray  # bool (N,)
    ignore: np.ndarray  # bool (N,)
    # mask evaluation: the masks of the kept annotations (their rows, and their images' heights and
    # widths), or None where the scanner declines them (the general reader raises instead)
    segmentations: Callable[[np.ndarray, np.ndarray, np.ndarray], Masks | CompressedMasks | None] | None = None
    keypoints: np.ndarray | None = None  # float64 (N, 3K), keypoint evaluation
    num_keypoints: np.ndarray | None = None  # float64 (N,), NaN where missing
    obb: np.ndarray | None = None  # float64 (N, 5), oriented-box evaluation
    # every image record's id in file order, where some id repeats (None where none does)
    repeated_image_ids: np.ndarray | None = None
    # whether each annotation gives its iscrowd (None: every one does)
    has_crowd: np.ndarray | None = None
    # LVIS fields found: field -> the first record carrying it ("images[3]"), in the order of LVIS_*_FIELDS
    lvis_found: dict[str, str] | None = None


_AREA = threading.local()  # .read False: this thread's caller never reads the ground truth's area


@contextmanager
def area_unread() -> Iterator[None]:
    """In this block (this thread), a ground truth without ``area`` is no oddity: the caller computes its own
    (CrowdPose's xtcocotools takes w*h*0.53), so neither the warning nor ``strict``'s error."""
    old = getattr(_AREA, "read", True)
    _AREA.read = False
    try:
        yield
    finally:
        _AREA.read = old


def _missing_crowd(cols: GtColumns, name: str, strict: bool) -> None:
    i = int(np.argmin(cols.has_crowd))
    accepted(
        name, strict, int((~cols.has_crowd).sum()),
        "annotations have no 'iscrowd', taken as 0 (pycocotools raises KeyError)",
        record_name("annotations", i, cols.ann_id[i]), "missing key 'iscrowd'",
    )  # fmt: skip


def _repeated_ann_ids(ann_id: np.ndarray, name: str, strict: bool) -> np.ndarray:
    """Rows whose id repeats: pycocotools' ``anns`` (id -> record) keeps the last record of an id, while its
    per-image lists keep every record, and evaluation loads each listed id through ``anns``: every record of
    a repeated id is scored as the last one (that one twice or more, the others not at all). Said once, an
    error when ``strict``. Returns, for each row, the row scored in its place."""
    j, i, v = _first_repeat(ann_id)
    rule = f"duplicate id {v!r} (also annotations[{i}])"
    count = len(ann_id) - len(np.unique(ann_id))
    what = (
        "annotations repeat an id listed before; as in pycocotools (whose id lookups keep the last record "
        "of an id) each record of a repeated id is scored as the last record with that id"
    )
    accepted(name, strict, count, what, f"annotations[{j}]", rule)
    _, inverse = np.unique(ann_id, return_inverse=True)
    return last_occurrence(ann_id)[inverse.reshape(-1)]


def _scored_rows(keep: np.ndarray, src: np.ndarray, image: np.ndarray) -> np.ndarray:
    """The rows pycocotools evaluates where annotation ids repeat (``src``: see ``_repeated_ann_ids``): for
    each listed record, in the order its per-image lists are read (image id, then file order), its stand-in,
    where that is listed too."""
    slots = np.flatnonzero(keep & keep[src])
    return src[slots[np.argsort(image[slots], kind="stable")]]


def ground_truth_from_columns(
    cols: GtColumns, name: str, strict: bool = False, lvis_fields: bool = False
) -> GroundTruth | None:
    """The :class:`GroundTruth` of ``cols`` (``None`` where its segmentation reader declines).

    Image records repeating an id are one image, with a :class:`DetevalWarning`; with ``strict`` an
    :class:`~deteval.errors.InputError` naming the repeat and the record it repeats.

    A missing ``area`` is the box's ``w*h``. Annotations whose image or category is not listed are
    dropped with a :class:`DetevalWarning` (pycocotools drops them silently). With masks, a missing
    box is the mask's extent (pycocotools reads no ground-truth box there) and, with the area
    missing too, the area is the mask's. A missing ``num_keypoints`` is the count of labelled ones.

    What pycocotools scores but deteval would rather not guess about gives one :class:`DetevalWarning`
    each (an :class:`~deteval.errors.InputError` with ``strict``): annotation ids that repeat (every
    record of an id is scored as its last record, as pycocotools' id lookups do), a missing ``iscrowd``
    (taken as 0), LVIS's fields; neither of the last two with ``lvis_fields`` (an LVIS protocol's caller,
    which reads those fields and never ``iscrowd``).
    """
    image, img_found = cols.images.lookup(cols.image_id)
    category, cat_found = cols.categories.lookup(cols.category_id)
    keep = img_found & cat_found
    boxes = cols.bbox
    # oriented boxes: a missing area is the oriented box's w*h (hotcoco's rule), not the bbox's
    area = np.where(cols.has_area, cols.area, xywh_area(boxes) if cols.obb is None else obb_area(cols.obb))
    scored = None  # where annotation ids repeat: the rows evaluated, in pycocotools' order
    if cols.ann_id.dtype.kind in "iu" and has_duplicates(cols.ann_id):
        scored = _scored_rows(keep, _repeated_ann_ids(cols.ann_id, name, strict), image)
    masks = None
    if cols.segmentations is not None:
        kept = np.flatnonzero(keep) if scored is None else scored
        masks = cols.segmentations(kept, cols.images.height[image[kept]], cols.images.width[image[kept]])
        if masks is None:
            return None
        boxless = np.flatnonzero(~cols.has_bbox[kept])
        if len(boxless):
            at = kept[boxless]
            boxes[at] = masks.extents(boxless)
            no_area = ~cols.has_area[at]
            area[at[no_area]] = masks.area[boxless[no_area]]  # no box, no area: the mask's
    if cols.repeated_image_ids is not None:  # here, past the decline above: said once, by either reader
        _repeated_images(cols.repeated_image_ids, name, strict)
    if cols.has_crowd is not None and not cols.has_crowd.all() and not lvis_fields:  # LVIS never reads iscrowd
        _missing_crowd(cols, name, strict)
    # oriented boxes take hotcoco's rule (the obb's w*h): no oddity there
    if not cols.has_area.all() and cols.obb is None and getattr(_AREA, "read", True):
        i = int(np.argmin(cols.has_area))
        accepted(
            name, strict, int((~cols.has_area).sum()),
            "annotations have no 'area': the box's w*h is taken (the mask's, with no box; pycocotools raises "
            "KeyError)", record_name("annotations", i, cols.ann_id[i]), "missing key 'area'",
        )  # fmt: skip
    if cols.lvis_found and not lvis_fields:
        _lvis_fields(cols.lvis_found, name, strict)
    rows = slice(None) if scored is None else scored  # slice: the columns themselves, no copies
    if not keep.all():
        rows = keep if scored is None else rows
        warn(
            f"{name}: {int((~img_found).sum())} annotations name an image and "
            f"{int((img_found & ~cat_found).sum())} a category that the ground truth does not list; "
            "they are not evaluated (as in pycocotools)"
        )
    keypoints = num_keypoints = None
    if cols.keypoints is not None:
        counted = (cols.keypoints[:, 2::3] > 0).sum(axis=1)
        keypoints = cols.keypoints[rows]
        num_keypoints = np.where(np.isnan(cols.num_keypoints), counted, cols.num_keypoints)[rows]
    ann_id = cols.ann_id
    if ann_id.dtype.kind == "u":
        # ids past 2**63 (uint64): their ranks as int64, which keep what the kernels read of them, which
        # ids are equal and which is 0
        ranks = np.unique(ann_id, return_inverse=True)[1].reshape(-1).astype(np.int64)
        ann_id = ranks if (ann_id == 0).any() else ranks + 1
    elif ann_id.dtype.kind != "i":
        # pycocotools marks matches with annotation ids; only integers keep its id-0 rule meaningful
        ann_id = np.arange(1, len(ann_id) + 1, dtype=np.int64)
    n_rows = int(keep.sum()) if scored is None else len(rows)
    return GroundTruth(
        image=image[rows],
        category=category[rows],
        boxes=boxes[rows],
        area=area[rows],
        crowd=cols.crowd[rows],
        ignore=cols.ignore[rows],
        difficult=np.zeros(n_rows, dtype=bool),
        ann_id=ann_id[rows],
        images=cols.images,
        categories=cols.categories,
        box_format="xywh",
        source=name,
        masks=masks,
        keypoints=keypoints,
        num_keypoints=num_keypoints,
        obb=None if cols.obb is None else cols.obb[rows],
    )


def obb_area(obb: np.ndarray) -> np.ndarray:
    """The areas ``w*h`` of oriented boxes (N, 5)."""
    return obb[:, 2] * obb[:, 3]


def loadres_branch(has_bbox: bool, has_segmentation: bool, has_keypoints: bool) -> str:
    """Which of pycocotools' ``loadRes`` branches reads all the results, from what the first one has
    (a ``bbox`` that is ``[]`` counts as none): ``"bbox"``, ``"segm"``, ``"keypoints"`` or ``"none"``."""
    if has_bbox:
        return "bbox"
    if has_segmentation:
        return "segm"
    if has_keypoints:
        return "keypoints"
    return "none"


def box_polygon(box: np.ndarray) -> list:
    """An xywh box as the one-part polygon pycocotools gives a box-only result in mask evaluation."""
    x1, y1 = box[0], box[1]
    x2, y2 = x1 + box[2], y1 + box[3]
    return [[x1, y1, x1, y2, x2, y2, x2, y1]]


def detections_from_columns(
    name: str,
    image: np.ndarray,
    category: np.ndarray,
    score: np.ndarray,
    branch: str,
    boxes: np.ndarray | None,
    has_bbox: np.ndarray | None = None,
    masks: Masks | CompressedMasks | None = None,
    keypoints: np.ndarray | None = None,
    obb: np.ndarray | None = None,
) -> Detections:
    """The :class:`Detections` of checked columns (image and category indices into the ground truth's
    tables), boxes and areas as ``branch`` of pycocotools' ``loadRes`` reads them.

    ``"bbox"``: the area is ``w*h``, masks or not (the reason detectron2 drops ``bbox`` from mask
    results). ``"segm"``: the area is the mask's, and a missing box (``has_bbox`` false; zeros in
    ``boxes``) is the mask's extent. ``"keypoints"``: box and area are the extent of all keypoints,
    unlabelled (0, 0) ones included. ``"obb"`` (hotcoco's oriented boxes; no ``bbox``): the area is the
    oriented box's ``w*h``, the box zeros. ``mask_area`` is always the masks' own area.
    """
    if branch == "obb":
        boxes, area = np.zeros((len(obb), 4)), obb_area(obb)
    elif branch == "bbox":
        area = xywh_area(boxes)
    elif branch == "segm":
        boxless = np.flatnonzero(~has_bbox)
        if len(boxless):
            boxes[boxless] = masks.extents(boxless)
        area = masks.area
    else:
        x, y = keypoints[:, 0::3], keypoints[:, 1::3]
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
        masks=masks,
        mask_area=None if masks is None else masks.area,
        keypoints=keypoints,
        obb=obb,
    )
