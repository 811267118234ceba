"""COCO ground truth bytes straight into columns: ``{"images": [...], "annotations": [...], "categories": [...]}``."""

from __future__ import annotations

import json
import math

import numpy as np

from deteval.io.coco_columns import LVIS_CATEGORY_FIELDS, LVIS_IMAGE_FIELDS, record_name
from deteval.io.scan.gt_segm import read_segmentation
from deteval.io.scan.lexer import (
    KERNEL,
    MAX_DEPTH,
    byte_at,
    next_item,
    number_token,
    scalar_end,
    skip_value,
    skip_ws,
    string_end,
)
from deteval.io.scan.numbers import to_float
from deteval.jit import njit
from deteval.numeric import tail_columns
from deteval.types import xywh_area

# How a known key's value is read (anything else declines the file)
# _V_SEEN: skipped, but noted; _V_OBB: an oriented box, 5 numbers; _V_KPTS: keypoints, the float columns' last 3K
_V_INT, _V_NUM, _V_BOX, _V_FLAG, _V_STR, V_SEGM, _V_SEEN, _V_OBB, _V_KPTS = 0, 1, 2, 3, 4, 5, 6, 7, 8
_L_IMAGES, _L_ANNOTATIONS, _L_CATEGORIES = 0, 1, 2
_LIST_KEYS = np.frombuffer(b"imagesannotationscategories", np.uint8).copy()
_LIST_OFF = np.array([0, 6, 17, 27], np.int64)


class _Spec:
    """The keys read from one list's records: (name, how, int or float column), required ones."""

    def __init__(self, keys: list[tuple[str, int, int]], required: tuple[str, ...], keypoints: int = 0):
        names = [k.encode() for k, _, _ in keys]
        self.key_bytes = np.frombuffer(b"".join(names), np.uint8).copy()
        self.key_off = np.cumsum([0] + [len(k) for k in names]).astype(np.int64)
        self.how = np.array([h for _, h, _ in keys], np.int64)
        self.col = np.array([c for _, _, c in keys], np.int64)
        self.required = sum(1 << i for i, (k, _, _) in enumerate(keys) if k in required)
        self.n_int = max([c + (2 if h == _V_STR else 1) for _, h, c in keys if h in (_V_INT, _V_FLAG, _V_STR)] + [0])
        width = {_V_NUM: 1, _V_BOX: 4, _V_OBB: 5, _V_KPTS: keypoints}
        self.n_float = max([c + width[h] for _, h, c in keys if h in width] + [0])
        self.index = {k: i for i, (k, _, _) in enumerate(keys)}


_ANN_KEYS = [
    ("id", _V_INT, 0),
    ("image_id", _V_INT, 1),
    ("category_id", _V_INT, 2),
    ("iscrowd", _V_FLAG, 3),
    ("ignore", _V_FLAG, 4),
    ("bbox", _V_BOX, 0),
    ("area", _V_NUM, 4),
]
_GT_SPECS = (
    _Spec(
        [("id", _V_INT, 0), ("height", _V_NUM, 0), ("width", _V_NUM, 1)] + [(k, _V_SEEN, 0) for k in LVIS_IMAGE_FIELDS],
        ("id",),
    ),
    _Spec(_ANN_KEYS, ("id", "image_id", "category_id", "bbox")),
    _Spec([("id", _V_INT, 0), ("name", _V_STR, 1)] + [(k, _V_SEEN, 0) for k in LVIS_CATEGORY_FIELDS], ("id",)),
)
# mask evaluation: the segmentation is read and required, the box may be missing (then the mask's extent)
_SEGM_ANN_SPEC = _Spec([*_ANN_KEYS, ("segmentation", V_SEGM, 0)], ("id", "image_id", "category_id", "segmentation"))
# oriented-box evaluation (hotcoco's "obb"): the oriented box is read and required, the box optional
_OBB_ANN_SPEC = _Spec([*_ANN_KEYS, ("obb", _V_OBB, 5)], ("id", "image_id", "category_id", "obb"))


def _keypoints_spec(count: int) -> _Spec:
    """Keypoint evaluation: ``keypoints`` (``count`` numbers, after the box, area and ``num_keypoints``) required."""
    keys = [*_ANN_KEYS, ("num_keypoints", _V_NUM, 5), ("keypoints", _V_KPTS, 6)]
    return _Spec(keys, ("id", "image_id", "category_id", "bbox", "keypoints"), count)


_MIN_OBJECT_BYTES = 9  # {"id":1} and a comma


@njit(**KERNEL)
def _which_key(buf, start, length, key_bytes, key_off):
    for k in range(key_off.size - 1):
        a = key_off[k]
        if key_off[k + 1] - a == length:
            same = True
            for j in range(length):
                if buf[start + j] != key_bytes[a + j]:
                    same = False
                    break
            if same:
                return k
    return -1


@njit(**KERNEL)
def _records(
    buf, pos, n, key_bytes, key_off, how, col, required, ints, floats, present, kind, spans, nspan, stack, segm
):  # fmt: skip
    """The list of objects at ``pos``: (status, end, records, spans); status 0 declines, 2 wants room.
    ``segm``: (seg, parts, coords, uruns, fill), where a ``V_SEGM`` key's value goes (``read_segmentation``),
    or ``None`` where the spec has no such key; ``seg`` has a row per record of room."""
    cap = present.size
    flat = floats.reshape(-1)
    nf = floats.shape[1]
    nrec = 0
    if byte_at(buf, pos, n) != 91:
        return 0, pos, nrec, nspan
    pos = skip_ws(buf, pos + 1, n)
    if byte_at(buf, pos, n) == 93:
        return 1, pos + 1, nrec, nspan
    while True:
        if byte_at(buf, pos, n) != 123:
            return 0, pos, nrec, nspan
        if nrec >= cap:
            return 2, pos, nrec, nspan
        pos = skip_ws(buf, pos + 1, n)
        seen = 0
        if byte_at(buf, pos, n) != 125:
            while True:
                if byte_at(buf, pos, n) != 34:
                    return 0, pos, nrec, nspan
                kstart = pos + 1
                pos, escaped = string_end(buf, pos, n)
                if pos < 0 or escaped:
                    return 0, pos, nrec, nspan
                k = _which_key(buf, kstart, pos - 1 - kstart, key_bytes, key_off)
                pos = skip_ws(buf, pos, n)
                if byte_at(buf, pos, n) != 58:
                    return 0, pos, nrec, nspan
                pos = skip_ws(buf, pos + 1, n)
                if k >= 0 and how[k] == _V_SEEN:  # its presence noted, its value skipped
                    if seen & (1 << k):
                        return 0, pos, nrec, nspan
                    seen |= 1 << k
                    k = -1
                if k < 0:
                    pos = skip_value(buf, pos, n, stack)
                else:
                    if seen & (1 << k):
                        return 0, pos, nrec, nspan
                    seen |= 1 << k
                    h = how[k]
                    c = col[k]
                    count = 1
                    if h == V_SEGM:
                        if segm is None:  # box evaluation: numba compiles none of the segmentation code
                            return 0, pos, nrec, nspan
                        else:
                            pos, nspan = read_segmentation(buf, pos, n, segm, nrec, spans, nspan)
                        count = 0
                    elif h == _V_BOX or h == _V_OBB or h == _V_KPTS:
                        if byte_at(buf, pos, n) != 91:
                            return 0, pos, nrec, nspan
                        pos = skip_ws(buf, pos + 1, n)
                        count = 4 if h == _V_BOX else (5 if h == _V_OBB else nf - c)
                    for j in range(count):
                        if j > 0:
                            if byte_at(buf, pos, n) != 44:
                                return 0, pos, nrec, nspan
                            pos = skip_ws(buf, pos + 1, n)
                        b = byte_at(buf, pos, n)
                        if h == _V_STR:  # the token's span, quotes included, decoded in Python
                            if b != 34:
                                return 0, pos, nrec, nspan
                            ints[nrec, c] = pos
                            pos = scalar_end(buf, pos, n)
                            ints[nrec, c + 1] = pos
                            continue
                        if h == _V_FLAG and (b == 116 or b == 102):
                            ints[nrec, c] = 1 if b == 116 else 0
                            pos = scalar_end(buf, pos, n)
                            continue
                        start = pos
                        pos, neg, is_float, mant, e10, too_long = number_token(buf, pos, n)
                        if pos < 0:
                            return 0, pos, nrec, nspan
                        if h == _V_INT or h == _V_FLAG:
                            if is_float or too_long:
                                return 0, pos, nrec, nspan
                            ints[nrec, c] = -mant if neg else mant
                            continue
                        if too_long and not is_float:
                            return 0, pos, nrec, nspan
                        v = 0.0
                        ok = False
                        if not too_long:
                            v, ok = to_float(neg, is_float, mant, e10)
                        slot = nrec * nf + c + j
                        flat[slot] = v
                        if not ok:  # Python converts it
                            if nspan >= spans.shape[0]:
                                return 0, pos, nrec, nspan
                            spans[nspan, 0] = kind
                            spans[nspan, 1] = slot
                            spans[nspan, 2] = start
                            spans[nspan, 3] = pos
                            nspan += 1
                        pos = skip_ws(buf, pos, n)
                    if h == _V_BOX or h == _V_OBB or h == _V_KPTS:
                        if byte_at(buf, pos, n) != 93:
                            return 0, pos, nrec, nspan
                        pos += 1
                if pos < 0:
                    return 0, pos, nrec, nspan
                pos, more = next_item(buf, pos, n, 125)
                if more < 0:
                    return 0, pos, nrec, nspan
                if more == 0:
                    break
        else:
            pos += 1
        if seen & required != required:
            return 0, pos, nrec, nspan
        present[nrec] = seen
        nrec += 1
        pos, more = next_item(buf, pos, n, 93)
        if more < 0:
            return 0, pos, nrec, nspan
        if more == 0:
            return 1, pos, nrec, nspan


@njit(**KERNEL)
def _scan_gt(
    buf,
    kb0, ko0, how0, col0, req0, ints0, floats0, present0,
    kb1, ko1, how1, col1, req1, ints1, floats1, present1,
    kb2, ko2, how2, col2, req2, ints2, floats2, present2,
    spans, stack, counts, segm,
):  # fmt: skip
    """Fill the three lists' columns: (status, spans); ``counts`` gets the records per list.
    ``segm``: where the annotations' segmentations go (see ``_records``), or ``None``."""
    n = buf.size
    # an int64, not the literal 0: numba would type (and compile) _records once for Literal[int](0) too
    nspan = np.int64(0)
    pos = skip_ws(buf, 0, n)
    if byte_at(buf, pos, n) != 123:
        return 0, nspan
    pos = skip_ws(buf, pos + 1, n)
    seen = 0
    if byte_at(buf, pos, n) == 125:
        return 0, nspan
    while True:
        if byte_at(buf, pos, n) != 34:
            return 0, nspan
        kstart = pos + 1
        pos, escaped = string_end(buf, pos, n)
        if pos < 0 or escaped:
            return 0, nspan
        which = _which_key(buf, kstart, pos - 1 - kstart, _LIST_KEYS, _LIST_OFF)
        pos = skip_ws(buf, pos, n)
        if byte_at(buf, pos, n) != 58:
            return 0, nspan
        pos = skip_ws(buf, pos + 1, n)
        if which < 0:
            pos = skip_value(buf, pos, n, stack)
            if pos < 0:
                return 0, nspan
        else:
            if seen & (1 << which):
                return 0, nspan
            seen |= 1 << which
            kb, ko, how, col, req, ints, floats, present = kb0, ko0, how0, col0, req0, ints0, floats0, present0
            if which == 1:
                kb, ko, how, col, req, ints, floats, present = kb1, ko1, how1, col1, req1, ints1, floats1, present1
            elif which == 2:
                kb, ko, how, col, req, ints, floats, present = kb2, ko2, how2, col2, req2, ints2, floats2, present2
            status, pos, nrec, nspan = _records(
                buf, pos, n, kb, ko, how, col, req, ints, floats, present, which, spans, nspan, stack, segm
            )
            if status != 1:
                return status, nspan
            counts[which] = nrec
        pos, more = next_item(buf, pos, n, 125)
        if more < 0:
            return 0, nspan
        if more == 0:
            return (1 if skip_ws(buf, pos, n) == n and seen == 7 else 0), nspan


def _specs(segm: bool, obb: bool, keypoints: int = 0) -> tuple:
    if keypoints:
        return (_GT_SPECS[0], _keypoints_spec(keypoints), _GT_SPECS[2])
    return (_GT_SPECS[0], _SEGM_ANN_SPEC if segm else _OBB_ANN_SPEC, _GT_SPECS[2]) if segm or obb else _GT_SPECS


def _gt_pass(
    buf: np.ndarray, caps: tuple[int, int, int], n_spans: int, segm: bool, obb: bool = False, keypoints: int = 0
):
    """One scan with room for ``caps`` records per list; with ``segm`` the annotations' segmentations
    are read into (seg, parts, coords, uruns, fill), sized for the worst case (pages touched only if used)."""
    tables = []
    args: list = [buf]
    specs = _specs(segm, obb, keypoints)
    n = buf.size if segm else 0
    seg_arrays = (
        np.empty((caps[1] if segm else 0, 6), np.int64),
        np.empty(n // 14 + 1, np.int64),  # parts: "[0,0,0,0,0,0]," at least
        np.empty(n // 2 + 1, np.float64),  # coordinates: a digit and a comma at least
        np.empty(n // 2 + 1, np.int64),  # uncompressed runs
        np.zeros(3, np.int64),
    )
    for spec, cap in zip(specs, caps):
        ints = np.empty((cap, spec.n_int), np.int64)
        floats = np.empty((cap, spec.n_float), np.float64)
        present = np.empty(cap, np.int64)
        args += [spec.key_bytes, spec.key_off, spec.how, spec.col, spec.required, ints, floats, present]
        tables.append((ints, floats, present))
    spans = np.empty((n_spans, 4), np.int64)
    counts = np.zeros(3, np.int64)
    # box evaluation's scan is compiled without the segmentation code (``segm`` None prunes it)
    status, nspan = _scan_gt(*args, spans, np.empty(MAX_DEPTH, np.uint8), counts, seg_arrays if segm else None)
    return status, tables, spans[:nspan], counts, seg_arrays


def parse_gt_columns(raw: bytes, segm: bool = False, obb: bool = False, keypoints: bool = False) -> dict | None:
    """Columns of a COCO ground truth file's bytes, or ``None``.

    Returns ``{"images": {"id", "height", "width"}, "annotations": {"id", "image_id",
    "category_id", "bbox", "area", "iscrowd", "ignore"}, "categories": {"id", "name"}}``,
    each list's records in file order, with the general loader's defaults: a missing
    height/width is -1, a missing area the box's ``w*h``, a missing iscrowd/ignore 0
    (``true``/``false`` read as 1/0), a missing name ``str(id)``. Ids and flags are int64,
    numbers float64 (``float(token)`` exactly), names a list of ``str``. ``segmentation``,
    ``keypoints`` and every other key are skipped (validated, not read).

    ``None`` (the general loader decides) for anything else: a top level that is not an
    object with exactly one each of ``images``, ``annotations`` and ``categories`` lists of
    objects, a missing ``id`` (or annotation ``image_id``, ``category_id``, ``bbox``), a
    duplicate key, string ids, a value of the wrong type (a ``null`` area included), an
    integer of 19+ digits, an infinite number, a key with escapes, malformed JSON.

    ``segm`` (mask evaluation): every annotation's ``segmentation`` is read too and the
    ``bbox`` may be missing: ``annotations`` gains ``"has_bbox"`` (bool; a missing box is zeros, its
    default area 0) and ``"segmentation"``: ``{"seg", "parts",
    "coords", "runs", "buf"}`` (see :func:`gt_masks`). Segmentations decline unless polygons
    ``[[x1, y1, ...], ...]`` (at least one part, each of 6+ numbers, an even count) or RLE
    ``{"size": [h, w], "counts": ...}`` with nothing else, compressed (as the results
    scanner reads it) or uncompressed (integer runs in ``[0, 2**32)``).

    ``obb`` (oriented boxes, hotcoco's ``obb``): every annotation's ``obb`` (5 numbers) is read into
    ``annotations["obb"]`` (N, 5), the ``bbox`` may be missing; ``"has_bbox"`` as for ``segm`` (the
    caller's area default is the oriented box's). In every mode ``annotations["has_area"]`` (bool) tells
    which annotations give their ``area``.

    ``keypoints`` (keypoint evaluation): every annotation's ``keypoints`` (3K numbers, K from the first list
    of numbers under that key in the file, so not the categories' names) is read into
    ``annotations["keypoints"]`` (N, 3K), and ``num_keypoints`` into ``annotations["num_keypoints"]`` (float64,
    NaN where missing).
    """
    count = 0
    if keypoints:
        from deteval.io.scan.results import first_keypoints_count

        count = first_keypoints_count(raw, numbers=True)
        if count <= 0 or count % 3:
            return None
    buf = np.frombuffer(raw, dtype=np.uint8)
    bound = len(raw) // _MIN_OBJECT_BYTES + 1
    guess = min(bound, len(raw) // 64 + 16)  # real records are longer: retry only when they are not
    status, tables, spans, counts, seg_arrays = _gt_pass(buf, (guess, guess, guess), 8 * guess, segm, obb, count)
    if status == 2:
        status, tables, spans, counts, seg_arrays = _gt_pass(buf, (bound, bound, bound), 8 * bound, segm, obb, count)
    if status != 1:
        return None
    floats_of = [t[1][: counts[i]] for i, t in enumerate(tables)]
    n_parts, n_coords, n_runs = seg_arrays[4].tolist()
    coords = seg_arrays[2][:n_coords]
    if len(spans):
        flat = [f.reshape(-1) for f in floats_of] + [coords]
        for which, slot, start, end in spans.tolist():
            v = float(raw[start:end])
            if not math.isfinite(v):
                return None
            flat[which][slot] = v
        del flat
    out = {}
    specs = _specs(segm, obb, count)
    for which, (name, spec) in enumerate(zip(("images", "annotations", "categories"), specs)):
        m = int(counts[which])
        ints, floats, present = tables[which][0][:m], floats_of[which], tables[which][2][:m]
        has = {key: (present >> i) & 1 == 1 for key, i in spec.index.items()}
        out[name] = {"_ints": ints, "_floats": floats, "_has": has}
    # from here the tables live in ``out`` only, so the annotations' are freed as their columns are taken: the
    # end of this scan is a large load's peak (o365: the columns and both tables, ~40 MB less this way)
    tables = floats_of = ints = floats = present = None
    img, ann, cat = out["images"], out["annotations"], out["categories"]
    lvis_found = {}
    for listname, fields in (("images", LVIS_IMAGE_FIELDS), ("categories", LVIS_CATEGORY_FIELDS)):
        table = out[listname]
        for field in fields:
            has = table["_has"][field]
            if has.any():
                i = int(np.argmax(has))
                lvis_found[field] = record_name(listname, i, int(table["_ints"][i, 0]))
    images = {
        "id": img["_ints"][:, 0].copy(),
        "height": np.where(img["_has"]["height"], img["_floats"][:, 0], -1.0),
        "width": np.where(img["_has"]["width"], img["_floats"][:, 1], -1.0),
    }
    a_ints, has = ann.pop("_ints"), ann["_has"]
    annotations = {
        "id": a_ints[:, 0].copy(),
        "image_id": a_ints[:, 1].copy(),
        "category_id": a_ints[:, 2].copy(),
        "iscrowd": np.where(has["iscrowd"], a_ints[:, 3], 0),
        "has_iscrowd": has["iscrowd"],
        "ignore": np.where(has["ignore"], a_ints[:, 4], 0),
    }
    del a_ints
    a_floats = ann.pop("_floats")
    box = a_floats[:, :4].copy()
    if segm or obb:
        box[~has["bbox"]] = 0.0  # as the general path's default [0, 0, 0, 0] (area 0)
        annotations["has_bbox"] = has["bbox"]
    annotations["has_area"] = has["area"]  # a missing area is warned of, whichever reader reads the file
    annotations["bbox"] = box
    annotations["area"] = np.where(has["area"], a_floats[:, 4], xywh_area(box))
    if obb:
        annotations["obb"] = a_floats[:, 5:10].copy()
    if count:  # the table's last use: its keypoint columns are moved down in it, not copied
        annotations["num_keypoints"] = np.where(has["num_keypoints"], a_floats[:, 5], np.nan)
        annotations["keypoints"] = tail_columns(a_floats, 6)
    del a_floats
    if segm:
        m = int(counts[1])
        annotations["segmentation"] = {
            "seg": seg_arrays[0][:m],
            "parts": seg_arrays[1][:n_parts],
            "coords": coords,
            "runs": seg_arrays[3][:n_runs],
            "buf": buf,
        }
    cat_ids = cat["_ints"][:, 0].copy()
    names = []
    for i, (given, start, end) in enumerate(zip(cat["_has"]["name"].tolist(), *cat["_ints"][:, 1:3].T.tolist())):
        if not given:
            names.append(str(int(cat_ids[i])))
            continue
        token = raw[start:end]
        names.append(json.loads(token) if b"\\" in token else token[1:-1].decode("utf-8"))
    return {
        "images": images,
        "annotations": annotations,
        "categories": {"id": cat_ids, "name": names},
        "lvis_found": lvis_found,
    }
