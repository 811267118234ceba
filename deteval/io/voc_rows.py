"""Rows of VOC-family files before the category and image tables exist, and the plain list files.

:class:`Raw` holds what the readers (:mod:`deteval.io.voc_xml`, :mod:`deteval.io.voc_text`)
found: string image ids, class tokens, boxes, and where each row came from, so that a
later error can name the file and line. Names files and image-set lists are read here too.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from deteval.errors import InputError
from deteval.io.json_source import read_bytes


def folder_files(folder: Path, suffix: str) -> list[Path]:
    """The entries of ``folder`` whose name ends with ``suffix``, sorted (``sorted(folder.glob("*" + suffix))``),
    with an :class:`InputError` giving the OS error where the folder cannot be listed (``glob`` says nothing)."""
    try:
        with os.scandir(folder) as entries:
            names = [entry.name for entry in entries if entry.name.endswith(suffix)]
    except OSError as exc:
        raise InputError(str(folder), None, f"cannot list the folder: {exc.strerror or exc}") from None
    return sorted(folder / name for name in names)


@dataclass
class Raw:
    """Rows parsed from files: string image ids and class tokens, and where each came from."""

    image_ids: list = field(default_factory=list)
    labels: list = field(default_factory=list)
    boxes: list = field(default_factory=list)  # float64 (n, 4) blocks
    extra: list = field(default_factory=list)  # float64 (n,) blocks: difficult or score
    images: list = field(default_factory=list)  # every image the source lists (ground truth)
    blocks: list = field(default_factory=list)  # (first row, file, records or None), one per file
    odd_difficult: list = field(default_factory=list)  # (row, record, text): XML <difficult> other than 0/1
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
            records = [f"line {n}" for n, _ in text_lines(Path(file))]
        return file, records[row - start]

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        boxes = np.concatenate(self.boxes) if self.boxes else np.zeros((0, 4))
        extra = np.concatenate(self.extra) if self.extra else np.zeros(0)
        return boxes.reshape(-1, 4), extra


def read_text(path: Path) -> str:
    """The file's text (UTF-8, a byte order mark skipped), read by the bounded reader."""
    raw = read_bytes(path, "VOC", json_text=False)
    try:
        return bytes(raw[:]).decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(str(path), None, f"not UTF-8 text ({e.reason} at byte {e.start})") from None


def text_lines(path: Path) -> list[tuple[int, list[str]]]:
    """(line number, tokens) of every non-blank line."""
    return [(n, s.split()) for n, s in enumerate(read_text(path).splitlines(), 1) if s.strip()]


def number_rows(tokens: list[list[str]], path: Path, lines: list[int], what: str, finite: bool = True) -> np.ndarray:
    """Rows of numeric tokens as float64; the first bad line is named. ``finite=False`` takes ``nan`` and
    ``inf`` as Python's ``float`` reads them (the caller says so)."""
    if not tokens:
        return np.zeros((0, len(what.split())))
    try:
        arr = np.array(tokens, dtype=np.float64)
    except ValueError:
        arr = None
    if arr is None or not (not finite or np.isfinite(arr).all()):
        for row, n in zip(tokens, lines):
            for tok, name in zip(row, what.split()):
                try:
                    value = float(tok)
                    ok = not finite or np.isfinite(value)
                except ValueError:
                    ok = False
                if not ok:
                    rule = f"{name} must be a{' finite' if finite else ''} number, got {tok!r}"
                    raise InputError(str(path), f"line {n}", rule)
    if arr is None:  # numbers Python's float reads and numpy's does not ("1_000")
        arr = np.array([[float(t) for t in row] for row in tokens], dtype=np.float64)
    return arr


def load_names(path: str | Path) -> list[str]:
    """Class names, one per line (trailing blank lines allowed); the line order gives the indices."""
    path = Path(path)
    lines = read_text(path).splitlines()
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
    for n, tokens in text_lines(path):
        if tokens[0] in seen:
            raise InputError(str(path), f"line {n}", f"duplicate image id {tokens[0]!r} (also line {seen[tokens[0]]})")
        seen[tokens[0]] = n
        ids.append(tokens[0])
    return ids


# --------------------------------------------------------------------------------------
# VOC XML
