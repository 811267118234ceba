"""Per-image text files (``<image_id>.txt``) and comp4 results (``<comp>_det_<set>_<class>.txt``) into rows."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np

from deteval.errors import InputError
from deteval.io.voc_rows import Raw, folder_files, number_rows, read_text, text_lines

COMP4_PATTERN = re.compile(r"^(?P<comp>.+?)_det_(?P<set>[^_]+)_(?P<cls>.+)\.txt$")


def _txt_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise InputError(str(folder), None, "expected a folder of per-image .txt files")
    return folder_files(folder, ".txt")


def _six_fields(path: Path, form: str, numeric: str) -> tuple[list[str], np.ndarray]:
    """Lines of a token and 5 numbers: (tokens, float64 (n, 5)); ``nan`` and ``inf`` read as Python's
    ``float`` (voc_eval.py's) reads them, for the caller to warn about.

    Fast path: one ``str.split`` and numpy's C text reader; on any doubt the
    line-by-line reader finds the line to name in the error.
    """
    text = read_text(path)
    tokens = text.split()
    if not tokens:
        return [], np.zeros((0, 5))
    try:
        num = np.loadtxt(io.StringIO(text), usecols=range(1, 6), dtype=np.float64, comments=None, ndmin=2)
        # every line has >= 6 fields (usecols), so 6 per line exactly when the total matches
        ok = len(tokens) == 6 * len(num)
    except ValueError:
        ok = False
    if ok:
        return tokens[0::6], num
    rows = text_lines(path)
    for n, t in rows:
        if len(t) != 6:
            raise InputError(str(path), f"line {n}", f"expected '{form}', got {len(t)} fields")
    lines = [n for n, _ in rows]
    return [t[0] for _, t in rows], number_rows([t[1:] for _, t in rows], path, lines, numeric, finite=False)


def raw_text(folder, role: str, box_format: str) -> Raw:
    """Per-image text files; ``role`` is ``"gt"`` (class box [difficult]) or ``"dets"`` (class score box)."""
    raw = Raw()
    coords = "x1 y1 x2 y2" if box_format == "xyxy" else "x y w h"
    for f in _txt_files(Path(folder)):
        image_id = f.stem
        raw.images.append(image_id)
        if role == "dets":
            labels, num = _six_fields(f, f"class score {coords}", "score " + coords)
            raw.add([image_id] * len(labels), labels, f, None, num[:, 1:], num[:, 0])
            continue
        rows = text_lines(f)
        for n, tokens in rows:
            if len(tokens) not in (5, 6):
                raise InputError(
                    str(f), f"line {n}", f"expected 'class {coords} [difficult]', got {len(tokens)} fields"
                )
        lines = [n for n, _ in rows]
        boxes = number_rows([t[1:5] for _, t in rows], f, lines, coords)
        difficult = np.zeros(len(rows))
        for i, (n, t) in enumerate(rows):
            if len(t) == 6:
                if t[5] not in ("0", "1"):
                    raise InputError(str(f), f"line {n}", f"difficult must be 0 or 1, got {t[5]!r}")
                difficult[i] = float(t[5])
        raw.add([image_id] * len(rows), [t[0] for _, t in rows], f, None, boxes.reshape(-1, 4), difficult)
    if box_format == "xyxy" and _looks_like_yolo(raw, role):
        rule = (
            "looks like YOLO labels (integer classes, every number in [0, 1], boxes whose x2 < x1 or y2 < y1 as "
            "'cx cy w h' read as corners gives them), which VOC would score as pixel corners; evaluate YOLO "
            "label folders with their own input (--protocol yolo)"
        )
        raise InputError(str(folder), None, rule)
    return raw


_INT = re.compile(r"[+-]?\d+")


def _looks_like_yolo(raw: Raw, role: str) -> bool:
    """YOLO's ``class cx cy w h [conf]`` read as VOC's ``class [score] x1 y1 x2 y2``.

    Normalised corner files (a VOC user's with ``--no-plus-one``) never have x2 < x1; YOLO's centre
    and size read as corners have it for any box whose centre lies further right than its width.
    """
    if not raw.n or not all(_INT.fullmatch(s) for s in raw.labels):
        return False
    boxes, extra = raw.arrays()
    values = boxes if role == "gt" else np.column_stack([boxes, extra])
    if not bool(((values >= 0) & (values <= 1)).all()):
        return False
    return bool(((boxes[:, 2] < boxes[:, 0]) | (boxes[:, 3] < boxes[:, 1])).any())


def _comp4_files(source: Path) -> list[tuple[str, Path]]:
    if source.is_dir():
        pairs = []
        for f in folder_files(source, ".txt"):
            m = COMP4_PATTERN.match(f.name)
            if m:
                pairs.append((m.group("cls"), f))
        if not pairs:
            rule = "folder holds no <comp>_det_<set>_<class>.txt results file"
            raise InputError(str(source), None, rule + swapped_hint(source, "dets"))
        return pairs
    m = COMP4_PATTERN.match(source.name)
    if not source.is_file():
        raise InputError(str(source), None, "no such file or folder")
    if not m:
        raise InputError(str(source), None, "a comp4 results file must be named <comp>_det_<set>_<class>.txt")
    return [(m.group("cls"), source)]


def swapped_hint(folder: Path, role: str) -> str:
    """``: did you swap PREDS and GT? ...`` where a folder holds the other side's files (VOC XML given as
    detections), else nothing."""
    if role == "dets" and folder_files(folder, ".xml"):
        return "; it holds VOC annotations (.xml, ground truth): did you swap PREDS and GT? The order is PREDS GT"
    if role == "gt" and any(COMP4_PATTERN.match(f.name) for f in folder_files(folder, ".txt")):
        return "; it holds comp4 results (detections): did you swap PREDS and GT? The order is PREDS GT"
    return ""


def raw_comp4(source) -> Raw:
    raw = Raw()
    for label, f in _comp4_files(Path(source)):
        image_ids, num = _six_fields(f, "image_id score x1 y1 x2 y2", "score x1 y1 x2 y2")
        raw.add(image_ids, [label] * len(image_ids), f, None, num[:, 1:], num[:, 0])
    return raw


# --------------------------------------------------------------------------------------
# tables and containers
