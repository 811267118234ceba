"""YOLO label and prediction folders (ultralytics' text format) into containers, and into COCO's records.

Labels: one ``<stem>.txt`` per image, each non-blank line ``class cx cy w h`` normalised to [0, 1]; an empty
file is an image without objects; the images are the folder's ``*.txt`` files, by sorted stem.
Predictions: one ``<stem>.txt`` per image as ultralytics writes them with ``save_txt=True, save_conf=True``
(``class cx cy w h conf``); a missing or empty file is an image without predictions; a prediction file whose
stem has no label file is an :class:`~deteval.errors.InputError` naming it.

Sizes (``image_sizes``: a JSON file ``{"<stem>": [width, height]}``, such a mapping, or the images' folder,
whose headers give them) turn normalised
boxes into pixels as ultralytics does, in float64: ``x1 = W*(cx - w/2)``, ``y1 = H*(cy - h/2)``,
``x2 = W*(cx + w/2)``, ``y2 = H*(cy + h/2)``; without sizes, W = H = 1 (the normalised boxes).
COCO's records (:func:`coco_records`): ``bbox = [W*(cx - w/2), H*(cy - h/2), W*w, H*h]``,
``area = (W*w)*(H*h)``, ``iscrowd 0``, category id = class index, annotation ids from 1 in file order
(files by sorted stem), image ids from 1 by sorted stem, results with ``score = conf``.

Class names: ``names`` (a file of one name per line, line i = class i; a ``data.yaml``'s ``names`` as a
list or an index mapping; or a list). With names, the classes are ``0 .. len(names) - 1`` and a class
index beyond them is an error; without, the classes are those the labels name, and predictions of
other classes are dropped (no protocol scores a class without labels; ultralytics ignores them too).

Rules (each breach an InputError naming the file and line): a label line has 5 fields, a prediction line 6;
every field is a finite number; the class is a non-negative integer (``3`` or ``3.0``); ``cx cy w h``
lie in [0, 1] within :data:`TOLERANCE` (printed values rounded to 6 digits may pass 1 by a few 1e-7).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deteval.errors import InputError
from deteval.io.json_source import read_bytes, read_json
from deteval.io.voc_rows import load_names, read_text
from deteval.types import Detections, GroundTruth, IdTable

__all__ = [
    "TOLERANCE",
    "YoloSet",
    "coco_records",
    "is_yolo_folder",
    "load_yolo",
    "read_image_sizes",
    "read_names",
    "read_yolo",
    "yolo_containers",
]

TOLERANCE = 1e-5  # how far outside [0, 1] a normalised coordinate may lie (rounding of printed values)


@dataclass(frozen=True)
class Rows:
    """One folder's rows: image index (into the stems), class index, normalised ``cx cy w h``, conf (preds)."""

    image: np.ndarray  # int64 (N,)
    cls: np.ndarray  # int64 (N,)
    xywhn: np.ndarray  # float64 (N, 4)
    conf: np.ndarray | None  # float64 (N,), predictions only
    files: tuple[tuple[int, str], ...]  # (first row, file) per non-empty file, for error messages


@dataclass(frozen=True)
class YoloSet:
    """A label folder, its prediction folder, sizes and names, as read (normalised numbers, file order)."""

    stems: tuple[str, ...]  # sorted
    labels: Rows
    preds: Rows
    width: np.ndarray | None  # float64 (I,), per stem; None: no sizes (normalised boxes)
    height: np.ndarray | None
    names: tuple[str, ...] | None
    label_source: str = "<labels>"
    pred_source: str = "<predictions>"

    def classes(self) -> np.ndarray:
        """int64: the evaluated classes (0 .. len(names) - 1 with names, else those the labels name)."""
        if self.names is not None:
            return np.arange(len(self.names), dtype=np.int64)
        return np.unique(self.labels.cls)

    def corners(self, rows: Rows) -> np.ndarray:
        """float64 (N, 4) ``x1 y1 x2 y2`` in pixels (normalised without sizes), ultralytics' formulas."""
        cx, cy, w, h = rows.xywhn.T
        W, H = self.scale(rows)
        return np.stack([W * (cx - w / 2), H * (cy - h / 2), W * (cx + w / 2), H * (cy + h / 2)], axis=1)

    def scale(self, rows: Rows) -> tuple[np.ndarray, np.ndarray]:
        if self.width is None:
            one = np.ones(len(rows.image))
            return one, one
        return self.width[rows.image], self.height[rows.image]


def is_yolo_folder(path: Any) -> bool:
    """Whether ``path`` names a folder (YOLO labels or predictions are folders of ``.txt`` files)."""
    return isinstance(path, (str, Path)) and Path(path).is_dir()


# ---------------------------------------------------------------- reading


def _read_folder(folder: Path, stems: Sequence[str], ncols: int, role: str, known: set[str] | None) -> Rows:
    """The rows of ``folder/<stem>.txt`` for each stem (a missing file: no rows); ``known``: the stems allowed."""
    present = set(_txt_stems(folder))
    if known is not None:
        for stem in sorted(present - known):
            rule = f"a {role} file whose image has no label file (an image without objects needs an empty one)"
            raise InputError(str(folder / f"{stem}.txt"), None, rule)
    paths, texts, image_of = [], [], []
    base = str(folder)
    for i, stem in enumerate(stems):
        if stem in present:
            path = os.path.join(base, stem + ".txt")
            paths.append(path)
            texts.append(_read(path))
            image_of.append(i)
    values, counts = _parse(texts, ncols)
    if values is None:  # a bad line somewhere: find the first, file by file
        for path, text in zip(paths, texts):
            if text.split():
                _bad_line(Path(path), ncols, role, must=False)
        raise InputError(str(folder), None, f"lines must be '{FIELDS[ncols]}'")  # pragma: no cover
    image = np.repeat(np.asarray(image_of, np.int64), counts)
    starts = np.cumsum(counts) - counts
    where = tuple((int(starts[k]), str(paths[k])) for k in np.flatnonzero(counts))
    rows = Rows(
        image=image,
        cls=np.zeros(0, np.int64),
        xywhn=values[:, 1:5],
        conf=values[:, 5].copy() if ncols == 6 else None,
        files=tuple(where),
    )
    _check_values(rows, values, ncols, role)
    return Rows(rows.image, values[:, 0].astype(np.int64), rows.xywhn, rows.conf, rows.files)


FIELDS = {5: "class cx cy w h", 6: "class cx cy w h conf"}


def _txt_stems(folder: Path) -> list[str]:
    """The stems of the folder's ``*.txt`` files, sorted (as strings: no Path objects for 10,000s of files)."""
    try:
        with os.scandir(folder) as entries:
            return sorted(e.name[:-4] for e in entries if e.name.endswith(".txt"))
    except OSError as exc:
        raise InputError(str(folder), None, f"cannot list the folder: {exc.strerror or exc}") from None


def _read(path: str) -> str:
    """A file's text (UTF-8, a BOM dropped); errors as :func:`deteval.io.voc_rows.read_text` words them."""
    raw = read_bytes(path, "YOLO", json_text=False)  # bounded: a device or a pipe named .txt cannot fill memory
    try:
        return bytes(raw[:]).decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(path, None, f"not UTF-8 text ({e.reason} at byte {e.start})") from None


def _parse(texts: list[str], ncols: int) -> tuple[np.ndarray | None, np.ndarray]:
    """``(values (N, ncols) float64, rows per text)`` of the texts' non-blank lines; ``(None, ...)`` when a line
    is not ``ncols`` numbers. numpy's C reader parses every file's text at once (as Python's ``float``
    rounds); the rows per file are the lines counted, blank lines counted again only where there are some."""
    counts = np.array([t.count("\n") + (len(t) > 0 and not t.endswith("\n")) for t in texts], np.int64)
    if not counts.sum():
        return np.zeros((0, ncols)), counts
    joined = "".join(t if not t or t.endswith("\n") else t + "\n" for t in texts)
    try:
        values = np.loadtxt(io.StringIO(joined), dtype=np.float64, comments=None, ndmin=2, encoding=None)
    except ValueError:
        return None, counts
    if values.shape[1:] != (ncols,) and len(values):
        return None, counts
    if len(values) != counts.sum():  # blank lines (which the reader skips): count the others
        counts = np.array([sum(1 for s in t.splitlines() if s.strip()) for t in texts], np.int64)
        if len(values) != counts.sum():  # a line break the reader and splitlines see differently (a lone \r)
            return None, counts
    return values.reshape(-1, ncols), counts


def _line_rule(tokens: list[str], ncols: int, role: str) -> str | None:
    """What is wrong with one line's tokens (None: nothing)."""
    if len(tokens) != ncols:
        hint = ""
        if ncols == 6 and len(tokens) == 5:
            hint = " (predictions need their confidences: save_conf=True)"
        elif ncols == 5 and len(tokens) == 6:  # a confidence: a predictions folder in the labels' place
            hint = " (a prediction's 6 fields: did you swap PREDS and GT? The order is PREDS GT)"
        elif ncols == 5 and len(tokens) > 5 and len(tokens) % 2 == 1:
            hint = " (a segment's polygon: detection labels are boxes)"
        return f"{len(tokens)} fields; a {role} line is '{FIELDS[ncols]}'{hint}"
    try:
        values = [float(t) for t in tokens]
    except ValueError:
        return f"not a number in '{' '.join(tokens)}'"
    return _value_rule(np.array(values), ncols)


def _value_rule(v: np.ndarray, ncols: int) -> str | None:
    if not np.isfinite(v).all():
        return "a field is not finite"
    if v[0] < 0 or v[0] != np.floor(v[0]) or v[0] > np.iinfo(np.int32).max:
        return f"the class must be a non-negative integer, got {v[0]!r}"
    box = v[1:5]
    if (box < -TOLERANCE).any() or (box > 1 + TOLERANCE).any():
        return f"cx cy w h must be normalised to [0, 1], got {' '.join(f'{x:g}' for x in box)}"
    return None


def _check_values(rows: Rows, values: np.ndarray, ncols: int, role: str) -> None:
    if not len(values):
        return
    cls, box = values[:, 0], values[:, 1:5]
    bad = ~np.isfinite(values).all(axis=1)
    bad |= (cls < 0) | (cls != np.floor(cls)) | (cls > np.iinfo(np.int32).max)
    bad |= ((box < -TOLERANCE) | (box > 1 + TOLERANCE)).any(axis=1)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        _raise_at(rows, row, ncols, role)


def _raise_at(rows: Rows, row: int, ncols: int, role: str) -> None:
    """The InputError of a bad row: its file and line (lines are recounted only here)."""
    starts = [s for s, _ in rows.files]
    k = int(np.searchsorted(starts, row, side="right")) - 1
    start, file = rows.files[k]
    _bad_line(Path(file), ncols, role, nth=row - start)


def _bad_line(path: Path, ncols: int, role: str, nth: int | None = None, must: bool = True) -> None:
    """Raise the error of ``path``'s first bad line (or of its ``nth`` non-blank line); ``must``: one is bad."""
    k = -1
    for number, line in enumerate(read_text(path).splitlines(), 1):
        tokens = line.split()
        if not tokens:
            continue
        k += 1
        rule = _line_rule(tokens, ncols, role)
        if rule is not None and path.name == "classes.txt":
            rule += " (a names file? give it as names (--names), outside the folder)"
        if rule is not None and (nth is None or k == nth):
            raise InputError(str(path), f"line {number}", rule)
    if must:
        raise InputError(str(path), None, f"lines must be '{FIELDS[ncols]}'")  # pragma: no cover


def read_image_sizes(sizes: Any, stems: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(width, height)`` float64 per stem from a JSON file ``{"<stem>": [width, height]}``, such a mapping, or
    a folder of the images (their headers: :mod:`deteval.io.image_sizes`)."""
    source = "image_sizes"
    if isinstance(sizes, (str, Path)) and Path(sizes).is_dir():
        from deteval.io.image_sizes import folder_sizes

        source, sizes = str(sizes), folder_sizes(str(sizes), stems)
    elif isinstance(sizes, (str, Path)):
        sizes, source = read_json(sizes, "image sizes")
    if not isinstance(sizes, Mapping):
        raise InputError(source, None, 'image sizes must be a JSON object {"<stem>": [width, height], ...}')
    wh = np.empty((len(stems), 2))
    for i, stem in enumerate(stems):
        v = sizes.get(stem)
        if v is None:
            raise InputError(source, repr(stem), "no size for this image (its label file exists)")
        try:
            w, h = (float(x) for x in v)
        except (TypeError, ValueError):
            raise InputError(source, repr(stem), f"a size is [width, height], got {v!r}") from None
        if not (np.isfinite(w) and np.isfinite(h) and w > 0 and h > 0):
            raise InputError(source, repr(stem), f"width and height must be finite and > 0, got {v!r}")
        wh[i] = w, h
    return wh[:, 0].copy(), wh[:, 1].copy()


def read_names(names: Any) -> tuple[str, ...]:
    """Class names: a list, a file of one name per line (line i = class i), or a data.yaml's ``names``."""
    if isinstance(names, (list, tuple)):
        out = tuple(str(n) for n in names)
    else:
        path = Path(names)
        out = _yaml_names(path) if path.suffix in (".yaml", ".yml") else tuple(load_names(path))
    if not out or len(set(out)) != len(out):
        raise InputError("names", None, f"class names must be distinct and at least one, got {list(out)}")
    return out


def _yaml_names(path: Path) -> tuple[str, ...]:
    """A data.yaml's ``names``: a list (flow ``[a, b]`` or block ``- a``) or a mapping ``0: a`` of indices 0..n-1.

    Read with PyYAML where it is installed, else by the common forms' rules.
    """
    text = read_text(path)
    try:
        import yaml

        data = yaml.safe_load(text)
        value = data.get("names") if isinstance(data, dict) else None
    except ImportError:
        value = _names_without_yaml(text)
    except Exception as exc:  # yaml.YAMLError: its message names the line
        raise InputError(str(path), None, f"not valid YAML: {exc}") from None
    if isinstance(value, dict):
        keys = sorted(value)
        if keys != list(range(len(keys))):
            raise InputError(str(path), "names", f"class indices must be 0 .. n-1, got {keys}")
        value = [value[k] for k in keys]
    if not isinstance(value, list):
        raise InputError(str(path), "names", "needs a list of class names or a mapping index: name")
    return tuple(str(v) for v in value)


def _names_without_yaml(text: str) -> Any:
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if not line.startswith("names:"):
            continue
        rest = line[len("names:") :].split(" #")[0].strip()
        if rest.startswith("["):
            return [_unquote(s) for s in rest.strip("[]").split(",") if s.strip()]
        items: list[str] = []
        mapping: dict[int, str] = {}
        for sub in lines[n + 1 :]:
            s = sub.split(" #")[0].strip()
            if not s:
                continue
            if not sub[:1].isspace() and not s.startswith("-"):
                break
            if s.startswith("-"):
                items.append(_unquote(s[1:]))
            elif ":" in s:
                k, v = s.split(":", 1)
                mapping[int(k)] = _unquote(v)
        return mapping or items
    return None


def _unquote(s: str) -> str:
    s = s.strip()
    return s[1:-1] if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"" else s


def read_yolo(preds: Any, labels: Any, image_sizes: Any = None, names: Any = None) -> YoloSet:
    """A label folder and its prediction folder (``preds`` None: no predictions) as :class:`YoloSet`."""
    label_dir = Path(labels)
    if not label_dir.is_dir():
        raise InputError(str(labels), None, "expected a folder of YOLO label .txt files (class cx cy w h)")
    stems = tuple(_txt_stems(label_dir))
    if not stems:
        raise InputError(str(labels), None, "the label folder holds no .txt file")
    label_rows = _read_folder(label_dir, stems, 5, "label", None)
    if preds is None:
        pred_rows = Rows(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 4)), np.zeros(0), ())
    else:
        pred_dir = Path(preds)
        if not pred_dir.is_dir():
            raise InputError(str(preds), None, "expected a folder of YOLO prediction .txt files (class cx cy w h conf)")
        pred_rows = _read_folder(pred_dir, stems, 6, "prediction", set(stems))
    width = height = None
    if image_sizes is not None:
        width, height = read_image_sizes(image_sizes, stems)
    class_names = None if names is None else read_names(names)
    if class_names is not None:
        for rows, role in ((label_rows, "label"), (pred_rows, "prediction")):
            over = np.flatnonzero(rows.cls >= len(class_names))
            if len(over):
                _raise_class(rows, int(over[0]), len(class_names), role)
    return YoloSet(stems, label_rows, pred_rows, width, height, class_names, str(labels), str(preds))


def _raise_class(rows: Rows, row: int, n: int, role: str) -> None:
    starts = [s for s, _ in rows.files]
    start, file = rows.files[int(np.searchsorted(starts, row, side="right")) - 1]
    k = -1
    for number, line in enumerate(read_text(Path(file)).splitlines(), 1):
        if line.split():
            k += 1
            if k == row - start:
                raise InputError(file, f"line {number}", f"class {rows.cls[row]} is not among the {n} names")


# ---------------------------------------------------------------- containers and COCO records


def yolo_containers(ys: YoloSet) -> tuple[Detections, GroundTruth]:
    """Containers of boxes ``x1 y1 x2 y2`` (``box_format="xyxy"``, pixels with sizes, else normalised).

    Categories: the class indices (:meth:`YoloSet.classes`), named by ``names`` where given; images: the
    stems (sorted), with their sizes. Predictions of a class outside the categories are dropped.
    """
    classes = ys.classes()
    categories = IdTable(classes, None if ys.names is None else list(ys.names))
    images = IdTable(np.array(ys.stems), None, ys.height, ys.width)
    lab, pr = ys.labels, ys.preds
    gt_boxes = ys.corners(lab)
    W, H = ys.scale(lab)
    n = len(lab.image)
    gt = GroundTruth(
        image=lab.image.astype(np.int32),
        category=categories.lookup(lab.cls)[0].astype(np.int32),
        boxes=gt_boxes,
        area=(W * lab.xywhn[:, 2]) * (H * lab.xywhn[:, 3]),
        crowd=np.zeros(n, bool),
        ignore=np.zeros(n, bool),
        difficult=np.zeros(n, bool),
        ann_id=np.arange(1, n + 1, dtype=np.int64),
        images=images,
        categories=categories,
        box_format="xyxy",
        source=ys.label_source,
    )
    cat, found = categories.lookup(pr.cls)
    keep = np.flatnonzero(found)
    boxes = ys.corners(pr)[keep]
    W, H = ys.scale(pr)
    dets = Detections(
        image=pr.image[keep].astype(np.int32),
        category=cat[keep].astype(np.int32),
        boxes=boxes,
        score=pr.conf[keep].astype(np.float64),
        area=((W * pr.xywhn[:, 2]) * (H * pr.xywhn[:, 3]))[keep],
        box_format="xyxy",
        source=ys.pred_source,
    )
    return dets, gt


def coco_records(ys: YoloSet) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``(results, ground truth)``: COCO's results list and instances dict of the same files (module docstring).

    Image ids from 1 by sorted stem (``file_name``: the stem), categories the class indices (named by
    ``names``, else ``"<index>"``); the rows as numbers, in file order.
    """
    classes = ys.classes()
    cat_names = ys.names if ys.names is not None else tuple(str(c) for c in classes)
    images = []
    for i, stem in enumerate(ys.stems):
        rec: dict[str, Any] = {"id": i + 1, "file_name": stem}
        if ys.width is not None:
            rec["width"], rec["height"] = _number(ys.width[i]), _number(ys.height[i])
        images.append(rec)
    lab, pr = ys.labels, ys.preds
    gt_boxes = _coco_boxes(ys, lab)
    annotations = [
        {"id": k + 1, "image_id": int(lab.image[k]) + 1, "category_id": int(lab.cls[k]),
         "bbox": gt_boxes[k].tolist(), "area": float(gt_boxes[k, 2] * gt_boxes[k, 3]), "iscrowd": 0}
        for k in range(len(lab.image))
    ]  # fmt: skip
    pr_boxes = _coco_boxes(ys, pr)
    results = [
        {"image_id": int(pr.image[k]) + 1, "category_id": int(pr.cls[k]), "bbox": pr_boxes[k].tolist(),
         "score": float(pr.conf[k])}
        for k in range(len(pr.image))
    ]  # fmt: skip
    categories = [{"id": int(c), "name": cat_names[i if ys.names is None else int(c)]} for i, c in enumerate(classes)]
    return results, {"images": images, "annotations": annotations, "categories": categories}


def _coco_boxes(ys: YoloSet, rows: Rows) -> np.ndarray:
    """float64 (N, 4): ``[W*(cx - w/2), H*(cy - h/2), W*w, H*h]``."""
    cx, cy, w, h = rows.xywhn.T
    W, H = ys.scale(rows)
    return np.stack([W * (cx - w / 2), H * (cy - h / 2), W * w, H * h], axis=1)


def _number(v: float) -> int | float:
    return int(v) if float(v).is_integer() else float(v)


@dataclass(frozen=True)
class YoloFiles:
    """A COCO dataset as YOLO's files, for the command line to write: each label and prediction file's text
    by file stem, the class names (one per line) and the image sizes (JSON)."""

    labels: dict[str, str]
    names: str
    sizes: str
    preds: dict[str, str] | None


def yolo_files_of_coco(gt_path: Any, results_path: Any = None) -> YoloFiles:
    """A COCO instances file as a YOLO label folder's files (and a results file as a prediction folder's).

    One ``<stem>.txt`` per image (the stem of its ``file_name``), lines ``class cx cy w h`` with
    ``cx = (x + w/2) / W``, ``cy = (y + h/2) / H``, ``w / W``, ``h / H`` in float64 (``repr``), the class the
    category's index among the sorted category ids; crowd annotations are left out. The names (one per line,
    by class index) and the sizes (``{"<stem>": [width, height]}``) come as texts of their own.
    """
    gt = _json_file(gt_path)
    images = gt.get("images") if isinstance(gt, dict) else None
    if not isinstance(images, list):
        raise InputError(str(gt_path), None, "a COCO instances file needs an 'images' list")
    stem_of, sizes = {}, {}
    for k, img in enumerate(images):
        try:
            stem, W, H = Path(str(img["file_name"])).stem, float(img["width"]), float(img["height"])
        except (KeyError, TypeError, ValueError):
            rule = "YOLO needs each image's file_name, width and height"
            raise InputError(str(gt_path), f"images[{k}]", rule) from None
        if stem in sizes:
            raise InputError(str(gt_path), f"images[{k}]", f"file name stem {stem!r} repeats: one label file per image")
        if not (W > 0 and H > 0):
            raise InputError(str(gt_path), f"images[{k}]", "width and height must be > 0")
        stem_of[img["id"]] = stem
        sizes[stem] = [_number(W), _number(H)]
    cats = sorted(c["id"] for c in gt.get("categories", []))
    index = {c: i for i, c in enumerate(cats)}
    names = {c["id"]: str(c.get("name", c["id"])) for c in gt.get("categories", [])}
    lines: dict[str, list[str]] = {s: [] for s in sizes}
    for k, a in enumerate(gt.get("annotations", [])):
        if a.get("iscrowd", 0):
            continue
        lines[_stem(stem_of, a, gt_path, "annotations", k)].append(_yolo_line(a, index, sizes, stem_of, gt_path, k))
    labels = {stem: "".join(r + "\n" for r in rows) for stem, rows in lines.items()}
    names_text, sizes_text = "".join(names[c] + "\n" for c in cats), json.dumps(sizes) + "\n"
    if results_path is None:
        return YoloFiles(labels, names_text, sizes_text, None)
    results = _json_file(results_path)
    if not isinstance(results, list):
        raise InputError(str(results_path), None, "a COCO results file is a list of detections")
    preds: dict[str, list[str]] = {}
    for k, r in enumerate(results):
        stem = _stem(stem_of, r, results_path, "results", k)
        line = _yolo_line(r, index, sizes, stem_of, results_path, k)
        preds.setdefault(stem, []).append(f"{line} {float(r['score'])!r}")
    pred_texts = {stem: "".join(r + "\n" for r in rows) for stem, rows in preds.items()}
    return YoloFiles(labels, names_text, sizes_text, pred_texts)


def _json_file(path: Any) -> Any:
    return read_json(path, "COCO")[0]


def _stem(stem_of: dict, rec: dict, source: Any, what: str, k: int) -> str:
    try:
        return stem_of[rec["image_id"]]
    except (KeyError, TypeError):
        raise InputError(str(source), f"{what}[{k}]", "image_id names no image of the ground truth") from None


def _yolo_line(rec: dict, index: dict, sizes: dict, stem_of: dict, source: Any, k: int) -> str:
    try:
        c = index[rec["category_id"]]
        x, y, w, h = (float(v) for v in rec["bbox"])
    except (KeyError, TypeError, ValueError):
        raise InputError(str(source), f"[{k}]", "needs a known category_id and a bbox [x, y, w, h]") from None
    W, H = (float(v) for v in sizes[stem_of[rec["image_id"]]])
    return f"{c} {(x + w / 2) / W!r} {(y + h / 2) / H!r} {w / W!r} {h / H!r}"


def load_yolo_preds(preds: Any, gt: GroundTruth) -> Detections:
    """A prediction folder against ground truth already loaded from a YOLO label folder (its stems, sizes and
    classes): the detections :func:`yolo_containers` gives with the same labels (another model's, for
    ``deteval compare``)."""
    stems = tuple(str(s) for s in gt.images.ids)
    pred_dir = Path(preds)
    if not pred_dir.is_dir():
        raise InputError(str(preds), None, "expected a folder of YOLO prediction .txt files (class cx cy w h conf)")
    rows = _read_folder(pred_dir, stems, 6, "prediction", set(stems))
    none = Rows(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 4)), None, ())
    ys = YoloSet(stems, none, rows, gt.images.width, gt.images.height, None, gt.source, str(preds))
    cat, found = gt.categories.lookup(rows.cls)
    keep = np.flatnonzero(found)
    W, H = ys.scale(rows)
    return Detections(
        image=rows.image[keep].astype(np.int32),
        category=cat[keep].astype(np.int32),
        boxes=ys.corners(rows)[keep],
        score=rows.conf[keep].astype(np.float64),
        area=((W * rows.xywhn[:, 2]) * (H * rows.xywhn[:, 3]))[keep],
        box_format="xyxy",
        source=str(preds),
    )


def load_yolo(preds: Any, labels: Any, image_sizes: Any = None, names: Any = None) -> tuple[Detections, GroundTruth]:
    """:func:`read_yolo` then :func:`yolo_containers`."""
    return yolo_containers(read_yolo(preds, labels, image_sizes, names))
