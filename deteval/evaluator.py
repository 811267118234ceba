"""Streaming evaluation for training loops: ``Evaluator.update()`` per batch, ``compute()`` once.

Matching happens in :meth:`Evaluator.update`, batch by batch, with the protocol's own
``match()``; what is kept is flat arrays (:class:`EvaluatorState`), one row per detection
that survives the max-dets cut. :meth:`Evaluator.compute` only ranks and reduces, with the
protocol's own ``result_from_matches()``, after mapping the user's image ids to one id-sorted
order: the numbers are those of :func:`deteval.evaluate` on the same boxes, bit for bit,
whatever the batch order, the batch sizes, the number of processes or of machines.

States merge by concatenation (:func:`merge_states`, :meth:`Evaluator.merge`): accumulation
sorts rows by (category, image, rank), a key unique per row, so the order in which shards
arrive never changes a result. :mod:`deteval.distributed` gathers them over
``torch.distributed``; :mod:`deteval.dask` shards a dataset over Dask workers.

Torch is never imported here unless the user passes tensors (then it is already imported):
tensors are recognised by duck typing.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from deteval.errors import InputError
from deteval.protocols.coco import CocoMatches, CocoParams, make_params, match, result_from_matches
from deteval.result import EvalResult
from deteval.types import Detections, GroundTruth, IdTable, has_duplicates, sorted_unique, xywh_area

__all__ = ["BOX_FORMATS", "Evaluator", "EvaluatorState", "merge_states", "result_from_state", "state_from_matches"]

BOX_FORMATS = ("xyxy", "xywh", "cxcywh")
PROTOCOLS = ("coco",)


# --------------------------------------------------------------------------------------
# the state


@dataclass(frozen=True)
class EvaluatorState:
    """Everything :meth:`Evaluator.compute` needs, as flat NumPy arrays; picklable.

    Image ids and labels are the user's own values (int64 or str), so states built
    anywhere (batches, processes, Dask workers) concatenate without renumbering.
    Memory: per kept detection ``4 + 8 + 4 + 8 + A*T`` bytes (image, label, rank, score,
    one int8 per area range and IoU threshold): 64 bytes with COCO's defaults (A=4, T=10);
    8 bytes per image; ``16 + 8*A`` bytes per (batch, category present in it).
    """

    config: tuple  # what must agree for states to merge (see Evaluator._config)
    id_mode: str | None  # "given", "auto", or None while there are no images
    image_ids: np.ndarray  # (I,) int64 or str: the images, in arrival order
    det_image: np.ndarray  # int32 (N,): index into image_ids
    det_label: np.ndarray  # (N,) int64 or str: the detection's label (category id)
    det_rank: np.ndarray  # int32 (N,): rank by score within (image, label)
    det_score: np.ndarray  # float64 (N,)
    det_state: np.ndarray  # int8 (N, A, T): FP 0, TP 1, ignored 2
    cat_label: np.ndarray  # (P,) int64 or str: a label seen, once per shard that saw it
    cat_npig: np.ndarray  # int64 (P, A): ground truth that counts, per area range
    cat_ndet: np.ndarray  # int64 (P,): detections before the max-dets cut

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return sum(getattr(self, f.name).nbytes for f in fields(self) if f.name not in ("config", "id_mode"))

    @property
    def num_images(self) -> int:
        return len(self.image_ids)

    @property
    def num_detections(self) -> int:
        """Detections kept (after the per-image, per-category max-dets cut)."""
        return len(self.det_score)

    @classmethod
    def empty(cls, config: tuple, n_area: int, n_thr: int) -> EvaluatorState:
        i64 = np.zeros(0, np.int64)
        return cls(
            config=config,
            id_mode=None,
            image_ids=i64,
            det_image=np.zeros(0, np.int32),
            det_label=i64,
            det_rank=np.zeros(0, np.int32),
            det_score=np.zeros(0, np.float64),
            det_state=np.zeros((0, n_area, n_thr), np.int8),
            cat_label=i64,
            cat_npig=np.zeros((0, n_area), np.int64),
            cat_ndet=i64,
        )


def _concat_ids(arrays: list[np.ndarray], what: str) -> np.ndarray:
    """Concatenate id arrays (int64 or str); empty arrays do not decide the kind."""
    full = [a for a in arrays if len(a)]
    if not full:
        return arrays[0] if arrays else np.zeros(0, np.int64)
    kinds = {a.dtype.kind for a in full}
    if len(kinds) > 1:
        raise InputError(what, None, "some states use integer ids and others strings: use one kind everywhere")
    return full[0] if len(full) == 1 else np.concatenate(full)


def merge_states(states: Sequence[EvaluatorState]) -> EvaluatorState:
    """One state holding every row of ``states`` (any order: results do not depend on it).

    Raises
    ------
    InputError
        States made with different parameters or categories, or one giving image ids
        and another assigning them automatically.
    """
    states = list(states)
    if not states:
        raise InputError("merge", None, "nothing to merge")
    first = states[0]
    for s in states[1:]:
        if s.config != first.config:
            raise InputError(
                "merge", None,
                "the states were made with different protocol parameters or categories: "
                f"{_describe(first.config)} vs {_describe(s.config)}",
            )  # fmt: skip
    modes = {s.id_mode for s in states} - {None}
    if len(modes) > 1:
        raise InputError(
            "merge", None,
            "one state has image ids given by the user and another has ids assigned automatically; "
            "automatic ids of different evaluators can name different images alike: give image_id everywhere",
        )  # fmt: skip
    if len(states) == 1:
        return first
    offsets = np.cumsum([0] + [s.num_images for s in states[:-1]])
    return EvaluatorState(
        config=first.config,
        id_mode=modes.pop() if modes else None,
        image_ids=_concat_ids([s.image_ids for s in states], "image_id"),
        det_image=np.concatenate([s.det_image + np.int32(o) for s, o in zip(states, offsets)]).astype(np.int32),
        det_label=_concat_ids([s.det_label for s in states], "labels"),
        det_rank=np.concatenate([s.det_rank for s in states]),
        det_score=np.concatenate([s.det_score for s in states]),
        det_state=np.concatenate([s.det_state for s in states]),
        cat_label=_concat_ids([s.cat_label for s in states], "labels"),
        cat_npig=np.concatenate([s.cat_npig for s in states]),
        cat_ndet=np.concatenate([s.cat_ndet for s in states]),
    )


def _describe(config: tuple) -> str:
    return ", ".join(f"{k}={v}" for k, v in config)


def state_config(params: CocoParams, categories: IdTable | None, protocol: str = "coco") -> tuple:
    """The key that states must share to merge: protocol, parameters and categories."""
    return (
        ("protocol", protocol),
        ("iou_type", params.iou_type),
        ("iou_thrs", tuple(params.iou_thrs.tolist())),
        ("rec_thrs", tuple(params.rec_thrs.tolist())),
        ("max_dets", params.max_dets),
        ("area_ranges", tuple(zip(params.area_labels, map(tuple, params.area_ranges.tolist())))),
        ("use_cats", params.use_cats),
        ("compat", params.compat),
        ("categories", None if categories is None else tuple(categories.ids.tolist())),
    )


def state_from_matches(
    matches: CocoMatches,
    image_ids: np.ndarray,
    category_ids: np.ndarray,
    config: tuple,
    id_mode: str | None,
) -> EvaluatorState:
    """An :class:`EvaluatorState` from one shard's matches.

    ``matches.det_image`` indexes ``image_ids`` (the shard's images, each listed once) and
    ``matches.det_category`` indexes ``category_ids`` (the shard's categories, ascending).
    """
    m = matches
    cats = np.asarray(category_ids)
    n_cat = len(cats)
    if m.npig.shape[0] == n_cat:  # per category
        cat_npig, cat_ndet = m.npig, m.ndet
        det_label = cats[m.det_category] if n_cat else np.zeros(0, np.int64)
    else:  # categories pooled: one row; which label carries it does not matter (compute sums them)
        cat_npig = np.zeros((n_cat, m.npig.shape[1]), np.int64)
        cat_ndet = np.zeros(n_cat, np.int64)
        if n_cat:
            cat_npig[0], cat_ndet[0] = m.npig[0], m.ndet[0]
        det_label = np.repeat(cats[:1], len(m.det_score)) if n_cat else np.zeros(0, np.int64)
    return EvaluatorState(
        config=config,
        id_mode=id_mode if len(image_ids) else None,
        image_ids=np.asarray(image_ids),
        det_image=np.asarray(m.det_image, np.int32),
        det_label=det_label,
        det_rank=np.asarray(m.det_rank, np.int32),
        det_score=np.asarray(m.det_score, np.float64),
        det_state=np.asarray(m.state, np.int8),
        cat_label=cats,
        cat_npig=np.asarray(cat_npig, np.int64),
        cat_ndet=np.asarray(cat_ndet, np.int64),
    )


def result_from_state(state: EvaluatorState, params: CocoParams, categories: IdTable | None = None) -> EvalResult:
    """Rank and reduce a (merged) state: the numbers of :func:`deteval.evaluate`.

    Images are ordered by ascending id (``np.unique`` of every id seen), as evaluate()
    orders the ground truth's images. ``categories=None`` evaluates the sorted union of
    the labels seen in targets and predictions.

    Raises
    ------
    InputError
        An image id seen more than once, or a label outside ``categories``.
    """
    ids, inverse, counts = np.unique(state.image_ids, return_inverse=True, return_counts=True)
    if len(counts) and counts.max() > 1:
        dup = ids[int(np.argmax(counts > 1))]
        dup = dup.item() if hasattr(dup, "item") else dup
        rule = (
            f"this image was given {int(counts.max())} times; every image must be updated exactly once across "
            "batches, processes and merged evaluators (DistributedSampler pads the last batch by repeating "
            "images: set drop_last or skip the padded samples)"
        )
        raise InputError("image_id", repr(dup), rule)
    table = categories if categories is not None else IdTable(sorted_unique(state.cat_label))
    n_area = state.det_state.shape[1]
    if params.use_cats:
        k = len(table)
        row_cat, found = table.lookup(state.cat_label)
        det_cat, det_found = table.lookup(state.det_label)
        if not (found.all() and det_found.all()):
            bad = state.cat_label[~found] if not found.all() else state.det_label[~det_found]
            raise InputError("labels", None, f"label {bad[0]!r} is not one of the categories {table.ids.tolist()}")
        npig = np.zeros((k, n_area), np.int64)
        ndet = np.zeros(k, np.int64)
        np.add.at(npig, row_cat, state.cat_npig)
        np.add.at(ndet, row_cat, state.cat_ndet)
    else:
        det_cat = np.zeros(len(state.det_score), np.int32)
        npig = state.cat_npig.sum(axis=0, keepdims=True).astype(np.int64).reshape(1, n_area)
        ndet = np.array([state.cat_ndet.sum()], np.int64)
    matches = CocoMatches(
        det_category=det_cat.astype(np.int32),
        det_image=inverse.reshape(-1)[state.det_image].astype(np.int32),
        det_rank=state.det_rank,
        det_score=state.det_score,
        state=state.det_state,
        npig=npig,
        ndet=ndet,
    )
    return result_from_matches(matches, table, params)


# --------------------------------------------------------------------------------------
# input conversion


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


def _to_numpy_all(values: list) -> list:
    """Arrays for ``values``; tensors off the CPU go over in one transfer per (device, dtype)."""
    out: list = list(values)
    groups: dict = {}
    for i, v in enumerate(values):
        if _is_tensor(v):
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


_KIND_NAMES = {"iuf": "numbers", "iuU": "integers (or strings)", "iub": "booleans or 0/1 integers"}


def _boxes(v: Any, where: tuple[str, str]) -> np.ndarray:
    arr = _numeric(v, where, "boxes")
    if arr.size == 0:
        return np.zeros((0, 4), np.float64)
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise InputError(where[0], where[1], f"boxes must have shape (n, 4), got {arr.shape}")
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
class _Batch:
    image_ids: list  # per image: int, str or None
    gt_image: np.ndarray
    gt_boxes: np.ndarray  # xywh
    gt_labels: np.ndarray
    gt_crowd: np.ndarray
    gt_area: np.ndarray
    gt_ignore: np.ndarray
    dt_image: np.ndarray
    dt_boxes: np.ndarray  # xywh
    dt_scores: np.ndarray
    dt_labels: np.ndarray


_PER_IMAGE = 10  # values taken from each (pred, target) pair, in this order:
_PRED_KEYS = ("boxes", "scores", "labels")
_TARGET_KEYS = ("boxes", "labels")
_TARGET_OPTIONAL = ("iscrowd", "area", "ignore")


def _as_list(x: Any, name: str) -> list:
    if isinstance(x, Mapping):
        raise InputError(name, None, "expected a list with one dict per image, got a single dict (wrap it in a list)")
    if isinstance(x, (str, bytes)) or not isinstance(x, Sequence):
        raise InputError(name, None, f"expected a list with one dict per image, got {type(x).__name__}")
    return list(x)


def _first_bad(bad: np.ndarray, image_of_row: np.ndarray) -> tuple[int, int]:
    """(row, image in batch) of the first True in ``bad``."""
    row = int(np.argmax(bad))
    return row, int(image_of_row[row])


def _parse_batch(preds: list, target: list, box_format: str, call: int) -> _Batch:
    n_img = len(preds)
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
        raw.extend(t.get(k) for k in _TARGET_OPTIONAL)
        raw.extend((p.get("image_id"), t.get("image_id")))
    vals = _to_numpy_all(raw)

    image_ids: list = []
    per: dict[str, list] = {k: [] for k in ("pb", "ps", "pl", "tb", "tl", "tc", "ta", "ti")}
    for i in range(n_img):
        pb, ps, pl, tb, tl, tc, ta, ti, pid, tid = vals[i * _PER_IMAGE : (i + 1) * _PER_IMAGE]
        wp, wt = ("preds", f"update {call}, preds[{i}]"), ("target", f"update {call}, target[{i}]")
        pid, tid = _image_id(pid, wp), _image_id(tid, wt)
        if pid is not None and tid is not None and pid != tid:
            raise InputError("preds", wp[1], f"image_id {pid!r} differs from the target's image_id {tid!r}")
        iid = tid if tid is not None else pid
        image_ids.append(iid)
        if iid is not None:
            wp, wt = (wp[0], f"{wp[1]} (image_id={iid!r})"), (wt[0], f"{wt[1]} (image_id={iid!r})")
        pb = _boxes(pb, wp)
        per["pb"].append(pb)
        per["ps"].append(_vector(ps, wp, "scores", len(pb)))
        per["pl"].append(_vector(pl, wp, "labels", len(pb), "iuU"))
        tb = _boxes(tb, wt)
        per["tb"].append(tb)
        per["tl"].append(_vector(tl, wt, "labels", len(tb), "iuU"))
        per["tc"].append(None if tc is None else _vector(tc, wt, "iscrowd", len(tb), "iub"))
        per["ta"].append(None if ta is None else _vector(ta, wt, "area", len(tb)))
        per["ti"].append(None if ti is None else _vector(ti, wt, "ignore", len(tb), "iub"))

    n_dt = np.array([len(b) for b in per["pb"]], np.int64)
    n_gt = np.array([len(b) for b in per["tb"]], np.int64)
    dt_image = np.repeat(np.arange(n_img, dtype=np.int32), n_dt)
    gt_image = np.repeat(np.arange(n_img, dtype=np.int32), n_gt)

    def where(kind: str, row_image: np.ndarray, bad: np.ndarray) -> tuple[str, str, int]:
        row, img = _first_bad(bad, row_image)
        first = int(np.sum(n_dt[:img] if kind == "preds" else n_gt[:img]))
        rec = f"update {call}, {kind}[{img}]"
        if image_ids[img] is not None:
            rec += f" (image_id={image_ids[img]!r})"
        return kind, rec, row - first

    def floats(parts: list, width: int | None) -> np.ndarray:
        if not parts:
            return np.zeros((0, width) if width else 0, np.float64)
        return np.concatenate(parts).astype(np.float64, copy=False)

    dt_raw, gt_raw = floats(per["pb"], 4), floats(per["tb"], 4)
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
    dt_boxes, gt_boxes = _to_xywh(dt_raw, box_format), _to_xywh(gt_raw, box_format)
    for kind, box, raw_box, rows in (("preds", dt_boxes, dt_raw, dt_image), ("target", gt_boxes, gt_raw, gt_image)):
        bad = (box[:, 2] < 0) | (box[:, 3] < 0)
        if bad.any():
            src, rec, j = where(kind, rows, bad)
            rule = f"boxes[{j}] = {raw_box[np.argmax(bad)].tolist()} has a negative width or height as {box_format}"
            raise InputError(src, rec, rule)

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
    gt_area = xywh_area(gt_boxes)  # torchmetrics' and load_coco_gt's default
    given = [a is not None for a in per["ta"]]
    if any(given):
        has = np.repeat(np.array(given), n_gt)
        gt_area[has] = np.concatenate([a for a in per["ta"] if a is not None]).astype(np.float64)
        bad = ~np.isfinite(gt_area)
        if bad.any():
            src, rec, j = where("target", gt_image, bad)
            raise InputError(src, rec, f"area[{j}] is not finite: {gt_area[np.argmax(bad)]!r}")
    return _Batch(
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
    )


def _encode_masks(v: Any, where: tuple[str, str]) -> list[dict]:
    """Binary masks ``(n, height, width)`` (nonzero: inside) as COCO compressed RLE, one per mask."""
    from pycocotools import mask as mask_utils

    arr = _tensor_to_numpy(v) if _is_tensor(v) else np.asarray(v)
    if arr.ndim != 3:
        raise InputError(where[0], where[1], f"masks must be an array of shape (n, height, width), got {arr.shape}")
    if arr.shape[0] == 0:
        return []
    # pycocotools encodes (height, width, n) in column-major order
    return mask_utils.encode(np.asfortranarray((arr != 0).transpose(1, 2, 0).astype(np.uint8)))


def _with_masks(preds: list, target: list, box_format: str, call: int):
    """Encode each image's masks; give images without boxes their masks' extents as boxes (in ``box_format``).

    Returns copies of the dicts (the user's are not modified), the RLE of every detection and
    every target in row order, and per target row whether ``area`` was given.
    """
    from deteval.io.masks import masks_from_segmentations, rle_extents

    dt_rles: list = []
    gt_rles: list = []
    area_given: list = []
    out = ([], [])
    for i, (p, t) in enumerate(zip(preds, target)):
        for kind, d, rles in (("preds", p, dt_rles), ("target", t, gt_rles)):
            where = (kind, f"update {call}, {kind}[{i}]")
            if not isinstance(d, Mapping) or "masks" not in d:
                raise InputError(where[0], where[1], "missing key 'masks' (iou_type 'segm')")
            enc = _encode_masks(d["masks"], where)
            n = len(_to_numpy_all([d["labels"]])[0]) if "labels" in d else len(enc)
            if len(enc) != n:
                raise InputError(where[0], where[1], f"{len(enc)} masks for {n} labels")
            d = dict(d)
            if "boxes" not in d:
                m = masks_from_segmentations(enc, np.zeros(n), np.zeros(n), kind, "masks", [{}] * n)
                xywh = rle_extents(m.counts, m.offsets, m.height, m.width)
                d["boxes"] = _from_xywh(xywh, box_format)
            rles.extend(enc)
            out[kind == "target"].append(d)
            if kind == "target":
                area_given.extend([d.get("area") is not None] * n)
    return out[0], out[1], dt_rles, gt_rles, np.array(area_given, dtype=bool)


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


def _match_with_threads(dets: Detections, gt: GroundTruth, params: CocoParams, threads: int | None) -> CocoMatches:
    """``match()`` with its kernels on ``threads`` threads (the calling thread's setting only)."""
    from deteval.jit import using_threads

    with using_threads(threads):
        return match(dets, gt, params)


def _dist_rank_world() -> tuple[int, int]:
    """(rank, world size) of torch.distributed when it is imported and initialised, else (0, 1)."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return int(dist.get_rank()), int(dist.get_world_size())
    return 0, 1


# --------------------------------------------------------------------------------------
# the evaluator


class Evaluator:
    """Evaluate detections batch by batch, in a training loop, over processes or machines.

    The inputs follow torchmetrics' ``MeanAveragePrecision``: per batch a list of
    prediction dicts (``boxes`` (n, 4), ``scores`` (n,), ``labels`` (n,)) and a list of
    target dicts (``boxes`` (m, 4), ``labels`` (m,); optional ``iscrowd`` (m,),
    ``area`` (m,), ``ignore`` (m,), ``image_id``), one dict per image, as NumPy arrays,
    lists or torch tensors on any device.

    ``compute()`` gives the numbers of :func:`deteval.evaluate` on the same boxes, bit for
    bit, whatever the order and size of the batches; ``merge()`` and ``sync()`` combine
    evaluators (of other processes) with the same guarantee.

    Parameters
    ----------
    protocol : "coco"
    iou_type : "bbox"
    box_format : "xyxy" (default, as torchmetrics), "xywh" or "cxcywh"
        How ``boxes`` are given. COCO computes IoU on xywh: xyxy becomes xywh by one
        subtraction (``w = x2 - x1``), cxcywh by ``x = cx - w/2``; either may differ in the
        last bit from an xywh box stored in a JSON file. Give xywh to reproduce a COCO file's
        numbers exactly.
    categories : sequence of ids, or mapping id -> name, optional
        The categories evaluated, as the ground truth's ``categories`` list does for
        :func:`deteval.evaluate`; a label outside them is an error. By default, the sorted
        union of the labels seen in targets and predictions.
    compat : bool, default True
        Reproduce pycocotools' quirks (see README, "Compat and fixed modes"). Annotations are
        numbered from 1 here, so pycocotools' "annotation id 0" quirk never applies.
    iou_thrs, area_ranges, max_dets, use_cats
        As for :func:`deteval.evaluate` with the coco protocol.
    rank, world_size : int, optional
        For images without ``image_id`` only: the n-th such image this evaluator sees gets
        id ``n * world_size + rank``. By default read from ``torch.distributed`` when it is
        initialised at the first such image, else 0 and 1. With a ``DistributedSampler``
        that does not shuffle, these are the dataset indices.
    num_threads : int or None, default 1
        Threads for the matching kernels in :meth:`update` (:func:`deteval.jit.using_threads`).
        One is fastest for a batch: handing work to threads costs more than a batch's matching,
        all the more when data-loader workers keep the cores busy. None uses the default
        (``NUMBA_NUM_THREADS`` if set, else the usable CPUs), which :meth:`compute` always uses.

    Examples
    --------
    >>> ev = Evaluator(box_format="xyxy")  # doctest: +SKIP
    >>> for images, targets in loader:  # doctest: +SKIP
    ...     ev.update(model(images), targets)
    >>> ev.compute().stats["AP"]  # doctest: +SKIP
    """

    def __init__(
        self,
        protocol: str = "coco",
        iou_type: str = "bbox",
        box_format: str = "xyxy",
        categories: Sequence | Mapping | None = None,
        compat: bool = True,
        *,
        iou_thrs: Sequence[float] | None = None,
        area_ranges: Mapping[str, Sequence[float]] | None = None,
        max_dets: Sequence[int] | None = None,
        use_cats: bool = True,
        rank: int | None = None,
        world_size: int | None = None,
        num_threads: int | None = 1,
    ) -> None:
        if protocol not in PROTOCOLS:
            raise InputError("protocol", None, f"the Evaluator supports {PROTOCOLS}, not {protocol!r}")
        if iou_type not in ("bbox", "segm"):
            rule = (
                f"the Evaluator evaluates 'bbox' and 'segm', not {iou_type!r}; for keypoints use "
                "deteval.evaluate() or deteval.dask.evaluate_shards()"
            )
            raise InputError("iou_type", None, rule)
        if box_format not in BOX_FORMATS:
            raise InputError("box_format", None, f"unknown box_format {box_format!r}; choose from {BOX_FORMATS}")
        if (rank is None) != (world_size is None):
            raise InputError("rank", None, "give both rank and world_size, or neither")
        if world_size is not None and not (0 <= rank < world_size):
            raise InputError("rank", None, f"rank must be in [0, world_size), got rank={rank}, world_size={world_size}")
        if num_threads is not None and (isinstance(num_threads, bool) or int(num_threads) < 1):
            raise InputError(
                "num_threads", None, f"num_threads must be a positive integer or None, got {num_threads!r}"
            )
        self.protocol = protocol
        self.box_format = box_format
        self.num_threads = None if num_threads is None else int(num_threads)
        self.params = make_params(
            iou_type, iou_thrs=iou_thrs, area_ranges=area_ranges, max_dets=max_dets, use_cats=use_cats, compat=compat
        )
        self.categories = _category_table(categories)
        self._config = state_config(self.params, self.categories, protocol)
        self._rank_world = None if rank is None else (int(rank), int(world_size))
        self.reset()

    # ---- state

    def reset(self) -> None:
        """Forget every update, merge and sync."""
        self._chunks: list[EvaluatorState] = []
        self._synced: EvaluatorState | None = None
        self._result: EvalResult | None = None
        self._auto_next = 0
        self._auto_rank_world: tuple[int, int] | None = self._rank_world
        self._id_mode: str | None = None
        self._id_kind: str | None = None
        self._label_kind: str | None = None
        self._calls = 0

    def state(self) -> EvaluatorState:
        """This evaluator's own state (its updates and what was merged into it), compacted.

        It excludes what :meth:`sync` gathered from other processes.
        """
        if not self._chunks:
            return EvaluatorState.empty(self._config, len(self.params.area_ranges), len(self.params.iou_thrs))
        if len(self._chunks) > 1:
            self._chunks = [merge_states(self._chunks)]
        return self._chunks[0]

    def __getstate__(self) -> dict:
        self.state()  # pickle one compact state
        d = dict(self.__dict__)
        d["_result"] = None
        return d

    def __setstate__(self, d: dict) -> None:
        self.__dict__.update(d)

    @property
    def nbytes(self) -> int:
        """Bytes held by this evaluator's own state."""
        return sum(c.nbytes for c in self._chunks)

    @property
    def num_images(self) -> int:
        return sum(c.num_images for c in self._chunks)

    def __repr__(self) -> str:
        return (
            f"Evaluator(protocol={self.protocol!r}, iou_type={self.params.iou_type!r}, box_format={self.box_format!r}, "
            f"images={self.num_images}, detections={sum(c.num_detections for c in self._chunks)})"
        )

    # ---- the three calls of a training loop

    def update(self, preds: Sequence[Mapping], target: Sequence[Mapping]) -> None:
        """Match one batch: ``preds`` and ``target`` hold one dict per image, in the same order.

        Raises
        ------
        InputError
            Lists of different lengths, a missing key, boxes not of shape (n, 4), arrays of
            different lengths within an image, NaN or infinite values, a negative width or
            height, labels outside ``categories``, an image id given twice in the batch, or
            images with and without ``image_id`` in one evaluator.
        """
        self._calls += 1
        preds, target = _as_list(preds, "preds"), _as_list(target, "target")
        if len(preds) != len(target):
            rule = f"{len(preds)} predictions for {len(target)} targets: give one dict per image in both lists"
            raise InputError("preds", f"update {self._calls}", rule)
        if not preds:
            return
        segm = self.params.iou_type == "segm"
        if segm:
            preds, target, dt_rles, gt_rles, area_given = _with_masks(preds, target, self.box_format, self._calls)
        b = _parse_batch(preds, target, self.box_format, self._calls)
        image_ids, id_mode, auto_next = self._assign_ids(b.image_ids)
        labels = np.concatenate([b.gt_labels, b.dt_labels])
        label_kind = "U" if labels.dtype.kind == "U" else ("i" if len(labels) else self._label_kind)
        self._check_labels(b, label_kind)
        cat_values, inverse = np.unique(labels, return_inverse=True)
        inverse = inverse.reshape(-1).astype(np.int32)
        n_gt, n_img = len(b.gt_labels), len(image_ids)
        images = IdTable(np.arange(n_img, dtype=np.int64))
        cats = IdTable(cat_values)
        gt = GroundTruth(
            image=b.gt_image,
            category=inverse[:n_gt],
            boxes=np.ascontiguousarray(b.gt_boxes),
            area=b.gt_area,
            crowd=b.gt_crowd,
            ignore=b.gt_ignore,
            difficult=np.zeros(n_gt, bool),
            ann_id=np.arange(1, n_gt + 1, dtype=np.int64),
            images=images,
            categories=cats,
            box_format="xywh",
            source="target",
        )
        dets = Detections(
            image=b.dt_image,
            category=inverse[n_gt:],
            boxes=np.ascontiguousarray(b.dt_boxes),
            score=b.dt_scores,
            area=xywh_area(b.dt_boxes),
            box_format="xywh",
            source="preds",
        )
        if segm:  # masks and their areas; boxes play no part in mask IoU
            from deteval.io.masks import masks_from_segmentations

            gt_masks = masks_from_segmentations(gt_rles, gt.area, gt.area, "target", "masks", [{}] * len(gt_rles))
            dt_masks = masks_from_segmentations(dt_rles, dets.area, dets.area, "preds", "masks", [{}] * len(dt_rles))
            area = np.where(area_given, gt.area, gt_masks.area)
            gt = dataclasses.replace(gt, area=area, extra={"masks": gt_masks})
            dets = dataclasses.replace(dets, area=dt_masks.area, extra={"masks": dt_masks, "mask_area": dt_masks.area})
        m = _match_with_threads(dets, gt, self.params, self.num_threads)
        self._chunks.append(state_from_matches(m, image_ids, cat_values, self._config, id_mode))
        # committed only now: a batch that raised leaves the evaluator as it was
        self._id_mode, self._auto_next, self._label_kind = id_mode, auto_next, label_kind
        self._id_kind = image_ids.dtype.kind
        self._synced = None
        self._result = None

    def compute(self) -> EvalResult:
        """Rank and reduce what was updated, merged and synced; the result of :func:`deteval.evaluate`.

        Cheap to call again: the result is kept until the next update, merge, sync or reset.
        """
        if self._result is None:
            state = self._synced if self._synced is not None else self.state()
            self._result = result_from_state(state, self.params, self.categories)
        return self._result

    # ---- combining evaluators

    def merge(self, *others: Evaluator | EvaluatorState) -> Evaluator:
        """Add the states of ``others`` (evaluators or states) to this one; returns ``self``.

        Merging is associative and commutative: any grouping and order of merges gives the
        same result. An evaluator's own state is taken (not what it gathered by :meth:`sync`).
        """
        states = [o.state() if isinstance(o, Evaluator) else o for o in others]
        for o, s in zip(others, states):
            if not isinstance(s, EvaluatorState):
                raise InputError("merge", None, f"expected an Evaluator or an EvaluatorState, got {type(o).__name__}")
        merged = merge_states([self.state(), *states])
        self._chunks = [merged]
        if merged.id_mode is not None:
            self._id_mode = merged.id_mode
            self._id_kind = merged.image_ids.dtype.kind
        if len(merged.cat_label):
            self._label_kind = "U" if merged.cat_label.dtype.kind == "U" else "i"
        self._synced = None
        self._result = None
        return self

    def sync(self, group: Any = None) -> Evaluator:
        """Gather the states of every rank of ``torch.distributed`` (see :func:`deteval.distributed.sync`)."""
        from deteval.distributed import sync

        sync(self, group=group)
        return self

    def _set_synced(self, state: EvaluatorState) -> None:
        self._synced = state
        self._result = None

    # ---- helpers

    def _assign_ids(self, ids: list) -> tuple[np.ndarray, str, int]:
        """The batch's image ids, its id mode and the next automatic id number (not yet committed)."""
        given = [i is not None for i in ids]
        mode = "given" if all(given) else ("auto" if not any(given) else None)
        if mode is None:
            rule = "some images have an image_id and others do not: give it for all images or for none"
            raise InputError("image_id", f"update {self._calls}", rule)
        if self._id_mode is not None and mode != self._id_mode:
            rule = (
                "earlier images had an image_id given and these do not (or the reverse): "
                "give it for all images or for none"
            )
            raise InputError("image_id", f"update {self._calls}", rule)
        auto_next = self._auto_next
        if mode == "auto":
            if self._auto_rank_world is None:
                self._auto_rank_world = _dist_rank_world()
            rank, world = self._auto_rank_world
            out = (np.arange(auto_next, auto_next + len(ids), dtype=np.int64) * world) + rank
            auto_next += len(ids)
        else:
            kinds = {type(i) for i in ids}
            if len(kinds) > 1:
                raise InputError("image_id", f"update {self._calls}", "image ids mix integers and strings")
            out = np.array(ids, dtype=np.int64 if kinds == {int} else str)
            if has_duplicates(out):
                seen: set = set()
                dup = next(i for i in ids if i in seen or seen.add(i))
                raise InputError("image_id", f"update {self._calls}", f"image_id {dup!r} appears twice in this batch")
            if self._id_kind is not None and self._id_kind != out.dtype.kind:
                raise InputError("image_id", f"update {self._calls}", "image ids mix integers and strings")
        return out, mode, auto_next

    def _check_labels(self, b: _Batch, kind: str | None) -> None:
        if self._label_kind is not None and kind != self._label_kind:
            raise InputError("labels", f"update {self._calls}", "labels mix integers and strings across updates")
        if self.categories is None:
            return
        for name, labels, rows in (("preds", b.dt_labels, b.dt_image), ("target", b.gt_labels, b.gt_image)):
            if not len(labels):
                continue
            _, found = self.categories.lookup(labels)
            if not found.all():
                row, img = _first_bad(~found, rows)
                rec = f"update {self._calls}, {name}[{img}]"
                if b.image_ids[img] is not None:
                    rec += f" (image_id={b.image_ids[img]!r})"
                rule = f"label {labels[row].item()!r} is not one of the categories {self.categories.ids.tolist()}"
                raise InputError(name, rec, rule)


def _category_table(categories: Sequence | Mapping | None) -> IdTable | None:
    if categories is None:
        return None
    names = None
    if isinstance(categories, Mapping):
        items = list(categories.items())
        values = [k for k, _ in items]
    else:
        values = _to_numpy_all([categories])[0]
        values = np.asarray(values).reshape(-1).tolist()
    if not values:
        raise InputError("categories", None, "categories is empty; leave it None to take the labels seen")
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
