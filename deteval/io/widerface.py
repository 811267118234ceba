"""WIDER FACE inputs: the official validation ``.mat`` files and a folder of ``<event>/<image>.txt`` predictions.

Ground truth (``GT_DIR``): ``wider_face_val.mat`` (``event_list``, ``file_list``, ``face_bbx_list``) and one
keep list file per subset, ``wider_<subset>_val.mat`` (``gt_list``), read with :func:`scipy.io.loadmat` (the
``widerface`` extra) as the evaluation script reads them: event ``i``'s name ``event_list[i][0][0]``, its images
``file_list[i][0][j][0][0]``, their faces ``face_bbx_list[i][0][j][0]`` (``(n, 4)`` x, y, w, h, any numeric type,
``(0, 0)`` or ``(0, 4)`` when empty), a subset's keep list ``gt_list[i][0][j][0]`` (1-based face numbers, uint8 or
uint16 in the official files, ``(k, 1)``, ``(0, 1)`` or ``(0, 0)``). A keep list's length counts as that many
faces whether or not the image has boxes; its numbers are taken ``- 1`` in their own integer type (so a 0 in a
uint8 list is face 255, as numpy computes it) and index the faces as numpy does (negative from the end).

Predictions (``PRED_DIR``): every file of every folder is read. A file's first line names its image (the part
after the last ``/``, then ``str.rstrip(".jpg")``: any trailing ``.``, ``j``, ``p``, ``g``); the second (the
count) is not read; each later line is ``x y w h score`` separated by single spaces. The folder names the
event. Beyond the script (which stops with an exception on them): a line ending in one space (what
Pytorch_Retinaface's ``test_widerface.py`` writes) and blank lines are read as that repository's copy of the
script reads them, with one :class:`~deteval.errors.DetevalWarning` (an error under ``strict``). Refused, with
the file and line named: a row of another width, a value ``float()`` does not read, NaN (the script's min/max
of NaN depends on the directory's listing order), two files naming one image (the script keeps whichever the
listing gives last), an empty file, a file outside an event folder.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from itertools import chain

import numpy as np

from deteval.errors import InputError, accepted

SUBSETS = ("easy", "medium", "hard")
MAT_FILES = ("wider_face_val.mat",) + tuple(f"wider_{s}_val.mat" for s in SUBSETS)


@dataclass(frozen=True, eq=False)
class WiderGroundTruth:
    """The validation set, images in the ``.mat`` file's order (event by event)."""

    events: list[str]  # (E,)
    image_event: np.ndarray  # int64 (I,): each image's event
    image_names: list[str]  # (I,)
    boxes: np.ndarray  # float64 (G, 4): x, y, w, h
    box_offsets: np.ndarray  # int64 (I + 1,): image i's faces are rows box_offsets[i]:box_offsets[i + 1]
    keep: np.ndarray  # bool (S, G): the face is in subset s's keep list
    keep_counts: np.ndarray  # int64 (S, I): the length of image i's keep list (the faces it counts)
    bad_keep: np.ndarray  # bool (S, I): a keep number outside the image's faces (the script stops if it looks)
    source: str = "<ground truth>"

    def __len__(self) -> int:
        return len(self.image_names)

    def image_label(self, i: int) -> str:
        return f"{self.events[self.image_event[i]]}/{self.image_names[i]}"


@dataclass(frozen=True, eq=False)
class WiderPredictions:
    """Every prediction file's rows: those of ground-truth images grouped by image (the ground truth's
    order, file order within one), and the scores of the files of images the ground truth lacks (they
    count in the score normalisation only)."""

    rows: np.ndarray  # float64 (P, 5): x, y, w, h, raw score
    offsets: np.ndarray  # int64 (I + 1,)
    outside_scores: np.ndarray  # float64 (Q,): scores of files of images not in the ground truth
    source: str = "<predictions>"

    def __len__(self) -> int:
        return len(self.rows)


def _loadmat(path: str, names: tuple[str, ...]) -> dict:
    try:
        from scipy.io import loadmat
    except ImportError:  # pragma: no cover - the extra is installed in CI
        raise InputError(path, None, "reading .mat files needs scipy: pip install 'deteval[widerface]'") from None
    try:
        return loadmat(path, variable_names=names)  # the files hold more (blur, pose ... labels): not read
    except FileNotFoundError:
        raise InputError(
            path, None, "no such file (WIDER FACE ground truth needs the four official .mat files)"
        ) from None
    except Exception as exc:  # noqa: BLE001 - scipy raises many kinds on a bad file
        raise InputError(path, None, f"not a readable MATLAB file: {type(exc).__name__}: {exc}") from None


def _cells(value: object, path: str, what: str) -> np.ndarray:
    """A MATLAB cell array's elements as loadmat gives them: an object array, taken in column order."""
    if not isinstance(value, np.ndarray) or value.dtype != object or value.ndim != 2 or 1 not in value.shape:
        shape = getattr(value, "shape", None)
        raise InputError(path, what, f"expected a cell array of one column, got {type(value).__name__} {shape}")
    return value.reshape(-1)


def _string(value: object, path: str, what: str) -> str:
    # value[0] as the script indexes it: an array holding one string
    try:
        s = value[0]
    except (TypeError, IndexError):
        s = None
    if not isinstance(s, str):
        raise InputError(path, what, "expected a string")
    return s


def _field(mat: dict, key: str, path: str) -> np.ndarray:
    if key not in mat:
        raise InputError(path, None, f"no variable {key!r}")
    return mat[key]


def load_widerface_gt(gt_dir: str | os.PathLike, strict: bool = False) -> WiderGroundTruth:
    """The four official ``.mat`` files of ``gt_dir`` (see the module's text)."""
    gt_dir = os.fspath(gt_dir)
    if not os.path.isdir(gt_dir):
        raise InputError(gt_dir, None, f"WIDER FACE ground truth is a folder holding {', '.join(MAT_FILES)}")
    face_path = os.path.join(gt_dir, MAT_FILES[0])
    mat = _loadmat(face_path, ("event_list", "file_list", "face_bbx_list"))
    events_raw = _cells(_field(mat, "event_list", face_path), face_path, "event_list")
    files_raw = _cells(_field(mat, "file_list", face_path), face_path, "file_list")
    boxes_raw = _cells(_field(mat, "face_bbx_list", face_path), face_path, "face_bbx_list")
    if not len(events_raw) == len(files_raw) == len(boxes_raw):
        raise InputError(face_path, None, "event_list, file_list and face_bbx_list differ in length")
    events, names, image_event, boxes, counts = [], [], [], [], []
    for e in range(len(events_raw)):
        events.append(_string(events_raw[e], face_path, f"event_list[{e}]"))
        imgs = _cells(files_raw[e], face_path, f"file_list[{e}]")
        bbs = _cells(boxes_raw[e], face_path, f"face_bbx_list[{e}]")
        if len(imgs) != len(bbs):
            raise InputError(face_path, f"event {events[-1]!r}", "file_list and face_bbx_list differ in length")
        for j in range(len(imgs)):
            names.append(_string(imgs[j], face_path, f"file_list[{e}][{j}]"))
            b = bbs[j]
            where = f"face_bbx_list[{e}][{j}] ({events[-1]}/{names[-1]})"
            if not isinstance(b, np.ndarray) or b.ndim != 2 or b.dtype.kind not in "iufb":
                raise InputError(face_path, where, "expected a numeric (n, 4) matrix")
            if len(b) and b.shape[1] != 4:
                raise InputError(face_path, where, f"expected (n, 4) boxes, got shape {b.shape}")
            boxes.append(b.astype(np.float64).reshape(-1, 4) if len(b) else np.zeros((0, 4)))
            counts.append(len(b))
            image_event.append(e)
    box_offsets = np.zeros(len(names) + 1, np.int64)
    np.cumsum(counts, out=box_offsets[1:])
    flat = np.concatenate(boxes) if boxes else np.zeros((0, 4))
    nan = np.flatnonzero(np.isnan(flat).any(axis=1))
    if len(nan):
        i = int(np.searchsorted(box_offsets, nan[0], side="right")) - 1
        raise InputError(face_path, f"face_bbx_list: {events[image_event[i]]}/{names[i]}", "a box holds NaN")
    keep = np.zeros((len(SUBSETS), len(flat)), np.bool_)
    keep_counts = np.zeros((len(SUBSETS), len(names)), np.int64)
    bad = np.zeros((len(SUBSETS), len(names)), np.bool_)
    for s in range(len(SUBSETS)):
        _read_keep(
            os.path.join(gt_dir, MAT_FILES[s + 1]),
            events,
            files_raw,
            box_offsets,
            keep[s],
            keep_counts[s],
            bad[s],
            strict,
        )
    return WiderGroundTruth(
        events=events,
        image_event=np.asarray(image_event, np.int64),
        image_names=names,
        boxes=flat,
        box_offsets=box_offsets,
        keep=keep,
        keep_counts=keep_counts,
        bad_keep=bad,
        source=gt_dir,
    )


def _read_keep(
    path: str,
    events: list[str],
    files_raw: np.ndarray,
    box_offsets: np.ndarray,
    keep: np.ndarray,
    counts: np.ndarray,
    bad: np.ndarray,
    strict: bool,
) -> None:
    lists = _cells(_field(_loadmat(path, ("gt_list",)), "gt_list", path), path, "gt_list")
    if len(lists) < len(events):
        raise InputError(path, None, f"gt_list has {len(lists)} events, wider_face_val.mat {len(events)}")
    extra = len(lists) - len(events)
    values: dict[np.dtype, list] = {}  # the keep lists by type: k - 1 is taken in each list's own type
    owners: dict[np.dtype, list] = {}
    image = 0
    for e in range(len(events)):
        per_image = _cells(lists[e], path, f"gt_list[{e}]")
        n_images = len(files_raw[e].reshape(-1))
        if len(per_image) < n_images:
            raise InputError(path, f"gt_list[{e}] ({events[e]})", f"{len(per_image)} images, not {n_images}")
        extra += len(per_image) - n_images
        for j in range(n_images):
            k = per_image[j]
            if not isinstance(k, np.ndarray) or k.ndim != 2 or k.dtype.kind not in "iu":
                got = getattr(k, "dtype", type(k).__name__)
                raise InputError(path, f"gt_list[{e}][{j}]", f"expected an integer keep list, got {got}")
            counts[image] = len(k)
            if k.size:
                values.setdefault(k.dtype, []).append(k.reshape(-1))
                owners.setdefault(k.dtype, []).append((image, k.size))
            image += 1
    n_faces = np.diff(box_offsets)
    for dtype, parts in values.items():
        index = (np.concatenate(parts) - 1).astype(np.int64)  # a 0 wraps in unsigned types, as numpy computes it
        img = np.repeat(*np.array(owners[dtype], np.int64).T)
        n = n_faces[img]
        out = (index < -n) | (index >= n)  # numpy's IndexError, where the script looks
        bad[img[out]] = True
        ok = ~out
        keep[box_offsets[img[ok]] + np.where(index[ok] < 0, index[ok] + n[ok], index[ok])] = True
    if extra:
        accepted(path, strict, extra, "events or images beyond wider_face_val.mat's", None, "not read, as the script")


def _image_key(first_line: str) -> str:
    return first_line.rstrip("\n\r").split("/")[-1].rstrip(".jpg")


def _read_rows(path: str, lines: list[str], odd: dict[str, list]) -> np.ndarray:
    """The rows after the count line: every line five values, float() each, no NaN; else the line by line
    reading below, which accepts the tolerated oddities and names the first bad line."""
    split = [line.rstrip("\r\n").split(" ") for line in lines[2:]]
    if all(len(t) == 5 for t in split):
        try:
            rows = np.array(list(map(float, chain.from_iterable(split))), np.float64).reshape(-1, 5)
        except ValueError:
            rows = None
        if rows is not None and not np.isnan(rows).any():
            return rows
    return _read_rows_slowly(path, lines, odd)


def _read_rows_slowly(path: str, lines: list[str], odd: dict[str, list]) -> np.ndarray:
    rows = []
    for n, line in enumerate(lines[2:], start=3):
        tokens = line.rstrip("\r\n").split(" ")
        if len(tokens) == 6 and tokens[5] == "":
            tokens = tokens[:5]
            odd["trailing"].append(f"{path}: line {n}")
        elif tokens == [""]:
            odd["blank"].append(f"{path}: line {n}")
            continue
        if len(tokens) != 5:
            raise InputError(
                path, f"line {n}", f"expected 'x y w h score' separated by single spaces, got {len(tokens)} values"
            )
        try:
            row = [float(t) for t in tokens]
        except ValueError:
            raise InputError(path, f"line {n}", f"not a number: {line.rstrip()!r}") from None
        if row[0] != row[0] or row[1] != row[1] or row[2] != row[2] or row[3] != row[3] or row[4] != row[4]:
            raise InputError(path, f"line {n}", "NaN (the script's normalisation would depend on the listing order)")
        rows.append(row)
    return np.array(rows, np.float64).reshape(-1, 5)


def _read_file(path: str) -> list[str]:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text (byte {exc.start})") from None
    return io.StringIO(text, newline=None).readlines()  # open(path).readlines(): universal newlines


def load_widerface_preds(pred_dir: str | os.PathLike, gt: WiderGroundTruth, strict: bool = False) -> WiderPredictions:
    """Every ``<event>/<file>`` of ``pred_dir`` (see the module's text), grouped by ``gt``'s images; an
    InputError names the first ground-truth image without a file."""
    pred_dir = os.fspath(pred_dir)
    if not os.path.isdir(pred_dir):
        raise InputError(pred_dir, None, "WIDER FACE predictions are a folder of <event>/<image>.txt files")
    by_key: dict[tuple[str, str], tuple[str, np.ndarray]] = {}
    odd: dict[str, list] = {"trailing": [], "blank": []}
    for event in sorted(os.listdir(pred_dir)):
        event_dir = os.path.join(pred_dir, event)
        if not os.path.isdir(event_dir):
            raise InputError(event_dir, None, "not a folder: PRED_DIR holds one folder per event, files in them")
        for name in sorted(os.listdir(event_dir)):
            path = os.path.join(event_dir, name)
            if os.path.isdir(path):
                raise InputError(path, None, "a folder inside an event folder (prediction files only)")
            lines = _read_file(path)
            if not lines:
                raise InputError(path, None, "empty: the first line names the image")
            key = (event, _image_key(lines[0]))
            if key in by_key:
                rule = f"names image {key[1]!r} as {by_key[key][0]} does (one file per image)"
                raise InputError(path, "line 1", rule)
            by_key[key] = (path, _read_rows(path, lines, odd))
    for what, label in (("trailing", "lines ending in a space"), ("blank", "blank lines")):
        if odd[what]:
            rule = "read as Pytorch_Retinaface's copy of the script reads it (the original stops there)"
            accepted(pred_dir, strict, len(odd[what]), label, odd[what][0], rule)
    parts, counts, used = [], np.zeros(len(gt), np.int64), set()
    for i in range(len(gt)):
        key = (gt.events[gt.image_event[i]], gt.image_names[i])
        found = by_key.get(key)  # an image the ground truth lists twice reads its file twice, as the script
        used.add(key)
        if found is None:
            rule = "no prediction file names this ground-truth image (first line: <event>/<image>.jpg)"
            raise InputError(pred_dir, gt.image_label(i), rule)
        parts.append(found[1])
        counts[i] = len(found[1])
    offsets = np.zeros(len(gt) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    rows = np.concatenate(parts) if parts else np.zeros((0, 5))
    outside = [r[:, 4] for key, (_, r) in by_key.items() if key not in used]
    outside_scores = np.concatenate(outside) if outside else np.zeros(0)
    return WiderPredictions(rows=rows, offsets=offsets, outside_scores=outside_scores, source=pred_dir)
