"""VOC XML annotations (``<image_id>.xml`` files, found from a folder or an image-set list) into rows."""

from __future__ import annotations

import xml.parsers.expat
from pathlib import Path

import numpy as np

from deteval.errors import InputError
from deteval.io.json_source import read_bytes
from deteval.io.voc_rows import Raw, folder_files, read_image_set


def _parse_voc_xml(path: Path, raw: Raw, image_id: str) -> None:
    """Objects of one VOC annotation file (only direct ``<object>`` children of the root)."""
    data = bytes(read_bytes(path, "annotation", json_text=None)[:])  # bounded
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
                # voc_eval.py's int(...) then astype(bool): any other integer is difficult when not 0
                try:
                    flag = int(value) != 0
                except ValueError:
                    rule = f"<difficult> must be an integer (0 or 1), got {value!r}"
                    raise InputError(str(path), f"line {line} (object {i})", rule) from None
                raw.odd_difficult.append((raw.n + i, f"line {line} (object {i})", value))
                value = "1" if flag else "0"
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
            files = folder_files(source, ".xml")
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


def raw_voc_xml(source, image_set=None, annotations_dir=None) -> Raw:
    raw = Raw()
    for image_id, f in _xml_files(Path(source), image_set, annotations_dir):
        raw.images.append(image_id)
        _parse_voc_xml(f, raw, image_id)
    return raw


# --------------------------------------------------------------------------------------
# per-image text files and comp4 files
