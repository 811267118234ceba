"""DOTA task 1 files (oriented boxes as quadrilaterals) into containers.

Ground truth: a folder of per-image ``<image>.txt`` in DOTA's labelTxt form. The images are every
``*.txt`` there (the devkit's image-set list holds the same names). A line of fewer than 9 fields
is a header (``imagesource:...``, ``gsd:...``, blank) and skipped, as the devkit skips it; then
``x1 y1 x2 y2 x3 y3 x4 y4 class [difficult]``, difficult 0 when absent, else an integer whose
non-zero values are difficult (the devkit's ``int(...)`` then ``astype(bool)``).

Detections: a folder of per-class ``Task1_<class>.txt``, lines ``image score x1 y1 ... x4 y4``
(what the DOTA server and mmrotate write); or, with no ``Task1_*.txt`` in it, per-image
``<image>.txt`` with lines ``x1 y1 ... x4 y4 class score``.

Rules besides the devkit's (its reader crashes or misreads where deteval names the file and line):

* fields are split on any whitespace (the devkit splits on single spaces: a double space makes it
  crash); blank lines of detection files are skipped;
* a coordinate, score or difficult flag that is not a finite number, a detection line with other
  than 10 fields, a ground-truth line with more than 10: :class:`~deteval.errors.InputError`;
* a detection on an image with no ground-truth file: an error (the devkit's ``KeyError``);
* a detection file for a class that no ground truth names is ignored, with one notice (the devkit
  never opens it); a class with no detection file or an empty one has AP 0 (the devkit crashes).

A self-intersecting quadrilateral (two opposite edges cross: a bow-tie) is scored as the devkit scores
it (its lobes with opposite signs, :mod:`deteval.geometry.quads`), with one ``DetevalWarning`` giving
the count and the first file and line; with ``strict=True`` it is an :class:`~deteval.errors.InputError`
naming them. Like the devkit, deteval scores quadrilaterals anywhere (outside the image, negative
coordinates), of zero area, scores of any sign and size, and repeated lines, without a word.

Boxes are kept as given, ``(N, 8)`` float64 with ``box_format="quad"``; ``area`` is the shoelace area.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from deteval.errors import InputError, accepted
from deteval.io.voc_rows import folder_files, number_rows, read_text
from deteval.predicates import quads_crossing
from deteval.types import Detections, GroundTruth, IdTable

__all__ = ["DOTA_CLASSES", "load_dota", "load_dota_dets", "load_dota_gt"]

_V10 = ("plane", "baseball-diamond", "bridge", "ground-track-field", "small-vehicle", "large-vehicle", "ship",
        "tennis-court", "basketball-court", "storage-tank", "soccer-ball-field", "roundabout", "harbor",
        "swimming-pool", "helicopter")  # fmt: skip
# the class lists of DOTA's versions (the devkit's dota_evaluation_task1.py and dota-v1.5_evaluation_task1.py;
# DOTA-v2.0 adds airport and helipad)
DOTA_CLASSES: dict[str, tuple[str, ...]] = {
    "dota1.0": _V10,
    "dota1.5": (*_V10, "container-crane"),
    "dota2.0": (*_V10, "container-crane", "airport", "helipad"),
}

COORDS = ("x1", "y1", "x2", "y2", "x3", "y3", "x4", "y4")


def _area(quads: np.ndarray) -> np.ndarray:
    if len(quads) == 0:
        return np.zeros(0)
    x, y = quads[:, 0::2] - quads[:, :1], quads[:, 1::2] - quads[:, 1:2]
    return 0.5 * np.abs(x[:, 1] * y[:, 2] - x[:, 2] * y[:, 1] + x[:, 2] * y[:, 3] - x[:, 3] * y[:, 2])


def _check_simple(quads: np.ndarray, where: list[tuple[str, int]], strict: bool) -> None:
    """``where[i]``: row i's (file, line), or (file, -1 - k) for the file's k-th non-blank line (counted only here)."""
    bad = np.flatnonzero(quads_crossing(quads))
    if len(bad) == 0:
        return
    file, line = where[bad[0]]
    if line < 0:
        line = [n for n, t in _lines(Path(file)) if t][-1 - line]
    rule = "self-intersecting quadrilateral (two opposite edges cross)"
    what = "quadrilaterals are self-intersecting; scored as DOTA_devkit does, its two lobes counted with opposite signs"
    accepted(file, strict, len(bad), what, f"line {line}", rule)


def _task1_rows(path: Path) -> tuple[list[str] | None, np.ndarray]:
    """(image names, float64 (n, 9): score and coordinates) of a Task1 file by numpy's C reader; (None, ...) when
    a line is not 10 fields of a name and 9 finite numbers (the caller then reads line by line)."""
    text = read_text(path)
    tokens = text.split()
    if not tokens:
        return [], np.zeros((0, 9))
    try:
        num = np.loadtxt(io.StringIO(text), usecols=range(1, 10), dtype=np.float64, comments=None, ndmin=2)
    except ValueError:
        return None, np.zeros((0, 9))
    # every line has >= 10 fields (usecols), so exactly 10 per line when the total matches
    if len(tokens) != 10 * len(num) or not np.isfinite(num).all():
        return None, np.zeros((0, 9))
    return tokens[0::10], num


def _lines(path: Path):
    for n, line in enumerate(read_text(path).splitlines(), 1):
        yield n, line.split()


def _folder(path, role: str) -> Path:
    folder = Path(path)
    if not folder.is_dir():
        raise InputError(str(folder), None, f"expected a folder of DOTA {role} .txt files")
    return folder


def load_dota_gt(
    folder: str | Path, classes: list[str] | tuple[str, ...] | None = None, strict: bool = False
) -> GroundTruth:
    """Ground truth of every ``*.txt`` in ``folder`` (image ids: the file names without ``.txt``, sorted).

    ``classes``: the evaluated classes in this order (rows of other classes are dropped); default every
    class the files name, sorted. ``strict``: a self-intersecting quadrilateral is an error (module docstring).
    """
    folder = _folder(folder, "labelTxt")
    files = sorted(folder_files(folder, ".txt"), key=lambda f: f.stem)  # the image table's order
    if files and all(f.name.startswith(("Task1_", "Task2_")) for f in files):
        rule = "holds DOTA results files (Task1_<class>.txt: detections): did you swap PREDS and GT? "
        rule += "The order is PREDS GT"
        raise InputError(str(folder), None, rule)
    images, blocks, names, difficult, image_of, where = [], [], [], [], [], []
    for i, f in enumerate(files):
        images.append(f.stem)
        rows = [(n, t) for n, t in _lines(f) if len(t) >= 9]  # fewer fields: a header (imagesource:, gsd:, blank)
        for n, t in rows:
            if len(t) > 10:
                rule = f"expected 'x1 y1 ... x4 y4 class [difficult]', got {len(t)} fields"
                raise InputError(str(f), f"line {n}", rule)
            if len(t) == 10:
                try:
                    difficult.append(int(t[9]) != 0)
                except ValueError:
                    raise InputError(str(f), f"line {n}", f"difficult must be an integer, got {t[9]!r}") from None
            else:
                difficult.append(False)
            names.append(t[8])
            where.append((str(f), n))
        blocks.append(number_rows([t[:8] for _, t in rows], f, [n for n, _ in rows], " ".join(COORDS)))
        image_of += [i] * len(rows)
    quads = np.concatenate(blocks) if blocks else np.zeros((0, 8))
    named = sorted(set(names))
    order = named if classes is None else list(classes)
    index = {c: k for k, c in enumerate(order)}
    keep = np.array([c in index for c in names], bool)
    cat = np.array([index.get(c, -1) for c in names], np.int32)[keep]
    q = quads.reshape(-1, 8)[keep]
    _check_simple(q, [w for w, k in zip(where, keep) if k], strict)
    n_rows = len(q)
    return GroundTruth(
        image=np.array(image_of, np.int32)[keep],
        category=cat,
        boxes=np.ascontiguousarray(q),
        area=_area(q),
        crowd=np.zeros(n_rows, bool),
        ignore=np.zeros(n_rows, bool),
        difficult=np.array(difficult, bool)[keep],
        ann_id=np.arange(n_rows, dtype=np.int64),
        images=IdTable(np.array(images, dtype=str) if images else np.array([], dtype=str)),
        categories=IdTable(np.arange(len(order), dtype=np.int64), names=list(order)),
        box_format="quad",
        source=str(folder),
    )


def load_dota_dets(folder: str | Path, gt: GroundTruth, strict: bool = False) -> Detections:
    """Detections of a folder of ``Task1_<class>.txt`` (or per-image ``<image>.txt``) against ``gt``'s tables;
    ``strict`` as in :func:`load_dota_gt`."""
    folder = _folder(folder, "detection")
    per_class = folder_files(folder, ".txt")
    task1 = [f for f in per_class if f.name.startswith("Task1_")]
    class_index = {gt.categories.name_of(k): k for k in range(len(gt.categories))}
    image_index = {str(gt.images.id_of(k)): k for k in range(len(gt.images))}
    blocks, cat, img, where = [], [], [], []
    ignored: list[str] = []

    def image_of(name: str, f: Path, n: int | None) -> int:
        k = image_index.get(name)
        if k is None:
            rule = f"image {name!r} has no ground-truth file ({name}.txt) in {gt.source}"
            raise InputError(str(f), None if n is None else f"line {n}", rule)
        return k

    def rows_of(f: Path, form: str) -> list[tuple[int, list[str]]]:
        rows = [(n, t) for n, t in _lines(f) if t]
        for n, t in rows:
            if len(t) != 10:
                raise InputError(str(f), f"line {n}", f"expected '{form}', got {len(t)} fields")
        return rows

    if task1:
        for f in task1:
            k = class_index.get(f.name[len("Task1_") : -len(".txt")])
            if k is None:
                ignored.append(f.name)
                continue
            names, num = _task1_rows(f)
            if names is None:  # a line the fast reader refused: read line by line, naming the bad one
                rows = rows_of(f, "image score x1 y1 ... x4 y4")
                names = [t[0] for _, t in rows]
                num = number_rows([t[1:] for _, t in rows], f, [n for n, _ in rows], "score " + " ".join(COORDS))
            index = [image_index.get(name, -1) for name in names]
            if -1 in index:
                rows = [(n, t) for n, t in _lines(f) if t]
                bad = index.index(-1)
                image_of(names[bad], f, rows[bad][0])
            blocks.append(num)
            img += index
            cat += [k] * len(names)
            where += [(str(f), -1 - r) for r in range(len(names))]
    else:
        unnamed: set[str] = set()
        for f in per_class:
            i = image_of(f.stem, f, None)
            rows = rows_of(f, "x1 y1 ... x4 y4 class score")
            num = number_rows([[t[9], *t[:8]] for _, t in rows], f, [n for n, _ in rows], "score " + " ".join(COORDS))
            ks = [class_index.get(t[8], -1) for _, t in rows]
            unnamed.update(t[8] for (_, t), k in zip(rows, ks) if k < 0)
            keep = np.array(ks, np.int64).reshape(-1) >= 0
            blocks.append(num.reshape(-1, 9)[keep])
            img += [i] * int(keep.sum())
            cat += [k for k in ks if k >= 0]
            where += [(str(f), n) for (n, _), k in zip(rows, ks) if k >= 0]
        ignored = [f"class {c!r}" for c in sorted(unnamed)]
    if ignored:  # DOTA_devkit evaluates the classes it is given: the others' files and rows are never read
        what = "detection class(es) the ground truth does not name"
        accepted(str(folder), strict, len(ignored), what, ignored[0], "ignored, as DOTA_devkit does")
    num = np.concatenate(blocks).reshape(-1, 9) if blocks else np.zeros((0, 9))
    q = np.ascontiguousarray(num[:, 1:])
    _check_simple(q, where, strict)
    return Detections(
        image=np.array(img, np.int32),
        category=np.array(cat, np.int32),
        boxes=np.ascontiguousarray(q),
        score=np.ascontiguousarray(num[:, 0]),
        area=_area(q),
        box_format="quad",
        source=str(folder),
    )


def load_dota(
    dets: str | Path, gt: str | Path, classes: list[str] | tuple[str, ...] | None = None, strict: bool = False
) -> tuple[Detections, GroundTruth]:
    """``(detections, ground truth)`` from a detection folder and a labelTxt folder (module docstring)."""
    truth = load_dota_gt(gt, classes, strict)
    return load_dota_dets(dets, truth, strict), truth
