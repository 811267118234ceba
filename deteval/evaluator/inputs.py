"""Parsing of the streaming evaluator's inputs: batches of per-image dicts of arrays, lists or tensors.

Everything here turns what a training loop hands to :meth:`deteval.evaluator.Evaluator.update`
(torchmetrics' ``MeanAveragePrecision`` format) into flat NumPy columns, with errors that name
the update call, the list, the image and the rule broken. Torch is never imported unless the
user passes tensors (then it is already imported): tensors are recognised by duck typing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval.errors import InputError, warn
from deteval.rle import Masks, concat_masks, masks_from_binary
from deteval.types import IdTable, xywh_area

# the box conventions a batch of tensors may use; files keep their own (deteval.vocabulary.FILE_BOX_FORMATS)
TENSOR_BOX_FORMATS = ("xyxy", "xywh", "cxcywh")
# iou_type "obb": oriented boxes (n, 5) cx cy w h angle (radians), or quadrilaterals (n, 8) x1 y1 ... x4 y4
OBB_BOX_FORMATS = ("xywha", "poly")
_WIDTH = {"xywha": 5, "poly": 8}


def _is_tensor(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "detach") and hasattr(x, "device")


def _tensor_to_numpy(t: Any) -> np.ndarray:
    """A CPU tensor as an array (no copy where NumPy has the dtype)."""
    if t.requires_grad:
        t = t.detach()
    try:
        return t.numpy()
    except TypeError:  # bfloat16, float8 ...: NumPy has no such dtype; float32 holds them exactly
        return t.float().numpy()


def to_numpy_all(values: list) -> list:
    """Arrays for ``values``; tensors off the CPU go over in one transfer per (device, dtype)."""
    out: list = list(values)
    groups: dict = {}
    for i, v in enumerate(values):
        if _is_tensor(v):
            if v.device.type == "meta":  # shapes without data: nothing to evaluate
                rule = "a tensor on the 'meta' device holds no values: move it to a real device"
                raise InputError("update", None, rule)
            if v.device.type == "cpu":
                out[i] = _tensor_to_numpy(v)
            else:
                groups.setdefault((str(v.device), str(v.dtype)), []).append(i)
    if groups:
        import torch  # already imported: the user gave tensors

        for idx in groups.values():
            flat = _tensor_to_numpy(torch.cat([values[i].detach().reshape(-1) for i in idx]).cpu())
            ends = np.cumsum([values[i].numel() for i in idx])
            for i, part in zip(idx, np.split(flat, ends[:-1])):
                out[i] = part.reshape(tuple(values[i].shape))
    return out


def _numeric(v: Any, where: tuple[str, str], key: str) -> np.ndarray:
    try:
        arr = np.asarray(v)
    except (ValueError, TypeError) as exc:
        raise InputError(where[0], where[1], f"{key} is not an array of numbers ({exc})") from None
    if arr.size == 0:
        return arr.astype(np.float64)
    if arr.dtype.kind not in "iuf":
        raise InputError(where[0], where[1], f"{key} must be numbers, got dtype {arr.dtype}")
    return arr


def _vector(v: Any, where: tuple[str, str], key: str, n: int, kinds: str = "iuf") -> np.ndarray:
    try:
        arr = np.asarray(v)
    except (ValueError, TypeError) as exc:
        raise InputError(where[0], where[1], f"{key} is not an array ({exc})") from None
    if arr.size == 0 and n == 0:
        return arr.reshape(0)
    if arr.ndim != 1:
        raise InputError(where[0], where[1], f"{key} must have shape ({n},), got {arr.shape}")
    if len(arr) != n:
        rule = f"{key} has {len(arr)} values but boxes has {n} rows: give one per box"
        raise InputError(where[0], where[1], rule)
    if arr.dtype.kind not in kinds:
        raise InputError(where[0], where[1], f"{key} has dtype {arr.dtype}, expected {_KIND_NAMES[kinds]}")
    return arr


_KIND_NAMES = {
    "iuf": "numbers",
    "iufU": "integers, whole-number floats or strings",
    "iuU": "integers (or strings)",
    "iub": "booleans or 0/1 integers",
}


def _labels(v: Any, where: tuple[str, str], n: int) -> np.ndarray:
    """A labels vector: integers or strings; floats are accepted when every value is a whole number
    (``2.0`` is label 2, as a model's float output often holds), read as int64; ``2.5`` is an error."""
    arr = _vector(v, where, "labels", n, "iufU")
    if arr.dtype.kind != "f":
        return arr
    whole = np.isfinite(arr) & (arr == np.round(arr)) & (np.abs(arr) < 2.0**63)
    if not whole.all():
        j = int(np.argmax(~whole))
        rule = f"labels[{j}] = {arr[j].item()!r} is not a whole number: labels are category ids (integers)"
        raise InputError(where[0], where[1], rule)
    return arr.astype(np.int64)


def _boxes(v: Any, where: tuple[str, str], width: int = 4, box_format: str = "") -> np.ndarray:
    arr = _numeric(v, where, "boxes")
    if arr.size == 0:
        return np.zeros((0, width), np.float64)
    if arr.ndim != 2 or arr.shape[1] != width:
        fmt = f" with box_format {box_format!r}" if width != 4 else ""
        raise InputError(where[0], where[1], f"boxes must have shape (n, {width}){fmt}, got {arr.shape}")
    return arr


def _image_id(v: Any, where: tuple[str, str]) -> int | str | None:
    if v is None:
        return None
    if isinstance(v, np.ndarray):
        if v.size != 1:
            raise InputError(where[0], where[1], f"image_id must be one integer or string, got shape {v.shape}")
        v = v.reshape(-1)[0]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise InputError(where[0], where[1], f"image_id must be an integer or a string, got {v!r}")
    return v


def _to_xywh(boxes: np.ndarray, box_format: str) -> np.ndarray:
    """COCO's xywh from ``box_format``: one subtraction for xyxy, w/2 and h/2 for cxcywh."""
    if box_format == "xywh":
        return boxes
    out = np.empty_like(boxes)
    if box_format == "xyxy":
        out[:, :2] = boxes[:, :2]
        out[:, 2:] = boxes[:, 2:] - boxes[:, :2]
    else:  # cxcywh
        out[:, :2] = boxes[:, :2] - boxes[:, 2:] / 2
        out[:, 2:] = boxes[:, 2:]
    return out


@dataclass
class Batch:
    image_ids: list  # per image: int, str or None
    gt_image: np.ndarray
    gt_boxes: np.ndarray  # xywh; as given for the oriented formats (n, 5) or (n, 8)
    gt_labels: np.ndarray
    gt_crowd: np.ndarray
    gt_area: np.ndarray
    gt_ignore: np.ndarray
    dt_image: np.ndarray
    dt_boxes: np.ndarray  # xywh; as given for the oriented formats (and with as_given)
    dt_scores: np.ndarray
    dt_labels: np.ndarray
    dt_area: np.ndarray | None = None  # w*h (the quadrilateral's area for "poly")
    gt_difficult: np.ndarray | None = None  # when asked for (flags): bool (m,)
    image_values: np.ndarray | None = None  # float64 (I, F): the numbers of image_keys, per image
    gt_values: np.ndarray | None = None  # float64 (m, V): the numbers of box_keys, per target box


_PRED_KEYS = ("boxes", "scores", "labels")
_TARGET_KEYS = ("boxes", "labels")
_TARGET_OPTIONAL = ("iscrowd", "area", "ignore", "difficult")
_PER_IMAGE = len(_PRED_KEYS) + len(_TARGET_KEYS) + len(_TARGET_OPTIONAL) + 2  # values per (pred, target), in order


def as_list(x: Any, name: str) -> list:
    """``x`` as a list of per-image dicts (a list, tuple or other sequence); a lone dict or string is an error."""
    if isinstance(x, Mapping):
        raise InputError(name, None, "expected a list with one dict per image, got a single dict (wrap it in a list)")
    if isinstance(x, (str, bytes)) or not isinstance(x, Sequence):
        raise InputError(name, None, f"expected a list with one dict per image, got {type(x).__name__}")
    return list(x)


def first_bad(bad: np.ndarray, image_of_row: np.ndarray) -> tuple[int, int]:
    """(row, image in batch) of the first True in ``bad``."""
    row = int(np.argmax(bad))
    return row, int(image_of_row[row])


def parse_batch(
    preds: list,
    target: list,
    box_format: str,
    call: int,
    *,
    as_given: bool = False,
    flags: Sequence[str] = ("iscrowd", "ignore"),
    image_keys: Sequence[str] = (),
    box_keys: Sequence[str] = (),
) -> Batch:
    """A batch's flat columns; ``box_format`` one of TENSOR_BOX_FORMATS (boxes become xywh, unless ``as_given``)
    or OBB_BOX_FORMATS (kept as given; default GT area ``w*h`` or the quadrilateral's shoelace area).

    ``flags``: the per-box boolean keys of a target read (``iscrowd``, ``ignore``, ``difficult``; others are
    not read); ``image_keys``: numbers each target must carry for its image (``Batch.image_values``);
    ``box_keys``: numbers each target must carry per box, finite (``Batch.gt_values``).
    """
    n_img = len(preds)
    width = _WIDTH.get(box_format, 4)
    per_image = _PER_IMAGE + len(image_keys) + len(box_keys)
    raw: list = []
    for i, (p, t) in enumerate(zip(preds, target)):
        for name, d, keys in (("preds", p, _PRED_KEYS), ("target", t, _TARGET_KEYS)):
            if not isinstance(d, Mapping):
                rule = f"expected a dict with keys {', '.join(keys)}, got {type(d).__name__}"
                raise InputError(name, f"update {call}, {name}[{i}]", rule)
            for k in keys:
                if k not in d:
                    raise InputError(name, f"update {call}, {name}[{i}]", f"missing key {k!r}")
        raw.extend(p[k] for k in _PRED_KEYS)
        raw.extend(t[k] for k in _TARGET_KEYS)
        raw.extend(t.get(k) if k in flags or k == "area" else None for k in _TARGET_OPTIONAL)
        raw.extend((p.get("image_id"), t.get("image_id")))
        for k in (*image_keys, *box_keys):
            if k not in t:
                raise InputError("target", f"update {call}, target[{i}]", f"missing key {k!r}")
            raw.append(t[k])
    vals = to_numpy_all(raw)

    image_ids: list = []
    per: dict[str, list] = {k: [] for k in ("pb", "ps", "pl", "tb", "tl", "tc", "ta", "ti", "td", "tv")}
    image_values = np.zeros((n_img, len(image_keys)), np.float64)
    for i in range(n_img):
        pb, ps, pl, tb, tl, tc, ta, ti, td, pid, tid = vals[i * per_image : i * per_image + _PER_IMAGE]
        wp, wt = ("preds", f"update {call}, preds[{i}]"), ("target", f"update {call}, target[{i}]")
        pid, tid = _image_id(pid, wp), _image_id(tid, wt)
        if pid is not None and tid is not None and pid != tid:
            raise InputError("preds", wp[1], f"image_id {pid!r} differs from the target's image_id {tid!r}")
        iid = tid if tid is not None else pid
        image_ids.append(iid)
        if iid is not None:
            wp, wt = (wp[0], f"{wp[1]} (image_id={iid!r})"), (wt[0], f"{wt[1]} (image_id={iid!r})")
        pb = _boxes(pb, wp, width, box_format)
        per["pb"].append(pb)
        per["ps"].append(_vector(ps, wp, "scores", len(pb)))
        per["pl"].append(_labels(pl, wp, len(pb)))
        tb = _boxes(tb, wt, width, box_format)
        per["tb"].append(tb)
        per["tl"].append(_labels(tl, wt, len(tb)))
        per["tc"].append(None if tc is None else _vector(tc, wt, "iscrowd", len(tb), "iub"))
        per["ta"].append(None if ta is None else _vector(ta, wt, "area", len(tb)))
        per["ti"].append(None if ti is None else _vector(ti, wt, "ignore", len(tb), "iub"))
        per["td"].append(None if td is None else _vector(td, wt, "difficult", len(tb), "iub"))
        for j, k in enumerate(image_keys):
            image_values[i, j] = _image_number(vals[i * per_image + _PER_IMAGE + j], wt, k)
        first_value = i * per_image + _PER_IMAGE + len(image_keys)
        per["tv"].append([_box_numbers(vals[first_value + j], wt, k, len(tb)) for j, k in enumerate(box_keys)])

    n_dt = np.array([len(b) for b in per["pb"]], np.int64)
    n_gt = np.array([len(b) for b in per["tb"]], np.int64)
    dt_image = np.repeat(np.arange(n_img, dtype=np.int32), n_dt)
    gt_image = np.repeat(np.arange(n_img, dtype=np.int32), n_gt)

    def where(kind: str, row_image: np.ndarray, bad: np.ndarray) -> tuple[str, str, int]:
        row, img = first_bad(bad, row_image)
        first = int(np.sum(n_dt[:img] if kind == "preds" else n_gt[:img]))
        rec = f"update {call}, {kind}[{img}]"
        if image_ids[img] is not None:
            rec += f" (image_id={image_ids[img]!r})"
        return kind, rec, row - first

    def floats(parts: list, width: int | None) -> np.ndarray:
        if not parts:
            return np.zeros((0, width) if width else 0, np.float64)
        return np.concatenate(parts).astype(np.float64, copy=False)

    dt_raw, gt_raw = floats(per["pb"], width), floats(per["tb"], width)
    dt_scores = floats(per["ps"], None)
    for kind, arr, rows, key in (
        ("preds", dt_raw, dt_image, "boxes"),
        ("target", gt_raw, gt_image, "boxes"),
        ("preds", dt_scores, dt_image, "scores"),
    ):
        bad = ~np.isfinite(arr) if arr.ndim == 1 else ~np.isfinite(arr).all(axis=1)
        if bad.any():
            src, rec, j = where(kind, rows, bad)
            raise InputError(src, rec, f"{key}[{j}] is not finite: {arr[np.argmax(bad)].tolist()}")
    if box_format in OBB_BOX_FORMATS:
        dt_boxes, gt_boxes = dt_raw, gt_raw
    else:
        dt_boxes, gt_boxes = _to_xywh(dt_raw, box_format), _to_xywh(gt_raw, box_format)
    dt_area = default_area(dt_boxes, box_format)
    for kind, box, raw_box, rows in (("preds", dt_boxes, dt_raw, dt_image), ("target", gt_boxes, gt_raw, gt_image)):
        if box_format == "poly":
            from deteval.geometry.quads import is_simple_quad

            bad = ~is_simple_quad(box) if len(box) else np.zeros(0, bool)
            what = "is self-intersecting (two opposite edges cross): not a polygon"
        else:
            bad = (box[:, 2] < 0) | (box[:, 3] < 0)
            what = f"has a negative width or height as {box_format}"
        if bad.any():
            src, rec, j = where(kind, rows, bad)
            raise InputError(src, rec, f"boxes[{j}] = {raw_box[np.argmax(bad)].tolist()} {what}")

    labels = per["pl"] + per["tl"]
    kinds = {a.dtype.kind for a in labels if len(a)}
    if len(kinds - {"i", "u"}) and len(kinds) > 1:
        raise InputError("labels", f"update {call}", "labels mix integers and strings")
    if kinds == {"U"}:
        dt_labels = np.concatenate([a.astype(str) for a in per["pl"]]) if per["pl"] else np.zeros(0, str)
        gt_labels = np.concatenate([a.astype(str) for a in per["tl"]]) if per["tl"] else np.zeros(0, str)
    else:
        dt_labels = np.concatenate([a.astype(np.int64) for a in per["pl"]]) if per["pl"] else np.zeros(0, np.int64)
        gt_labels = np.concatenate([a.astype(np.int64) for a in per["tl"]]) if per["tl"] else np.zeros(0, np.int64)

    gt_crowd = _optional(per["tc"], n_gt, bool)
    gt_ignore = _optional(per["ti"], n_gt, bool)
    gt_area = default_area(gt_boxes, box_format)
    given = [a is not None for a in per["ta"]]
    if any(given):
        has = np.repeat(np.array(given), n_gt)
        gt_area[has] = np.concatenate([a for a in per["ta"] if a is not None]).astype(np.float64)
        bad = ~np.isfinite(gt_area)
        if bad.any():
            src, rec, j = where("target", gt_image, bad)
            raise InputError(src, rec, f"area[{j}] is not finite: {gt_area[np.argmax(bad)]!r}")
    if as_given:  # the protocol reads the boxes in the batch's own format
        dt_boxes, gt_boxes = dt_raw, gt_raw
    return Batch(
        image_ids=image_ids,
        gt_image=gt_image,
        gt_boxes=gt_boxes,
        gt_labels=gt_labels,
        gt_crowd=gt_crowd,
        gt_area=gt_area,
        gt_ignore=gt_ignore,
        dt_image=dt_image,
        dt_boxes=dt_boxes,
        dt_scores=dt_scores,
        dt_labels=dt_labels,
        dt_area=dt_area,
        gt_difficult=_optional(per["td"], n_gt, bool) if "difficult" in flags else None,
        image_values=image_values,
        gt_values=(
            np.concatenate([np.stack(v, axis=1) for v in per["tv"]])
            if box_keys and per["tv"] else np.zeros((len(gt_labels), len(box_keys)))
        ),
    )


def _box_numbers(v: Any, where: tuple[str, str], key: str, n: int) -> np.ndarray:
    """A target's number per box (CityPersons' ``height``): ``n`` finite numbers, float64."""
    arr = _vector(v, where, key, n).astype(np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        j = int(np.argmax(bad))
        raise InputError(where[0], where[1], f"{key}[{j}] is not finite: {arr[j]!r}")
    return arr


def _image_number(v: Any, where: tuple[str, str], key: str) -> float:
    """A target's number for its image (CrowdPose's ``crowd_index``): one finite number."""
    arr = _numeric(v, where, key)
    if arr.size != 1 or not np.isfinite(arr.reshape(-1)[0]):
        raise InputError(where[0], where[1], f"{key} must be one finite number, got {np.asarray(v).tolist()!r}")
    return float(arr.reshape(-1)[0])


def default_area(boxes: np.ndarray, box_format: str) -> np.ndarray:
    """A box's area when none is given: ``w*h`` (torchmetrics' and load_coco_gt's default; hotcoco's for
    oriented boxes), a quadrilateral's absolute shoelace area."""
    if box_format == "poly":
        from deteval.geometry.quads import quad_area

        return quad_area(boxes) if len(boxes) else np.zeros(0)
    return xywh_area(boxes)  # columns 2 and 3: w and h of xywh and xywha alike


def _encode_masks(v: Any, where: tuple[str, str]) -> Masks:
    """Binary masks ``(n, height, width)`` (nonzero: inside) as run-length masks, one row per mask."""
    arr = _tensor_to_numpy(v) if _is_tensor(v) else np.asarray(v)
    try:
        return masks_from_binary(arr)
    except ValueError as e:
        raise InputError(where[0], where[1], str(e)) from None


def with_masks(preds: list, target: list, box_format: str, call: int):
    """Encode each image's masks; give images without boxes their masks' extents as boxes (in ``box_format``).

    Returns copies of the dicts (the user's are not modified), the masks of every detection and
    every target in row order (:class:`~deteval.rle.Masks`), and per target row whether ``area`` was given.
    """
    encoded: tuple[list[Masks], list[Masks]] = ([], [])
    area_given: list = []
    out = ([], [])
    mixed: list[tuple[int, set]] = []  # images whose masks are not all of one size, with the sizes
    for i, (p, t) in enumerate(zip(preds, target)):
        sizes: set = set()
        for kind, d in (("preds", p), ("target", t)):
            where = (kind, f"update {call}, {kind}[{i}]")
            if not isinstance(d, Mapping) or "masks" not in d:
                raise InputError(where[0], where[1], "missing key 'masks' (iou_type 'segm')")
            m = _encode_masks(d["masks"], where)
            n = len(to_numpy_all([d["labels"]])[0]) if "labels" in d else len(m)
            if len(m) != n:
                raise InputError(where[0], where[1], f"{len(m)} masks for {n} labels")
            d = dict(d)
            if "boxes" not in d:
                d["boxes"] = _from_xywh(m.extents(), box_format)
            encoded[kind == "target"].append(m)
            out[kind == "target"].append(d)
            if kind == "target":
                area_given.extend([d.get("area") is not None] * n)
            sizes.update(zip(m.height.tolist(), m.width.tolist()))
        if len(sizes) > 1:
            mixed.append((i, sizes))
    if mixed:  # pycocotools' mask IoU refuses such pairs ("The dt and gt should have the same size")
        i, sizes = mixed[0]
        shown = ", ".join(f"{h}x{w}" for h, w in sorted(sizes)[:4])
        warn(
            f"update {call}: {len(mixed)} images have masks of different sizes; first: preds[{i}]/target[{i}] "
            f"({shown}): give every mask of an image at the image's size"
        )
    dt_masks, gt_masks = (concat_masks(parts) for parts in encoded)
    return out[0], out[1], dt_masks, gt_masks, np.array(area_given, dtype=bool)


def _keypoint_rows(v: Any, where: tuple[str, str], n: int | None) -> np.ndarray:
    """One image's keypoints as float64 (n, 3K) rows ``x, y, v`` per keypoint, from (n, 3K) or (n, K, 3)."""
    arr = _numeric(v, where, "keypoints")
    if arr.ndim == 3 and arr.shape[2] == 3:
        arr = arr.reshape(len(arr), -1)
    if arr.size == 0 and arr.ndim < 2:
        arr = arr.reshape(0, 0)
    if arr.ndim != 2 or arr.shape[1] % 3 or (n is not None and len(arr) != n):
        rule = f"keypoints must have shape (n, 3K) or (n, K, 3){'' if n is None else f' with n = {n}'}, got {arr.shape}"
        raise InputError(where[0], where[1], rule)
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        raise InputError(where[0], where[1], "keypoints are not all finite")
    return arr


def with_keypoints(preds: list, target: list, box_format: str, call: int):
    """Each image's keypoints (iou_type ``"keypoints"``); a prediction's box and area are its keypoints' extent.

    As pycocotools' ``loadRes`` reads keypoint results without ``bbox``: the extent of every keypoint, unlabelled
    (0, 0) ones included (a prediction's ``boxes`` are not read). A target's ``num_keypoints`` is given or the
    count of keypoints with visibility > 0. Returns copies of the dicts (predictions with the extents as
    ``boxes``, in ``box_format``), the predictions' keypoints (N, 3K), their areas, the targets' keypoints
    (M, 3K) and ``num_keypoints``.
    """
    kp: tuple[list, list] = ([], [])
    num: list = []
    out: tuple[list, list] = ([], [])
    raw = to_numpy_all([d.get(k) if isinstance(d, Mapping) else None for p, t in zip(preds, target)
                        for d, k in ((p, "keypoints"), (t, "keypoints"), (t, "num_keypoints"))])  # fmt: skip
    for i, (p, t) in enumerate(zip(preds, target)):
        for j, (kind, d) in enumerate((("preds", p), ("target", t))):
            where = (kind, f"update {call}, {kind}[{i}]")
            if not isinstance(d, Mapping) or raw[3 * i + j] is None:
                raise InputError(where[0], where[1], "missing key 'keypoints' (iou_type 'keypoints')")
            n = len(to_numpy_all([d["labels"]])[0]) if "labels" in d else None
            rows = _keypoint_rows(raw[3 * i + j], where, n)
            kp[j].append(rows)
            d = dict(d)
            if kind == "preds":
                d["boxes"] = _from_xywh(_extent(rows)[0], box_format)
            else:
                given = raw[3 * i + 2]
                counted = (rows[:, 2::3] > 0).sum(axis=1).astype(np.float64)
                num.append(counted if given is None else _vector(given, where, "num_keypoints", len(rows)))
            out[j].append(d)
    width = next((a.shape[1] for parts in kp for a in parts if len(a)), 0)
    dt_kp, gt_kp = (np.concatenate([np.zeros((0, width)), *(a for a in parts if len(a))]) for parts in kp)
    n_kpt = np.concatenate(num).astype(np.float64) if num else np.zeros(0)
    return out[0], out[1], dt_kp, _extent(dt_kp)[1], gt_kp, n_kpt


def _extent(keypoints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """xywh boxes and areas of the keypoints' extents (``loadRes``' keypoint branch)."""
    if keypoints.shape[1] == 0:
        return np.zeros((len(keypoints), 4)), np.zeros(len(keypoints))
    x, y = keypoints[:, 0::3], keypoints[:, 1::3]
    x0, x1, y0, y1 = x.min(axis=1), x.max(axis=1), y.min(axis=1), y.max(axis=1)
    return np.stack([x0, y0, x1 - x0, y1 - y0], axis=1), (x1 - x0) * (y1 - y0)


def _from_xywh(boxes: np.ndarray, box_format: str) -> np.ndarray:
    x, y, w, h = boxes.T
    if box_format == "xyxy":
        return np.stack([x, y, x + w, y + h], axis=1)
    if box_format == "cxcywh":
        return np.stack([x + w / 2, y + h / 2, w, h], axis=1)
    return boxes


def _optional(parts: list, counts: np.ndarray, dtype: type) -> np.ndarray:
    out = np.zeros(int(counts.sum()), dtype)
    if any(p is not None for p in parts):
        start = np.concatenate([[0], np.cumsum(counts)])
        for i, p in enumerate(parts):
            if p is not None and len(p):
                out[start[i] : start[i + 1]] = p != 0
    return out


def category_table(categories: Sequence | Mapping | None) -> IdTable | None:
    """The ``categories`` argument as an id table (ids sorted, names of a mapping kept); None stays None."""
    if categories is None:
        return None
    names = None
    if isinstance(categories, Mapping):
        items = list(categories.items())
        values = [k for k, _ in items]
    else:
        values = to_numpy_all([categories])[0]
        values = np.asarray(values).reshape(-1).tolist()
    if not values:
        raise InputError("categories", None, "categories is empty; leave it None to take the labels seen")
    if any(isinstance(v, float) for v in values):  # whole floats are ids, as in labels (2.0 is category 2)
        bad = [v for v in values if isinstance(v, float) and not (math.isfinite(v) and v == int(v))]
        if bad:
            raise InputError("categories", None, f"category {bad[0]!r} is not a whole number: ids are integers")
        values = [int(v) if isinstance(v, float) else v for v in values]
    kinds = {type(v) for v in values}
    if not (kinds <= {int} or kinds <= {str}):
        raise InputError("categories", None, f"categories must be integers or strings, got {sorted(map(str, kinds))}")
    ids = np.array(values, dtype=np.int64 if kinds <= {int} else str)
    uniq, first = np.unique(ids, return_index=True)
    if len(uniq) != len(ids):
        raise InputError("categories", None, "categories lists an id twice")
    if isinstance(categories, Mapping):
        names = [str(items[i][1]) for i in first]
    return IdTable(uniq, names=names)
