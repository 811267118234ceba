"""LVIS ground truth: a COCO ground truth plus its federated annotation lists and category frequencies.

An LVIS file is COCO JSON with three more fields, which lvis-api 0.5.3 requires and this reader checks:

- every image's ``neg_category_ids`` (categories verified absent from it) and
  ``not_exhaustive_category_ids`` (categories whose instances in it are not all annotated);
- every category's ``frequency``: ``"r"`` (rare), ``"c"`` (common) or ``"f"`` (frequent).

The JSON is parsed once; the COCO part goes through :func:`deteval.io.coco_json.ground_truth_of_json`
(the same checks and containers as ``--protocol coco``), the extras are read here. A repeated image
id takes its last record's lists, as lvis-api's id -> record dict does.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval.errors import InputError
from deteval.io.coco import load_coco_results
from deteval.io.coco_json import ground_truth_of_json
from deteval.io.json_source import python_value, read_json
from deteval.types import Detections, GroundTruth, sorted_unique, take_rows

__all__ = ["FREQUENCIES", "Federated", "LvisGroundTruth", "load_lvis_gt", "load_lvis_pair"]

FREQUENCIES = ("r", "c", "f")  # lvis-api's img_count_lbl: index 0, 1, 2 is APr, APc, APf


@dataclass(frozen=True)
class Federated:
    """Per-image category lists (CSR over the image table's dense indices) and per-category frequency."""

    neg_offsets: np.ndarray  # int64 (n_images + 1,)
    neg_category: np.ndarray  # int32: category indices of each image's neg_category_ids
    nel_offsets: np.ndarray  # int64 (n_images + 1,)
    nel_category: np.ndarray  # int32: category indices of each image's not_exhaustive_category_ids
    frequency: np.ndarray  # int8 (n_categories,): index into FREQUENCIES

    def pair_keys(self, which: str, n_cat: int) -> np.ndarray:
        """The sorted ``image * n_cat + category`` keys of ``which`` ("neg" or "nel") lists, int64."""
        neg = which == "neg"
        offsets, cats = (self.neg_offsets, self.neg_category) if neg else (self.nel_offsets, self.nel_category)
        image = np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))
        return sorted_unique(image * n_cat + cats)


@dataclass(frozen=True)
class LvisGroundTruth(GroundTruth):
    """A :class:`GroundTruth` with LVIS's federated lists (:class:`Federated`)."""

    federated: Federated | None = None


def _record(listname: str, index: int, rec: Any) -> str:
    rid = rec.get("id") if isinstance(rec, dict) else None
    return f"{listname}[{index}]" + (f" (id={rid!r})" if rid is not None else "")


def _frequencies(data: dict, gt: GroundTruth, name: str) -> np.ndarray:
    codes = []
    for i, cat in enumerate(data["categories"]):
        f = cat.get("frequency") if isinstance(cat, dict) else None
        if f not in FREQUENCIES:
            got = "none" if f is None else repr(f)
            rule = f"an LVIS category needs a 'frequency' of 'r', 'c' or 'f' (rare, common, frequent), got {got}"
            raise InputError(name, _record("categories", i, cat), rule)
        codes.append(FREQUENCIES.index(f))
    k, _ = gt.categories.lookup(np.array([cat["id"] for cat in data["categories"]]))
    freq = np.zeros(len(gt.categories), np.int8)
    freq[k] = codes  # a repeated category id: the last record wins, as in the category table
    return freq


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _lists(data: dict, gt: GroundTruth, name: str, key: str) -> tuple[np.ndarray, np.ndarray]:
    """One image field (a list of category ids per image) as CSR over image indices; the last record of an id wins."""
    records = data["images"]
    lists = []
    for i, img in enumerate(records):
        ids = img.get(key) if isinstance(img, dict) else None
        if not isinstance(ids, list):
            rule = f"an LVIS image needs {key!r}, a list of category ids" + ("" if ids is None else f", got {ids!r}")
            raise InputError(name, _record("images", i, img), rule)
        lists.append(ids)
    flat = [v for ids in lists for v in ids]
    ok = all(_is_int(v) for v in flat)
    cats, found = np.zeros(0, np.int32), np.ones(0, bool)
    if ok and flat:
        cats, found = gt.categories.lookup(np.array(flat, np.int64))
    if not ok or not found.all():
        bad = next((j for j, v in enumerate(flat) if not _is_int(v)), None) if not ok else int(np.argmin(found))
        counts = np.cumsum([len(ids) for ids in lists])
        i = int(np.searchsorted(counts, bad, side="right"))
        rule = f"{key} names {flat[bad]!r}, which is not a category id"
        raise InputError(name, _record("images", i, records[i]), rule)
    n_per = np.array([len(ids) for ids in lists], np.int64)
    image, _ = gt.images.lookup(np.array([img["id"] for img in records]))
    # the last record of each image id: its lists are the image's
    last = np.zeros(len(gt.images), np.int64) - 1
    last[image] = np.arange(len(records))
    starts = np.concatenate([[0], np.cumsum(n_per)])
    keep = last[last >= 0]
    counts = np.zeros(len(gt.images) + 1, np.int64)
    counts[1:][last >= 0] = n_per[keep]
    n_kept = n_per[keep]
    within = np.arange(n_kept.sum()) - np.repeat(np.cumsum(n_kept) - n_kept, n_kept)
    take = np.repeat(starts[keep], n_kept) + within
    return np.cumsum(counts), cats[take].astype(np.int32)


def _unique_ann_ids(data: Any, name: str) -> None:
    """The COCO protocol scores repeated annotation ids as pycocotools does (with a warning); whether
    lvis-api's id lookups repeat them the same way is not tested, so LVIS refuses them."""
    anns = data.get("annotations") if isinstance(data, dict) else None
    if not isinstance(anns, list):
        return  # the COCO reader names what is wrong
    ids = [ann.get("id") if isinstance(ann, dict) else None for ann in anns]
    if all(type(v) is int for v in ids):  # the usual case, in numpy; the loop below names the record
        try:
            arr = np.sort(np.array(ids, np.int64))
        except OverflowError:
            arr = None
        if arr is not None and not (arr[1:] == arr[:-1]).any():
            return
    seen: dict = {}
    for i, (ann, aid) in enumerate(zip(anns, ids)):
        if aid is None or isinstance(aid, list | dict):
            continue
        if aid in seen:
            raise InputError(
                name, _record("annotations", i, ann), f"repeats the id of annotations[{seen[aid]}]; ids must be unique"
            )
        seen[aid] = i


def load_lvis_gt(source: Any, iou_type: str = "bbox", strict: bool = False) -> LvisGroundTruth:
    """Load an LVIS ground truth (a path or the parsed ``dict``) into an :class:`LvisGroundTruth`.

    Raises
    ------
    InputError
        Whatever :func:`deteval.io.coco.load_coco_gt` rejects; a category without a ``frequency``
        of r/c/f; an image without ``neg_category_ids`` or ``not_exhaustive_category_ids`` lists, or
        with an id in them that is not a category's.
    """
    if isinstance(source, LvisGroundTruth):
        return source
    data, name = read_json(source, "ground truth")
    _unique_ann_ids(data, name)
    gt = ground_truth_of_json(data, name, iou_type, strict, lvis_fields=True)
    neg_offsets, neg_category = _lists(data, gt, name, "neg_category_ids")
    nel_offsets, nel_category = _lists(data, gt, name, "not_exhaustive_category_ids")
    federated = Federated(neg_offsets, neg_category, nel_offsets, nel_category, _frequencies(data, gt, name))
    fields = {f: getattr(gt, f) for f in gt.__dataclass_fields__}
    return LvisGroundTruth(**fields, federated=federated)


def load_lvis_pair(
    preds: Any, gt: Any, iou_type: str = "bbox", strict: bool = False, max_dets: int = -1
) -> tuple[Detections, LvisGroundTruth]:
    """:func:`load_lvis_gt`, then the results against it (COCO results, read as pycocotools' ``loadRes``
    reads them, which is what lvis-api's ``LVISResults`` does too); loaded containers pass through.

    Results of categories not in the ground truth are dropped (with the loader's warning) after they
    took their place in ``LVISResults``' cut to the ``max_dets`` highest-scoring results per image
    (-1: no cut): the results of known categories that the cut would drop are dropped here
    (:func:`_cut_with_unknown`), so the protocol's own cut, on what is left, changes nothing.

    A result on an image outside the ground truth is an :class:`InputError` (lvis-api asserts).
    """
    if isinstance(gt, GroundTruth) and not isinstance(gt, LvisGroundTruth):
        raise InputError(getattr(gt, "source", "ground truth"), None, "the lvis protocol needs an LVIS ground truth "
                         "(load_lvis_gt): a GroundTruth has no neg/not-exhaustive lists or frequencies")  # fmt: skip
    gt_loaded = load_lvis_gt(gt, iou_type=iou_type, strict=strict)
    if isinstance(preds, Detections):
        dets = preds
    else:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dets = load_coco_results(preds, gt_loaded, iou_type=iou_type, strict=strict)
        for w in caught:  # as they were, now that the results are read
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
        # only results with unknown categories are read again (the loader skipped those, with its warning)
        skipped = isinstance(preds, list) and len(preds) != len(dets)
        if max_dets >= 0 and (skipped or any(_UNKNOWN_CATEGORIES in str(w.message) for w in caught)):
            dets = _cut_with_unknown(preds, dets, gt_loaded, max_dets)
    if dets.nan_scores:  # ranked last by COCO's protocols, as pycocotools' sorts put them; not shown for lvis-api
        raise InputError(dets.source, None, "a result's score is NaN: the lvis protocol needs numbers")
    return dets, gt_loaded


_UNKNOWN_CATEGORIES = "whose category_id is not in the ground truth"  # the loader's warning


def _cut_with_unknown(preds: Any, dets: Detections, gt: GroundTruth, max_dets: int) -> Detections:
    """``dets`` (the results of known categories, in file order) without those that ``LVISResults``' cut
    drops once the results of unknown categories count in their image's ``max_dets``.

    lvis-api's ``limit_dets_per_image`` keeps, of an image with more than ``max_dets`` results, the first
    ``max_dets`` of Python's stable sort by descending score (ties in file order), whatever their
    category; the unknown ones are dropped after (its evaluation never asks for them).
    """
    data, _ = read_json(preds, "results")
    if isinstance(data, dict):  # a whole COCO dataset of detections, as the loader takes it
        data = data.get("annotations")
    image, found = gt.images.lookup(np.array(python_value([r["image_id"] for r in data])))
    cats = python_value([r["category_id"] for r in data])
    known = np.zeros(len(data), bool)
    ints = [j for j, c in enumerate(cats) if _is_int(c)]  # other ids cannot be categories (the loader said so)
    if ints:
        known[ints] = gt.categories.lookup(np.array([cats[j] for j in ints], np.int64))[1]
    if not found.all() or int(known.sum()) != len(dets):  # not the rows the loader kept: leave them to the protocol
        return dets
    score = np.array([float(v) for v in python_value([r["score"] for r in data])], np.float64)
    # each image's rows by descending score, ties in file order (lexsort is stable), the first max_dets kept
    order = np.lexsort((-score, image))
    ranked = image[order]
    kept = np.empty(len(data), bool)
    kept[order] = np.arange(len(data)) - np.searchsorted(ranked, ranked) < max_dets
    keep = kept[known]
    return dets if keep.all() else take_rows(dets, keep)
