"""PASCAL VOC style files into the columnar containers.

Formats read here (boxes are ``x1 y1 x2 y2``, VOC's inclusive pixel corners,
kept as written: ``box_format="xyxy"``):

* **VOC XML annotations**: a folder of ``<image_id>.xml``, or an image-set
  list file (one image id per line, first token; VOC's ``ImageSets/Main/*.txt``)
  whose XML files are looked up in ``annotations_dir``, else in the VOC layout
  (``VOC2007/Annotations`` for ``VOC2007/ImageSets/Main/test.txt``), else next
  to the list.
  ``<difficult>`` is honoured (absent means 0); ``<part>`` boxes are not objects.
* **comp4 results**: a folder of ``<comp>_det_<set>_<class>.txt`` files
  (``comp4_det_test_aeroplane.txt``), or one such file; lines are
  ``image_id score x1 y1 x2 y2`` and the class is taken from the file name.
* **Per-image text files**: a folder of ``<image_id>.txt``. Ground truth lines
  are ``class x1 y1 x2 y2 [difficult]``, detection lines ``class score x1 y1 x2 y2``.
  ``box_format="xywh"`` reads ``x y w h`` instead.
* **Names file**: one class name per line; its order gives the class indices.

Classes. A class token that is an integer is an index into the names file;
any other token is a class name (which must be in the names file when there is
one). With a names file the categories are its lines, ids ``0..n-1`` in file
order; without one they are the class names seen, sorted (integer ids when every
name is an integer). Image ids are strings (file stems, or ids from a list),
sorted.

Every error names the file, the line (or the object) and the rule broken. Input ``voc_eval.py``
scores is scored (inverted boxes, any integer ``<difficult>``), with one ``DetevalWarning`` per kind
giving the count and the first file and line; ``strict=True`` makes that line an :class:`InputError`.

The files are read into rows by :mod:`deteval.io.voc_xml` and
:mod:`deteval.io.voc_text` (:mod:`deteval.io.voc_rows` holds the rows); this
module makes the tables and containers, and tells the formats apart.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from deteval.errors import InputError, accepted
from deteval.io.voc_rows import Raw, folder_files, load_names, read_image_set
from deteval.io.voc_text import COMP4_PATTERN, raw_comp4, raw_text, swapped_hint
from deteval.io.voc_xml import raw_voc_xml
from deteval.types import Detections, GroundTruth, IdTable
from deteval.vocabulary import FILE_BOX_FORMATS

_INT = re.compile(r"^[+-]?\d+$")

__all__ = [
    "COMP4_PATTERN",
    "detect_format",
    "load_comp4",
    "load_names",
    "load_text_dets",
    "load_text_gt",
    "load_voc",
    "load_voc_xml",
    "read_image_set",
]


def _odd_boxes(boxes: np.ndarray, raw: Raw, box_format: str, what: str, source: str, strict: bool) -> None:
    """Inverted boxes (``x2 < x1`` or ``y2 < y1``; a negative width or height in ``xywh``): voc_eval.py scores
    them (clipped or degenerate detector output), so deteval does, with its arithmetic, and says so once
    (:func:`deteval.errors.accepted`: the count, the first file and line; ``strict``: that line's error).

    Corners are inclusive: ``x2 == x1`` is a box one pixel wide, not an odd one.
    """
    if box_format == "xyxy":
        bad = (boxes[:, 2] < boxes[:, 0]) | (boxes[:, 3] < boxes[:, 1])
        rule, odd = "box has x2 < x1 or y2 < y1", "x2 < x1 or y2 < y1"
    else:
        bad = (boxes[:, 2] < 0) | (boxes[:, 3] < 0)
        rule, odd = "box has a negative width or height", "a negative width or height"
    if not bad.any():
        return
    i = int(np.argmax(bad))
    file, record = raw.where(i)
    starts = [b[0] for b in raw.blocks]
    n_files = len(np.unique(np.searchsorted(starts, np.flatnonzero(bad), side="right")))
    files = f" ({n_files} files)" if n_files > 1 else ""
    what = (
        f"{what} in {source}{files} have a box with {odd}; scored as voc_eval.py scores them "
        "(+1 widths and heights and the union as written, even where they go negative)"
    )
    accepted(file, strict, int(bad.sum()), what, record, f"{rule}, got {boxes[i].tolist()}")


def _odd_difficult(raw: Raw, difficult: np.ndarray, source: str, strict: bool) -> None:
    """XML ``<difficult>`` integers other than 0 and 1: voc_eval.py reads ``int(...)`` then ``astype(bool)``, so a
    non-zero one is difficult; the reader took them so (:mod:`deteval.io.voc_xml`), this says so once."""
    if not raw.odd_difficult:
        return
    row, record, value = raw.odd_difficult[0]
    file, _ = raw.where(row)
    what = (
        f"ground-truth objects in {source} have a <difficult> other than 0 or 1; read as voc_eval.py reads it "
        "(difficult when not 0)"
    )
    accepted(file, strict, len(raw.odd_difficult), what, record, f"<difficult> is {value!r}, not 0 or 1")


def _check_box_format(box_format: str) -> None:
    if box_format not in FILE_BOX_FORMATS:
        raise ValueError(f"box_format must be one of {FILE_BOX_FORMATS}, got {box_format!r}")


# --------------------------------------------------------------------------------------


def _category_table(names: list[str] | None, *label_lists: list) -> IdTable:
    if names is not None:
        return IdTable(np.arange(len(names), dtype=np.int64), names=list(names))
    seen = sorted({lab for labels in label_lists for lab in labels})
    if seen and all(_INT.match(s) for s in seen):
        ids = np.unique(np.array([int(s) for s in seen], dtype=np.int64))
        return IdTable(ids, names=[str(i) for i in ids])
    return IdTable(np.array(seen, dtype=str) if seen else np.array([], dtype=str), names=seen)


def _category_index(raw: Raw, table: IdTable, names: list[str] | None, gt_source: str) -> np.ndarray:
    """Dense category index of each class token; unknown tokens are named with their file and line."""
    labels = raw.labels
    out = np.empty(len(labels), np.int32)
    cache: dict[str, int] = {}
    if names is not None:
        index = {name: i for i, name in enumerate(names)}
    else:
        ids = table.ids
        index = {(str(v) if ids.dtype.kind != "U" else v): i for i, v in enumerate(ids.tolist())}
    for r, lab in enumerate(labels):
        k = cache.get(lab)
        if k is None:
            if names is not None and _INT.match(lab):
                k = int(lab)
                if not 0 <= k < len(names):
                    raise InputError(*raw.where(r), f"class index {k} is outside the names file (0..{len(names) - 1})")
            elif names is None and table.ids.dtype.kind == "i" and _INT.match(lab):
                k = index.get(str(int(lab)), -1)
            else:
                k = index.get(lab, -1)
            if k < 0:
                if names is not None:
                    rule = f"class {lab!r} is not in the names file"
                elif _INT.match(lab):
                    rule = f"class index {lab} needs a names file (the ground truth ({gt_source}) names its classes)"
                else:
                    rule = f"class {lab!r} is not a class of the ground truth ({gt_source})"
                raise InputError(*raw.where(r), rule)
            cache[lab] = k
        out[r] = k
    return out


def _ground_truth(
    raw: Raw, categories: IdTable, names, source: str, box_format: str, strict: bool = False
) -> GroundTruth:
    boxes, difficult = raw.arrays()
    _odd_boxes(boxes, raw, box_format, "ground-truth objects", source, strict)
    _odd_difficult(raw, difficult, source, strict)
    images = IdTable(np.array(sorted(raw.images), dtype=str) if raw.images else np.array([], dtype=str))
    image, _ = images.lookup(np.array(raw.image_ids, dtype=str))
    category = _category_index(raw, categories, names, source)
    return GroundTruth(
        image=image,
        category=category,
        boxes=boxes,
        area=_area(boxes, box_format),
        crowd=np.zeros(len(boxes), bool),
        ignore=np.zeros(len(boxes), bool),
        difficult=difficult.astype(bool),
        ann_id=np.arange(1, len(boxes) + 1, dtype=np.int64),
        images=images,
        categories=categories,
        box_format=box_format,
        source=source,
    )


def _area(boxes: np.ndarray, box_format: str) -> np.ndarray:
    # plain w*h (no +1): VOC itself uses no area ranges
    if box_format == "xyxy":
        return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return boxes[:, 2] * boxes[:, 3]


def _image_index(raw: Raw, gt: GroundTruth) -> np.ndarray:
    ids = np.array(raw.image_ids, dtype=str)
    if gt.images.ids.dtype.kind == "i":
        # COCO ground truth: integer image ids written as text
        bad = [i for i, s in enumerate(raw.image_ids) if not _INT.match(s)]
        if bad:
            w = raw.where(bad[0])
            raise InputError(
                w[0], w[1], f"image id {raw.image_ids[bad[0]]!r} is not an image of the ground truth ({gt.source})"
            )
        ids = np.array([int(s) for s in raw.image_ids], dtype=np.int64)
    image, found = gt.images.lookup(ids)
    if not found.all():
        i = int(np.argmin(found))
        w = raw.where(i)
        raise InputError(w[0], w[1], f"image {raw.image_ids[i]!r} is not an image of the ground truth ({gt.source})")
    return image


def _detections(raw: Raw, gt: GroundTruth, names, source: str, box_format: str, strict: bool = False) -> Detections:
    boxes, score = raw.arrays()
    nan_scores = _odd_numbers(boxes, score, raw, source, strict)
    _odd_boxes(boxes, raw, box_format, "detections", source, strict)
    return Detections(
        image=_image_index(raw, gt),
        category=_category_index(raw, gt.categories, names, gt.source),
        boxes=boxes,
        score=score,
        area=_area(boxes, box_format),
        box_format=box_format,
        source=source,
        nan_scores=nan_scores,
    )


def _odd_numbers(boxes: np.ndarray, score: np.ndarray, raw: Raw, source: str, strict: bool) -> bool:
    """``nan`` and ``inf`` in detection files, which voc_eval.py's ``float`` reads: one warning per kind
    (``strict``: the first line's error). Coordinates are kept (the IoU follows numpy's arithmetic: a NaN
    one makes every overlap NaN, an FP). ``np.argsort(-confidence)`` puts a NaN score after every other:
    it becomes -inf here (in place), the same order where no score is -inf (whether it did is returned);
    NaN beside -inf has no such stand-in, an error."""

    def say(bad: np.ndarray, what: str, rule: str) -> None:
        i = int(np.argmax(bad))
        file, record = raw.where(i)
        accepted(file, strict, int(bad.sum()), f"detections in {source} {what}", record, rule(i))

    if not np.isfinite(boxes).all():
        say(~np.isfinite(boxes).all(axis=1), "have a NaN or infinite coordinate; scored as voc_eval.py scores them "
            "(numpy's arithmetic: a NaN overlap makes the detection an FP)",
            lambda i: f"box is not finite: {boxes[i].tolist()}")  # fmt: skip
    inf = np.isinf(score)
    if inf.any():
        rule = lambda i: f"score is {float(score[i])!r}"  # noqa: E731
        say(inf, "have an infinite score; ranked as a number, as in voc_eval.py", rule)
    nan = np.isnan(score)
    if not nan.any():
        return False
    if (score == -np.inf).any():
        i, j = int(np.argmax(nan)), int(np.argmax(score == -np.inf))
        file, record = raw.where(i)
        other = "{}: {}".format(*raw.where(j))
        raise InputError(file, record, f"score is NaN, and {other} has -inf: deteval cannot rank both as voc_eval.py")
    say(nan, "have a NaN score; ranked last, after every other, as np.argsort puts NaN", lambda i: "score is NaN")
    score[nan] = -np.inf
    return True


def _coco_labels(raw: Raw, gt: GroundTruth, names: list[str] | None) -> list[str]:
    """Class tokens against COCO categories, rewritten as the categories' ids (as text).

    A name is looked up among the category names; an integer is an index into
    ``names`` when given, else a COCO category id.
    """
    ids = gt.categories.ids.tolist()
    by_name = {n: str(i) for n, i in zip(gt.categories.names or [], ids)}
    known = {str(i) for i in ids}
    out = []
    for r, lab in enumerate(raw.labels):
        if _INT.match(lab):
            if names is not None:
                k = int(lab)
                if not 0 <= k < len(names):
                    w = raw.where(r)
                    raise InputError(w[0], w[1], f"class index {k} is outside the names file (0..{len(names) - 1})")
                lab = names[k]
            elif str(int(lab)) in known:
                out.append(str(int(lab)))
                continue
        if lab not in by_name:
            w = raw.where(r)
            raise InputError(w[0], w[1], f"class {lab!r} is not a category of the ground truth ({gt.source})")
        out.append(by_name[lab])
    return out


def _names(names) -> list[str] | None:
    if names is None or isinstance(names, list):
        return names
    if isinstance(names, tuple):
        return list(names)
    return load_names(names)


# --------------------------------------------------------------------------------------
# public loaders


def load_voc_xml(
    source: str | Path,
    *,
    names: str | Path | list[str] | None = None,
    image_set: str | Path | None = None,
    annotations_dir: str | Path | None = None,
    strict: bool = False,
) -> GroundTruth:
    """VOC XML annotations (a folder, or an image-set list file) as :class:`GroundTruth` (``xyxy``).

    ``names`` (a names file or a list) fixes the categories; otherwise they are
    the class names found, sorted. ``image_set`` restricts a folder to the ids
    it lists. Difficult objects have ``difficult=True``. Input voc_eval.py scores but deteval would rather
    not (inverted boxes, ``<difficult>`` other than 0/1) gives one warning each; ``strict``: an error.
    """
    names = _names(names)
    raw = raw_voc_xml(source, image_set, annotations_dir)
    return _ground_truth(raw, _category_table(names, raw.labels), names, str(source), "xyxy", strict)


def load_text_gt(
    folder: str | Path,
    *,
    names: str | Path | list[str] | None = None,
    box_format: str = "xyxy",
    strict: bool = False,
) -> GroundTruth:
    """Per-image text ground truth (``class x1 y1 x2 y2 [difficult]``, one file per image)."""
    _check_box_format(box_format)
    names = _names(names)
    raw = raw_text(folder, "gt", box_format)
    return _ground_truth(raw, _category_table(names, raw.labels), names, str(folder), box_format, strict)


def load_text_dets(
    folder: str | Path,
    gt: GroundTruth,
    *,
    names: str | Path | list[str] | None = None,
    box_format: str = "xyxy",
    strict: bool = False,
) -> Detections:
    """Per-image text detections (``class score x1 y1 x2 y2``) against ``gt``'s images and categories.

    Pass the same ``names`` the ground truth was loaded with (needed when
    classes are written as indices).
    """
    _check_box_format(box_format)
    return _detections(raw_text(folder, "dets", box_format), gt, _names(names), str(folder), box_format, strict)


def load_comp4(
    source: str | Path, gt: GroundTruth, *, names: str | Path | list[str] | None = None, strict: bool = False
) -> Detections:
    """VOC comp4 results (a folder of ``<comp>_det_<set>_<class>.txt``, or one file) against ``gt``."""
    return _detections(raw_comp4(source), gt, _names(names), str(source), "xyxy", strict)


def detect_format(path: str | Path, role: str) -> str:
    """The format of a DETS (``role="dets"``) or GT (``role="gt"``) argument.

    Returns ``"coco"`` (a .json file), ``"voc_xml"`` (a folder of .xml, or an
    image-set list for ground truth), ``"comp4"`` (comp4 results files) or
    ``"text"`` (a folder of per-image .txt files).
    """
    p = Path(path)
    if not p.exists():
        raise InputError(str(p), None, "no such file or folder")
    if p.is_file():
        if p.suffix.lower() == ".json":
            return "coco"
        if role == "dets" and COMP4_PATTERN.match(p.name):
            return "comp4"
        if role == "gt" and p.suffix.lower() == ".txt":
            return "voc_xml"  # an image-set list
        raise InputError(
            str(p),
            None,
            f"cannot tell the format of this {role} file (expected .json, an image-set list or a comp4 file)",
        )
    if role == "gt" and folder_files(p, ".xml"):  # an unreadable folder: the OS error, not "holds no"
        return "voc_xml"
    txt = folder_files(p, ".txt")
    if role == "dets" and any(COMP4_PATTERN.match(f.name) for f in txt):
        return "comp4"
    if txt:
        return "text"
    expected = ".xml annotations or per-image .txt files" if role == "gt" else "comp4 or per-image .txt files"
    raise InputError(str(p), None, f"folder holds no {expected}" + swapped_hint(p, role))


def load_voc(
    dets: str | Path,
    gt: str | Path,
    *,
    names: str | Path | list[str] | None = None,
    image_set: str | Path | None = None,
    box_format: str = "xyxy",
    strict: bool = False,
) -> tuple[Detections, GroundTruth]:
    """Detections and ground truth from VOC-family paths, formats detected by :func:`detect_format`.

    Without a names file the categories are the classes of both sides, so a
    class that only the detections name is evaluated as a class without
    positives. COCO JSON on either side is read with :mod:`deteval.io.coco`
    (its boxes stay ``xywh``; the VOC protocol converts them).
    ``box_format`` applies to per-image text files. ``strict``: input voc_eval.py scores with a warning
    here (inverted boxes, odd ``<difficult>``) is an :class:`InputError` instead.
    """
    _check_box_format(box_format)
    names = _names(names)
    gt_fmt, dt_fmt = detect_format(gt, "gt"), detect_format(dets, "dets")
    if image_set is not None and not (gt_fmt == "voc_xml" and Path(gt).is_dir()):
        raise ValueError(
            "image_set restricts a folder of VOC XML annotations; pass the list itself as the ground truth"
        )
    if gt_fmt == "coco":
        from deteval.io.coco import load_coco_gt
        from deteval.io.coco_columns import area_unread

        with area_unread():  # voc_eval reads no area: a missing one is no oddity here
            gt_obj = load_coco_gt(str(gt), strict=strict)
        if dt_fmt == "coco":
            from deteval.io.coco import load_coco_results

            return load_coco_results(str(dets), gt_obj, strict=strict), gt_obj
        raw_dt = raw_comp4(dets) if dt_fmt == "comp4" else raw_text(dets, "dets", box_format)
        raw_dt.labels = _coco_labels(raw_dt, gt_obj, names)
        fmt = "xyxy" if dt_fmt == "comp4" else box_format
        return _detections(raw_dt, gt_obj, None, str(dets), fmt, strict), gt_obj
    if dt_fmt == "coco":
        raise InputError(
            str(dets), None, "COCO results need COCO ground truth (their image and category ids are COCO's)"
        )
    if gt_fmt == "voc_xml":
        p = Path(gt)
        raw_gt = raw_voc_xml(p, image_set)
        gt_box = "xyxy"
    else:
        raw_gt = raw_text(gt, "gt", box_format)
        gt_box = box_format
    raw_dt = raw_comp4(dets) if dt_fmt == "comp4" else raw_text(dets, "dets", box_format)
    dt_box = "xyxy" if dt_fmt == "comp4" else box_format
    if names is None:
        # tokens of the ground truth's kind (names, or integer ids) join the table; the others are
        # reported by _category_index (an index without a names file)
        gt_int = bool(raw_gt.labels) and all(_INT.match(s) for s in raw_gt.labels)
        table = _category_table(None, raw_gt.labels, [s for s in raw_dt.labels if bool(_INT.match(s)) == gt_int])
    else:
        table = _category_table(names)
    gt_obj = _ground_truth(raw_gt, table, names, str(gt), gt_box, strict)
    return _detections(raw_dt, gt_obj, names, str(dets), dt_box, strict), gt_obj
