"""Open Images' files to containers: boxes, image-level labels, detections (CSV), the class hierarchy (JSON).

What the TF Object Detection API's challenge evaluation (``oid_challenge_evaluation.py`` with
``OpenImagesChallengeEvaluator``) reads, and how:

* ground-truth boxes ``ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,
  IsGroupOf,IsDepiction,IsInside`` (``ImageID, LabelName, XMin, XMax, YMin, YMax, IsGroupOf`` are read; a
  non-zero ``IsGroupOf`` is a group-of box, as the reference's ``astype(bool)``);
* image-level labels ``ImageID,Source,LabelName,Confidence``: a row of either confidence says the class
  was verified on the image (``ImageID, LabelName, Confidence`` are read);
* detections ``ImageID,LabelName,Score,XMin,XMax,YMin,YMax``;
* the hierarchy ``{"LabelName": root, "Subcategory": [...]}`` (``bbox_labels_600_hierarchy.json``): every
  node but the root is a class; only ``Subcategory`` edges count (``Part`` is ignored); a class may sit
  under several parents.

The images are those with a box or a label row. Expansion (``oid_hierarchical_labels_expansion.py``):
each box is copied once to every distinct ancestor of its class (the root is none), a label row of
confidence 1 to every ancestor, one of another confidence to every descendant; detections are never
expanded. Without a hierarchy the classes are the labels the ground truth names, unexpanded.

Detections on images that are not in the ground truth, of labels that are not classes, or with
``XMin >= XMax`` or ``YMin >= YMax`` are dropped (neither TP nor FP, as the reference), counted in one
warning. A ground-truth label that is not a class, a missing column, a coordinate or score that is not
a finite number, and a malformed hierarchy are errors naming the file and the line.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deteval.errors import InputError, warn
from deteval.io.csv_scan import CsvTable, read_csv
from deteval.io.json_source import read_json, read_text
from deteval.types import Detections, GroundTruth, IdTable, sorted_unique

TEXTS = ("ImageID", "LabelName")  # the text columns of each file; then its number columns
BOX_NUMBERS = ("XMin", "XMax", "YMin", "YMax", "IsGroupOf")
LABEL_NUMBERS = ("Confidence",)
DETECTION_NUMBERS = ("Score", "XMin", "XMax", "YMin", "YMax")


@dataclass(frozen=True)
class Hierarchy:
    """The class hierarchy: class names (sorted) and, per class index, its ancestors and descendants (CSR)."""

    root: str
    names: np.ndarray  # str (K,), sorted: every non-root node
    anc_offsets: np.ndarray  # int64 (K + 1,)
    ancestors: np.ndarray  # int64: proper ancestors that are classes (never the root), distinct
    desc_offsets: np.ndarray
    descendants: np.ndarray

    def ancestors_of(self, k: int) -> np.ndarray:
        return self.ancestors[self.anc_offsets[k] : self.anc_offsets[k + 1]]

    def descendants_of(self, k: int) -> np.ndarray:
        return self.descendants[self.desc_offsets[k] : self.desc_offsets[k + 1]]


def _csr(sets: list[set[int]]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(sets) + 1, np.int64)
    np.cumsum([len(s) for s in sets], out=offsets[1:])
    flat = np.array([v for s in sets for v in sorted(s)], np.int64)
    return offsets, flat


HIERARCHY_DEPTH = 4096  # JSON levels of a hierarchy file: 2048 classes, each below the last


def load_hierarchy(path: str | Path | dict) -> Hierarchy:
    """The hierarchy from ``path`` (or the loaded dict); :class:`InputError` names the malformed node."""
    name = str(path) if not isinstance(path, dict) else "<hierarchy>"
    if isinstance(path, dict):
        data = path
    else:
        # a chain of nodes nests two JSON levels per node: room for a hierarchy 2048 classes deep
        data, _ = read_json(path, "hierarchy", max_depth=HIERARCHY_DEPTH)
    parents: dict[str, set[str]] = {}
    # (node, where, its parent's label: None for the root, "" for the root's children, which have no class parent)
    stack: list[tuple[Any, str, str | None]] = [(data, "root", None)]
    root = None
    while stack:
        node, where, parent = stack.pop()
        if not isinstance(node, dict) or not isinstance(node.get("LabelName"), str) or not node["LabelName"]:
            raise InputError(name, where, "a hierarchy node must be an object with a non-empty string 'LabelName'")
        label = node["LabelName"]
        subs = node.get("Subcategory", [])
        if not isinstance(subs, list):
            raise InputError(name, where, f"'Subcategory' must be a list of nodes, got {type(subs).__name__}")
        if parent is None:
            root = label
        else:
            parents.setdefault(label, set())
            if parent:
                parents[label].add(parent)
        for i, child in enumerate(subs):
            stack.append((child, f"{where}.Subcategory[{i}]", "" if parent is None else label))
    if not parents:
        raise InputError(name, "root", "the hierarchy names no class below its root")
    names = np.array(sorted(parents), dtype=str)
    index = {n: i for i, n in enumerate(names.tolist())}
    anc: list[set[int]] = [set() for _ in names]
    for i, n in enumerate(names.tolist()):
        todo = list(parents[n])
        while todo:  # the transitive closure, every path up
            p = todo.pop()
            k = index.get(p)
            if k is None or k == i or k in anc[i]:
                continue
            anc[i].add(k)
            todo.extend(parents.get(p, ()))
    desc: list[set[int]] = [set() for _ in names]
    for i, a in enumerate(anc):
        for k in a:
            desc[k].add(i)
    ao, af = _csr(anc)
    do, df = _csr(desc)
    return Hierarchy(str(root), names, ao, af, do, df)


@dataclass(frozen=True)
class OpenImagesGroundTruth(GroundTruth):
    """A :class:`GroundTruth` with Open Images' group-of flags and verified (image, class) pairs."""

    group_of: np.ndarray | None = None  # bool (N,)
    verified: np.ndarray | None = None  # int64, sorted distinct keys image * K + class of the label rows
    display_names: tuple[str, ...] | None = None  # per class, from the class descriptions (else the LabelName)
    expanded: bool = False


def _classes_of(table: CsvTable, codes: np.ndarray, values: np.ndarray, classes: np.ndarray, what: str) -> np.ndarray:
    """Class index of each row; the first row whose label is not a class is an error."""
    pos = np.minimum(np.searchsorted(classes, values), max(len(classes) - 1, 0))
    found = classes[pos] == values if len(classes) else np.zeros(len(values), bool)
    if not found.all():
        bad = np.flatnonzero(~found[codes])
        if len(bad):
            i = int(bad[0])
            rule = f"LabelName {str(values[codes[i]])!r} of a {what} is not a class of the hierarchy"
            raise InputError(table.path, f"line {table.lines[i]}", rule)
    return pos[codes].astype(np.int64)


def _flag_column(table: CsvTable, column: str) -> np.ndarray:
    """A 0/1 column (``IsGroupOf``, a label's ``Confidence``): any other value is an :class:`InputError` naming
    the line (the reference reads ``IsGroupOf=2`` as a group and a ``Confidence`` of 0.5 as neither verified
    positive nor negative: a file that says so is not one the challenge's tools wrote)."""
    values = table.floats(column)
    bad = (values != 0) & (values != 1)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(table.path, f"line {table.lines[i]}", f"{column} must be 0 or 1, got {float(values[i])!r}")
    return values


def _read_descriptions(path: str | Path) -> dict[str, str]:
    """``LabelName,DisplayName`` rows (a header line is optional, as the official file has none)."""
    rows = list(csv.reader(io.StringIO(read_text(path, "class descriptions"), newline="")))
    out: dict[str, str] = {}
    for i, row in enumerate(rows):
        if not row:
            continue
        if len(row) < 2:
            raise InputError(str(path), f"line {i + 1}", "a class description needs LabelName,DisplayName")
        if i == 0 and row[0] == "LabelName":
            continue
        out[row[0]] = row[1]
    return out


def _expand_boxes(cat: np.ndarray, hier: Hierarchy) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the expanded boxes: (source row, class), each row followed by its copies to its ancestors."""
    reps = 1 + np.diff(hier.anc_offsets)[cat]
    src = np.repeat(np.arange(len(cat)), reps)
    j = np.arange(len(src)) - np.repeat(np.cumsum(reps) - reps, reps)  # 0: the row itself; j: its j-th ancestor
    out = cat[src].copy()
    copy = j > 0
    out[copy] = hier.ancestors[hier.anc_offsets[out[copy]] + j[copy] - 1]
    return src, out


def _expand_labels(
    img: np.ndarray, cat: np.ndarray, conf: np.ndarray, hier: Hierarchy
) -> tuple[np.ndarray, np.ndarray]:
    """Label rows expanded: confidence 1 to the ancestors, any other to the descendants (each row kept too)."""
    up = conf == 1
    first = np.where(up, hier.anc_offsets[cat], len(hier.ancestors) + hier.desc_offsets[cat])
    counts = np.where(up, np.diff(hier.anc_offsets)[cat], np.diff(hier.desc_offsets)[cat])
    src = np.repeat(np.arange(len(cat)), counts)
    j = np.arange(len(src)) - np.repeat(np.cumsum(counts) - counts, counts)
    extra = np.concatenate([hier.ancestors, hier.descendants])[first[src] + j]
    return np.concatenate([img, img[src]]), np.concatenate([cat, extra])


def load_openimages_gt(
    boxes: str | Path,
    labels: str | Path | None = None,
    hierarchy: str | Path | dict | Hierarchy | None = None,
    class_names: str | Path | None = None,
    expand: bool = True,
) -> OpenImagesGroundTruth:
    """The ground truth: boxes, verified labels, classes (the hierarchy's, else those named), expanded."""
    hier = hierarchy if isinstance(hierarchy, Hierarchy) or hierarchy is None else load_hierarchy(hierarchy)
    bt = read_csv(boxes, BOX_NUMBERS, TEXTS, other_side=("Score", "detections (a Score column)"))
    b_img, b_img_vals = bt.codes("ImageID")
    b_lab, b_lab_vals = bt.codes("LabelName")
    x1, x2, y1, y2 = (bt.floats(c) for c in ("XMin", "XMax", "YMin", "YMax"))
    group_of = _flag_column(bt, "IsGroupOf") != 0
    if labels is not None:
        lt = read_csv(labels, LABEL_NUMBERS, TEXTS)
        l_img, l_img_vals = lt.codes("ImageID")
        l_lab, l_lab_vals = lt.codes("LabelName")
        conf = _flag_column(lt, "Confidence")
    else:
        lt, conf = None, np.zeros(0)
        l_img, l_lab = np.zeros(0, np.int64), np.zeros(0, np.int64)
        l_img_vals, l_lab_vals = np.zeros(0, str), np.zeros(0, str)
    classes = hier.names if hier is not None else sorted_unique(np.concatenate([b_lab_vals, l_lab_vals])).astype(str)
    b_cat = _classes_of(bt, b_lab, b_lab_vals, classes, "box")
    l_cat = _classes_of(lt, l_lab, l_lab_vals, classes, "label row") if lt is not None else np.zeros(0, np.int64)
    image_ids = sorted_unique(np.concatenate([b_img_vals, l_img_vals])).astype(str)
    b_image = np.searchsorted(image_ids, b_img_vals)[b_img] if len(bt) else np.zeros(0, np.int64)
    l_image = np.searchsorted(image_ids, l_img_vals)[l_img] if len(l_img) else np.zeros(0, np.int64)
    coords = np.stack([x1, y1, x2, y2], axis=1) if len(bt) else np.zeros((0, 4))
    expanded = hier is not None and expand
    if expanded:
        src, b_cat = _expand_boxes(b_cat, hier)
        b_image, coords, group_of = b_image[src], coords[src], group_of[src]
        l_image, l_cat = _expand_labels(l_image, l_cat, conf, hier)
    n_cls = len(classes)
    verified = sorted_unique(l_image.astype(np.int64) * n_cls + l_cat)
    descriptions = _read_descriptions(class_names) if class_names is not None else {}
    n = len(b_cat)
    return OpenImagesGroundTruth(
        image=b_image.astype(np.int32),
        category=b_cat.astype(np.int32),
        boxes=np.ascontiguousarray(coords, np.float64),
        area=(coords[:, 3] - coords[:, 1]) * (coords[:, 2] - coords[:, 0]),
        crowd=np.zeros(n, bool),
        ignore=np.zeros(n, bool),
        difficult=np.zeros(n, bool),
        ann_id=np.arange(n, dtype=np.int64),
        images=IdTable(image_ids),
        categories=IdTable(np.asarray(classes, dtype=str)),
        box_format="xyxy",
        source=str(boxes),
        group_of=group_of,
        verified=verified,
        display_names=tuple(descriptions.get(c, c) for c in classes.tolist()),
        expanded=expanded,
    )


def load_openimages_dets(path: str | Path, gt: OpenImagesGroundTruth) -> Detections:
    """Detections of ``gt``'s images and classes with valid boxes; the others dropped, counted in one warning."""
    t = read_csv(path, DETECTION_NUMBERS, TEXTS, other_side=("IsGroupOf", "ground-truth boxes (an IsGroupOf column)"))
    img, img_vals = t.codes("ImageID")
    lab, lab_vals = t.codes("LabelName")
    score = t.floats("Score")
    x1, x2, y1, y2 = (t.floats(c) for c in ("XMin", "XMax", "YMin", "YMax"))
    img_idx, img_found = gt.images.lookup(img_vals)
    cat_idx, cat_found = gt.categories.lookup(lab_vals)
    on_image, of_class = img_found[img], cat_found[lab]
    valid = (x1 < x2) & (y1 < y2)
    keep = on_image & of_class & valid
    dropped = len(t) - int(keep.sum())
    if dropped:
        parts = [f"{int((~on_image).sum())} on images without ground truth",
                 f"{int((on_image & ~of_class).sum())} of labels that are not classes",
                 f"{int((on_image & of_class & ~valid).sum())} with XMin >= XMax or YMin >= YMax"]  # fmt: skip
        first = int(np.flatnonzero(~keep)[0])
        warn(f"{t.path}: {dropped} detections dropped, as the reference drops them ({'; '.join(parts)}); "
             f"first: line {t.lines[first]}")  # fmt: skip
    boxes = np.stack([x1, y1, x2, y2], axis=1)[keep] if len(t) else np.zeros((0, 4))
    return Detections(
        image=img_idx[img][keep].astype(np.int32),
        category=cat_idx[lab][keep].astype(np.int32),
        boxes=np.ascontiguousarray(boxes, np.float64),
        score=np.ascontiguousarray(score[keep]),
        area=(boxes[:, 3] - boxes[:, 1]) * (boxes[:, 2] - boxes[:, 0]),
        box_format="xyxy",
        source=t.path,
    )


def load_openimages(
    dets: Any,
    boxes: Any,
    labels: str | Path | None = None,
    hierarchy: str | Path | dict | None = None,
    class_names: str | Path | None = None,
    expand: bool = True,
) -> tuple[Detections, OpenImagesGroundTruth]:
    """``(detections, ground truth)`` from the CSV paths (a loaded ground truth or detections pass through)."""
    gt = boxes if isinstance(boxes, OpenImagesGroundTruth) else load_openimages_gt(
        boxes, labels, hierarchy, class_names, expand)  # fmt: skip
    if isinstance(dets, Detections):
        return dets, gt
    return load_openimages_dets(dets, gt), gt


__all__: Sequence[str] = (
    "Hierarchy", "OpenImagesGroundTruth", "load_hierarchy", "load_openimages", "load_openimages_dets",
    "load_openimages_gt",
)  # fmt: skip
