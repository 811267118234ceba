"""KITTI ``label_2`` folders: one text file per image, ``NNNNNN.txt``, one object per line.

A line is ``type truncated occluded alpha x1 y1 x2 y2 h w l x y z rotation_y [score]``. The fields are read
as OpenPCDet's ``kitti_common.get_label_anno`` reads them (its rules, not its code):

* a line is ``line.strip().split(" ")``: single spaces separate fields (two spaces make an empty field,
  which is an error); fields past the 16th are not read;
* ``occluded`` is a Python ``int``, every other field from the 2nd to the 15th a Python ``float`` (``nan``,
  ``inf`` and ``1_0`` included);
* a file's objects carry a score only when its *first* line has exactly 16 fields; then every line needs a
  16th field; otherwise every score is 0 (a results file without scores: a warning);
* an empty file has no objects; an empty line is an error (the reference crashes there).

The images are the files of the label folder named ``^\\d{6}\\.txt$`` (ASCII digits), by number; each needs
a results file of the same name; a results file without a label file is an error (the reference pairs the
two folders by position, so either would score the wrong files against each other).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deteval.errors import InputError, accepted, warn

__all__ = ["CLASS_CODES", "KittiLabels", "OTHER", "load_kitti", "read_label_dir", "read_label_file"]

_NAME = re.compile(r"^[0-9]{6}\.txt$")
# the lower-cased types the evaluation tells apart; any other type is OTHER
CLASS_CODES = {"car": 0, "pedestrian": 1, "cyclist": 2, "van": 3, "person_sitting": 4}
OTHER = 5


@dataclass(frozen=True, eq=False)
class KittiLabels:
    """One folder's objects, grouped by image (images by number, objects in file order within one).

    ``names`` are the types as written; ``cls`` their lower-cased code (:data:`CLASS_CODES`, else
    :data:`OTHER`); ``dontcare`` is True for the type spelled exactly ``DontCare``.
    """

    image_ids: np.ndarray  # int64 (I,): the files' numbers, ascending
    start: np.ndarray  # int64 (I + 1,): image i's objects are rows start[i]:start[i + 1]
    names: np.ndarray  # object (N,): str
    cls: np.ndarray  # int8 (N,)
    dontcare: np.ndarray  # bool (N,)
    truncated: np.ndarray  # float64 (N,)
    occluded: np.ndarray  # int64 (N,)
    alpha: np.ndarray  # float64 (N,)
    bbox: np.ndarray  # float64 (N, 4): x1, y1, x2, y2 in pixels
    score: np.ndarray  # float64 (N,): 0 where the file has no score column
    source: str = "<kitti labels>"

    def __len__(self) -> int:
        return len(self.cls)

    @property
    def image(self) -> np.ndarray:
        """int64 (N,): each object's image index."""
        return np.repeat(np.arange(len(self.image_ids)), np.diff(self.start))


def _file_error(path: str | Path, line: int | None, rule: str) -> InputError:
    return InputError(str(path), None if line is None else f"line {line}", rule)


def read_label_file(path: str | Path) -> tuple[list[str], list[list[float]], list[int], bool]:
    """``(names, values, occluded, scored)`` of one file: ``values`` per line are the floats of fields 2 and
    4-16 (truncated, alpha, bbox, dimensions, location, rotation_y, score), the score 0 where unscored."""
    try:
        with open(path, encoding="utf-8") as f:  # universal newlines, as the reference's text mode
            lines = f.readlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise _file_error(path, None, f"cannot be read: {exc}") from None
    rows = [line.strip().split(" ") for line in lines]
    scored = bool(rows) and len(rows[0]) == 16
    need = 16 if scored else 15
    names, values, occluded = [], [], []
    for n, fields in enumerate(rows, 1):
        if len(fields) < need:
            why = "after a first line with a score, every line needs 16" if scored and len(fields) == 15 else ""
            raise _file_error(
                path,
                n,
                f"has {len(fields)} fields separated by single spaces, needs {need}" + (f" ({why})" if why else ""),
            )
        if "" in fields[1:need]:
            k = fields.index("", 1) + 1
            raise _file_error(path, n, f"field {k} is empty: fields are separated by single spaces")
        try:
            occluded.append(int(fields[2]))
        except ValueError:
            raise _file_error(path, n, f"occluded (field 3) {fields[2]!r} is not an integer") from None
        try:
            vals = [float(fields[1]), *map(float, fields[3:15]), float(fields[15]) if scored else 0.0]
        except ValueError:
            bad = next(i for i in [1, *range(3, need)] if not _is_float(fields[i]))
            raise _file_error(path, n, f"field {bad + 1} {fields[bad]!r} is not a number") from None
        names.append(fields[0])
        values.append(vals)
    return names, values, occluded, scored


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_label_dir(folder: Path, ids: np.ndarray | None, source: str, strict: bool, scored: bool) -> KittiLabels:
    """The files of ``folder`` (``ids``: those numbers, each required; None: every ``NNNNNN.txt``).

    ``scored``: a results folder (a file without a score column is warned about: its scores are 0)."""
    if not folder.is_dir():
        raise InputError(source, None, f"{folder} is not a folder of KITTI label files")
    present = {}
    skipped = []
    with os.scandir(folder) as it:
        for entry in it:
            if _NAME.match(entry.name):
                present[int(entry.name[:6])] = entry.name
            elif entry.name.endswith(".txt"):
                skipped.append(entry.name)
    if skipped:
        warn(f"{source}: {len(skipped)} .txt files not named like 000000.txt are not read; first: {sorted(skipped)[0]}")
    if ids is None:
        ids = np.array(sorted(present), np.int64)
    else:
        missing = [i for i in ids.tolist() if i not in present]
        if missing:
            raise InputError(
                source,
                f"{int(missing[0]):06d}.txt",
                f"missing: each label file needs a results file "
                f"of the same name ({len(missing)} missing); an image without detections is an empty file",
            )
        extra = sorted(set(present) - set(ids.tolist()))
        if extra:
            raise InputError(
                source,
                f"{extra[0]:06d}.txt",
                f"has no label file of the same name ({len(extra)} "
                "such results files); the reference pairs the folders by position",
            )
    prefix = os.path.join(folder, "")  # one join: os.path.join per file costs as much as reading it
    paths = [prefix + present[i] for i in ids.tolist()]
    from deteval.io.kitti_scan import scan_plain

    fast = scan_plain(paths)
    if fast is not None:
        uniq, index, arr, occluded, counts, kinds = fast
        start = np.zeros(len(ids) + 1, np.int64)
        np.cumsum(counts, out=start[1:])
        unscored = [os.path.basename(paths[k]) for k in np.flatnonzero(kinds == 15).tolist()] if scored else []
    else:
        names, values, occ, unscored = [], [], [], []
        start = np.zeros(len(ids) + 1, np.int64)
        for k, path in enumerate(paths):
            n, v, o, has_score = read_label_file(path)
            if scored and n and not has_score:
                unscored.append(os.path.basename(path))
            names += n
            values += v
            occ += o
            start[k + 1] = len(names)
        arr = np.array(values, np.float64).reshape(-1, 14)
        occluded = np.array(occ, np.int64)
        uniq, index = np.unique(np.array(names, dtype=object).astype(str), return_inverse=True)
        uniq = uniq.tolist()
    if unscored:
        accepted(
            source,
            strict,
            len(unscored),
            "results files without a score column (16th field) on their first line, scored 0 throughout",
            unscored[0],
            "no 16th field on the first line: every score is 0",
        )
    index = np.asarray(index, np.int64).ravel()
    cls = np.array([CLASS_CODES.get(s.lower(), OTHER) for s in uniq], np.int8)[index]
    dontcare = np.array([s == "DontCare" for s in uniq], np.bool_)[index]
    names = np.array(uniq, dtype=object)[index] if len(uniq) else np.zeros(0, object)
    return KittiLabels(
        image_ids=ids, start=start, names=names, cls=cls,
        dontcare=dontcare,
        truncated=arr[:, 0].copy(), occluded=occluded, alpha=arr[:, 1].copy(),
        bbox=np.ascontiguousarray(arr[:, 2:6]), score=arr[:, 13].copy(), source=source,
    )  # fmt: skip


def load_kitti(preds: Any, gt: Any, strict: bool = False) -> tuple[KittiLabels, KittiLabels]:
    """``(results, labels)`` from two folders (or containers, passed through); the results paired by number."""
    if isinstance(gt, KittiLabels):
        labels = gt
    else:
        labels = read_label_dir(Path(gt), None, str(gt), strict, scored=False)
    if isinstance(preds, KittiLabels):
        if not np.array_equal(preds.image_ids, labels.image_ids):
            raise InputError(preds.source, None, "the results' images differ from the labels' (paired by number)")
        return preds, labels
    return read_label_dir(Path(preds), labels.image_ids, str(preds), strict, scored=True), labels
