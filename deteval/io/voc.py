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

Every error names the file, the line (or the object) and the rule broken.
"""

from __future__ import annotations

import bisect
import io
import re
import xml.parsers.expat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from deteval.errors import InputError
from deteval.types import BOX_FORMATS, Detections, GroundTruth, IdTable

COMP4_PATTERN = re.compile(r"^(?P<comp>.+?)_det_(?P<set>[^_]+)_(?P<cls>.+)\.txt$")
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


# --------------------------------------------------------------------------------------
# raw records: what a file says, before the category and image tables exist


@dataclass
class _Raw:
    """Rows parsed from files: string image ids and class tokens, and where each came from."""

    image_ids: list = field(default_factory=list)
    labels: list = field(default_factory=list)
    boxes: list = field(default_factory=list)  # float64 (n, 4) blocks
    extra: list = field(default_factory=list)  # float64 (n,) blocks: difficult or score
    images: list = field(default_factory=list)  # every image the source lists (ground truth)
    blocks: list = field(default_factory=list)  # (first row, file, records or None), one per file
    n: int = 0

    def add(self, image_ids, labels, file, records, boxes, extra):
        """Rows of one file; ``records=None`` means row i is the file's i-th non-blank line."""
        self.blocks.append((self.n, str(file), records))
        self.image_ids += image_ids
        self.labels += labels
        self.boxes.append(boxes)
        self.extra.append(extra)
        self.n += len(image_ids)

    def where(self, row: int) -> tuple[str, str]:
        """(file, record) of a row, for an error message; line numbers are recounted only then."""
        i = bisect.bisect_right([b[0] for b in self.blocks], row) - 1
        start, file, records = self.blocks[i]
        if records is None:
            records = [f"line {n}" for n, _ in _lines(Path(file))]
        return file, records[row - start]

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        boxes = np.concatenate(self.boxes) if self.boxes else np.zeros((0, 4))
        extra = np.concatenate(self.extra) if self.extra else np.zeros(0)
        return boxes.reshape(-1, 4), extra


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except OSError as e:
        raise InputError(str(path), None, f"cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise InputError(str(path), None, f"not UTF-8 text ({e.reason} at byte {e.start})") from None


def _lines(path: Path) -> list[tuple[int, list[str]]]:
    """(line number, tokens) of every non-blank line."""
    return [(n, s.split()) for n, s in enumerate(_read_text(path).splitlines(), 1) if s.strip()]


def _numbers(tokens: list[list[str]], path: Path, lines: list[int], what: str) -> np.ndarray:
    """Rows of numeric tokens as float64; the first bad line is named."""
    if not tokens:
        return np.zeros((0, len(what.split())))
    try:
        arr = np.array(tokens, dtype=np.float64)
    except ValueError:
        arr = None
    if arr is None or not np.isfinite(arr).all():
        for row, n in zip(tokens, lines):
            for tok, name in zip(row, what.split()):
                try:
                    ok = np.isfinite(float(tok))
                except ValueError:
                    ok = False
                if not ok:
                    raise InputError(str(path), f"line {n}", f"{name} must be a finite number, got {tok!r}")
    return arr


def _check_boxes(boxes: np.ndarray, raw: _Raw, box_format: str) -> None:
    """x2 >= x1 and y2 >= y1 (w, h >= 0 for xywh): VOC corners are inclusive, equal corners are 1 pixel."""
    if box_format == "xyxy":
        bad = (boxes[:, 2] < boxes[:, 0]) | (boxes[:, 3] < boxes[:, 1])
        rule = "box must have x2 >= x1 and y2 >= y1"
    else:
        bad = (boxes[:, 2] < 0) | (boxes[:, 3] < 0)
        rule = "box must have a non-negative width and height"
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(*raw.where(i), f"{rule}, got {boxes[i].tolist()}")


def _check_box_format(box_format: str) -> None:
    if box_format not in BOX_FORMATS:
        raise ValueError(f"box_format must be one of {BOX_FORMATS}, got {box_format!r}")


# --------------------------------------------------------------------------------------
# names and image sets


def load_names(path: str | Path) -> list[str]:
    """Class names, one per line (trailing blank lines allowed); the line order gives the indices."""
    path = Path(path)
    lines = _read_text(path).splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    names: list[str] = []
    seen: dict[str, int] = {}
    for n, s in enumerate(lines, 1):
        name = s.strip()
        if not name:
            raise InputError(str(path), f"line {n}", "blank line inside the names list would shift the class indices")
        if name in seen:
            raise InputError(str(path), f"line {n}", f"duplicate class name {name!r} (also line {seen[name]})")
        seen[name] = n
        names.append(name)
    if not names:
        raise InputError(str(path), None, "names file lists no class")
    return names


def read_image_set(path: str | Path) -> list[str]:
    """Image ids of a VOC image-set file: the first token of each non-blank line."""
    path = Path(path)
    ids: list[str] = []
    seen: dict[str, int] = {}
    for n, tokens in _lines(path):
        if tokens[0] in seen:
            raise InputError(str(path), f"line {n}", f"duplicate image id {tokens[0]!r} (also line {seen[tokens[0]]})")
        seen[tokens[0]] = n
        ids.append(tokens[0])
    return ids


# --------------------------------------------------------------------------------------
# VOC XML


def _parse_voc_xml(path: Path, raw: _Raw, image_id: str) -> None:
    """Objects of one VOC annotation file (only direct ``<object>`` children of the root)."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError(str(path), None, f"cannot read: {e.strerror or e}") from None
    parser = xml.parsers.expat.ParserCreate()
    stack: list[str] = []
    objects: list[dict] = []
    text: list[str] = []

    def start(tag, attrs):
        stack.append(tag)
        if len(stack) == 2 and tag == "object":
            objects.append({"line": parser.CurrentLineNumber})
        text.clear()

    def end(tag):
        # fields of an object: object/name, object/difficult, object/bndbox/<coord>
        depth = len(stack)
        if depth >= 3 and stack[1] == "object":
            obj = objects[-1]
            value = "".join(text).strip()
            if depth == 3 and tag in ("name", "difficult"):
                obj[tag] = (value, parser.CurrentLineNumber)
            elif depth == 4 and stack[2] == "bndbox" and tag in ("xmin", "ymin", "xmax", "ymax"):
                obj[tag] = (value, parser.CurrentLineNumber)
        stack.pop()
        text.clear()

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text.append
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as e:
        raise InputError(
            str(path), f"line {e.lineno}", f"malformed XML: {xml.parsers.expat.ErrorString(e.code)}"
        ) from None

    boxes = np.zeros((len(objects), 4))
    difficult = np.zeros(len(objects))
    labels, records = [], []
    for i, obj in enumerate(objects):
        rec = f"line {obj['line']} (object {i})"
        if "name" not in obj or not obj["name"][0]:
            raise InputError(str(path), rec, "object has no <name>")
        for j, key in enumerate(("xmin", "ymin", "xmax", "ymax")):
            if key not in obj:
                raise InputError(str(path), rec, f"object has no <bndbox>/<{key}>")
            value, line = obj[key]
            try:
                boxes[i, j] = float(value)
            except ValueError:
                boxes[i, j] = np.nan
            if not np.isfinite(boxes[i, j]):
                raise InputError(
                    str(path), f"line {line} (object {i})", f"<{key}> must be a finite number, got {value!r}"
                )
        if "difficult" in obj:
            value, line = obj["difficult"]
            if value not in ("0", "1"):
                raise InputError(str(path), f"line {line} (object {i})", f"<difficult> must be 0 or 1, got {value!r}")
            difficult[i] = float(value)
        labels.append(obj["name"][0])
        records.append(rec)
    raw.add([image_id] * len(objects), labels, path, records, boxes, difficult)


def _xml_files(
    source: Path, image_set: str | Path | None, annotations_dir: str | Path | None
) -> list[tuple[str, Path]]:
    """(image id, xml path) pairs in image-id order of the set, or sorted by file name."""
    if source.is_dir():
        if image_set is None:
            files = sorted(source.glob("*.xml"))
            if not files:
                raise InputError(str(source), None, "folder holds no .xml annotation file")
            return [(f.stem, f) for f in files]
        ids, ann_dir, set_path = read_image_set(image_set), source, Path(image_set)
    else:
        if not source.exists():
            raise InputError(str(source), None, "no such file or folder")
        ids, set_path = read_image_set(source), source
        if annotations_dir is not None:
            ann_dir = Path(annotations_dir)
        elif (source.parent.parent.parent / "Annotations").is_dir():
            ann_dir = source.parent.parent.parent / "Annotations"  # VOCdevkit/VOC2007/ImageSets/Main/test.txt
        else:
            ann_dir = source.parent
    pairs = []
    for n, image_id in enumerate(ids, 1):
        f = ann_dir / f"{image_id}.xml"
        if not f.is_file():
            raise InputError(str(set_path), f"image {image_id!r} (entry {n})", f"no annotation file {f}")
        pairs.append((image_id, f))
    return pairs


def _raw_voc_xml(source, image_set=None, annotations_dir=None) -> _Raw:
    raw = _Raw()
    for image_id, f in _xml_files(Path(source), image_set, annotations_dir):
        raw.images.append(image_id)
        _parse_voc_xml(f, raw, image_id)
    return raw


# --------------------------------------------------------------------------------------
# per-image text files and comp4 files


def _txt_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise InputError(str(folder), None, "expected a folder of per-image .txt files")
    return sorted(folder.glob("*.txt"))


def _six_fields(path: Path, form: str, numeric: str) -> tuple[list[str], np.ndarray]:
    """Lines of a token and 5 numbers: (tokens, float64 (n, 5)).

    Fast path: one ``str.split`` and numpy's C text reader; on any doubt the
    line-by-line reader finds the line to name in the error.
    """
    text = _read_text(path)
    tokens = text.split()
    if not tokens:
        return [], np.zeros((0, 5))
    try:
        num = np.loadtxt(io.StringIO(text), usecols=range(1, 6), dtype=np.float64, comments=None, ndmin=2)
        # every line has >= 6 fields (usecols), so 6 per line exactly when the total matches
        ok = len(tokens) == 6 * len(num) and bool(np.isfinite(num).all())
    except ValueError:
        ok = False
    if ok:
        return tokens[0::6], num
    rows = _lines(path)
    for n, t in rows:
        if len(t) != 6:
            raise InputError(str(path), f"line {n}", f"expected '{form}', got {len(t)} fields")
    return [t[0] for _, t in rows], _numbers([t[1:] for _, t in rows], path, [n for n, _ in rows], numeric)


def _raw_text(folder, role: str, box_format: str) -> _Raw:
    """Per-image text files; ``role`` is ``"gt"`` (class box [difficult]) or ``"dets"`` (class score box)."""
    raw = _Raw()
    coords = "x1 y1 x2 y2" if box_format == "xyxy" else "x y w h"
    for f in _txt_files(Path(folder)):
        image_id = f.stem
        raw.images.append(image_id)
        if role == "dets":
            labels, num = _six_fields(f, f"class score {coords}", "score " + coords)
            raw.add([image_id] * len(labels), labels, f, None, num[:, 1:], num[:, 0])
            continue
        rows = _lines(f)
        for n, tokens in rows:
            if len(tokens) not in (5, 6):
                raise InputError(
                    str(f), f"line {n}", f"expected 'class {coords} [difficult]', got {len(tokens)} fields"
                )
        lines = [n for n, _ in rows]
        boxes = _numbers([t[1:5] for _, t in rows], f, lines, coords)
        difficult = np.zeros(len(rows))
        for i, (n, t) in enumerate(rows):
            if len(t) == 6:
                if t[5] not in ("0", "1"):
                    raise InputError(str(f), f"line {n}", f"difficult must be 0 or 1, got {t[5]!r}")
                difficult[i] = float(t[5])
        raw.add([image_id] * len(rows), [t[0] for _, t in rows], f, None, boxes.reshape(-1, 4), difficult)
    return raw


def _comp4_files(source: Path) -> list[tuple[str, Path]]:
    if source.is_dir():
        pairs = []
        for f in sorted(source.glob("*.txt")):
            m = COMP4_PATTERN.match(f.name)
            if m:
                pairs.append((m.group("cls"), f))
        if not pairs:
            raise InputError(str(source), None, "folder holds no <comp>_det_<set>_<class>.txt results file")
        return pairs
    m = COMP4_PATTERN.match(source.name)
    if not source.is_file():
        raise InputError(str(source), None, "no such file or folder")
    if not m:
        raise InputError(str(source), None, "a comp4 results file must be named <comp>_det_<set>_<class>.txt")
    return [(m.group("cls"), source)]


def _raw_comp4(source) -> _Raw:
    raw = _Raw()
    for label, f in _comp4_files(Path(source)):
        image_ids, num = _six_fields(f, "image_id score x1 y1 x2 y2", "score x1 y1 x2 y2")
        raw.add(image_ids, [label] * len(image_ids), f, None, num[:, 1:], num[:, 0])
    return raw


# --------------------------------------------------------------------------------------
# tables and containers


def _category_table(names: list[str] | None, *label_lists: list) -> IdTable:
    if names is not None:
        return IdTable(np.arange(len(names), dtype=np.int64), names=list(names))
    seen = sorted({lab for labels in label_lists for lab in labels})
    if seen and all(_INT.match(s) for s in seen):
        ids = np.unique(np.array([int(s) for s in seen], dtype=np.int64))
        return IdTable(ids, names=[str(i) for i in ids])
    return IdTable(np.array(seen, dtype=str) if seen else np.array([], dtype=str), names=seen)


def _category_index(raw: _Raw, table: IdTable, names: list[str] | None, gt_source: str) -> np.ndarray:
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


def _ground_truth(raw: _Raw, categories: IdTable, names, source: str, box_format: str) -> GroundTruth:
    boxes, difficult = raw.arrays()
    _check_boxes(boxes, raw, box_format)
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


def _image_index(raw: _Raw, gt: GroundTruth) -> np.ndarray:
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


def _detections(raw: _Raw, gt: GroundTruth, names, source: str, box_format: str) -> Detections:
    boxes, score = raw.arrays()
    _check_boxes(boxes, raw, box_format)
    return Detections(
        image=_image_index(raw, gt),
        category=_category_index(raw, gt.categories, names, gt.source),
        boxes=boxes,
        score=score,
        area=_area(boxes, box_format),
        box_format=box_format,
        source=source,
    )


def _coco_labels(raw: _Raw, gt: GroundTruth, names: list[str] | None) -> list[str]:
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
) -> GroundTruth:
    """VOC XML annotations (a folder, or an image-set list file) as :class:`GroundTruth` (``xyxy``).

    ``names`` (a names file or a list) fixes the categories; otherwise they are
    the class names found, sorted. ``image_set`` restricts a folder to the ids
    it lists. Difficult objects have ``difficult=True``.
    """
    names = _names(names)
    raw = _raw_voc_xml(source, image_set, annotations_dir)
    return _ground_truth(raw, _category_table(names, raw.labels), names, str(source), "xyxy")


def load_text_gt(
    folder: str | Path,
    *,
    names: str | Path | list[str] | None = None,
    box_format: str = "xyxy",
) -> GroundTruth:
    """Per-image text ground truth (``class x1 y1 x2 y2 [difficult]``, one file per image)."""
    _check_box_format(box_format)
    names = _names(names)
    raw = _raw_text(folder, "gt", box_format)
    return _ground_truth(raw, _category_table(names, raw.labels), names, str(folder), box_format)


def load_text_dets(
    folder: str | Path,
    gt: GroundTruth,
    *,
    names: str | Path | list[str] | None = None,
    box_format: str = "xyxy",
) -> Detections:
    """Per-image text detections (``class score x1 y1 x2 y2``) against ``gt``'s images and categories.

    Pass the same ``names`` the ground truth was loaded with (needed when
    classes are written as indices).
    """
    _check_box_format(box_format)
    return _detections(_raw_text(folder, "dets", box_format), gt, _names(names), str(folder), box_format)


def load_comp4(source: str | Path, gt: GroundTruth, *, names: str | Path | list[str] | None = None) -> Detections:
    """VOC comp4 results (a folder of ``<comp>_det_<set>_<class>.txt``, or one file) against ``gt``."""
    return _detections(_raw_comp4(source), gt, _names(names), str(source), "xyxy")


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
    if role == "gt" and any(p.glob("*.xml")):
        return "voc_xml"
    if role == "dets" and any(COMP4_PATTERN.match(f.name) for f in p.glob("*.txt")):
        return "comp4"
    if any(p.glob("*.txt")):
        return "text"
    expected = ".xml annotations or per-image .txt files" if role == "gt" else "comp4 or per-image .txt files"
    raise InputError(str(p), None, f"folder holds no {expected}")


def load_voc(
    dets: str | Path,
    gt: str | Path,
    *,
    names: str | Path | list[str] | None = None,
    image_set: str | Path | None = None,
    box_format: str = "xyxy",
) -> tuple[Detections, GroundTruth]:
    """Detections and ground truth from VOC-family paths, formats detected by :func:`detect_format`.

    Without a names file the categories are the classes of both sides, so a
    class that only the detections name is evaluated as a class without
    positives. COCO JSON on either side is read with :mod:`deteval.io.coco`
    (its boxes stay ``xywh``; the VOC protocol converts them).
    ``box_format`` applies to per-image text files.
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

        gt_obj = load_coco_gt(str(gt))
        if dt_fmt == "coco":
            from deteval.io.coco import load_coco_results

            return load_coco_results(str(dets), gt_obj), gt_obj
        raw_dt = _raw_comp4(dets) if dt_fmt == "comp4" else _raw_text(dets, "dets", box_format)
        raw_dt.labels = _coco_labels(raw_dt, gt_obj, names)
        fmt = "xyxy" if dt_fmt == "comp4" else box_format
        return _detections(raw_dt, gt_obj, None, str(dets), fmt), gt_obj
    if dt_fmt == "coco":
        raise InputError(
            str(dets), None, "COCO results need COCO ground truth (their image and category ids are COCO's)"
        )
    if gt_fmt == "voc_xml":
        p = Path(gt)
        raw_gt = _raw_voc_xml(p, image_set)
        gt_box = "xyxy"
    else:
        raw_gt = _raw_text(gt, "gt", box_format)
        gt_box = box_format
    raw_dt = _raw_comp4(dets) if dt_fmt == "comp4" else _raw_text(dets, "dets", box_format)
    dt_box = "xyxy" if dt_fmt == "comp4" else box_format
    if names is None:
        # tokens of the ground truth's kind (names, or integer ids) join the table; the others are
        # reported by _category_index (an index without a names file)
        gt_int = bool(raw_gt.labels) and all(_INT.match(s) for s in raw_gt.labels)
        table = _category_table(None, raw_gt.labels, [s for s in raw_dt.labels if bool(_INT.match(s)) == gt_int])
    else:
        table = _category_table(names)
    gt_obj = _ground_truth(raw_gt, table, names, str(gt), gt_box)
    return _detections(raw_dt, gt_obj, names, str(dets), dt_box), gt_obj
