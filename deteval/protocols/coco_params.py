"""COCO's parameters: pycocotools' ``Params``, built from the preset ``configs/coco.toml``.

The built-in preset, a user's preset (``--config``) and keyword options apply in that
order; every value is checked here, before loading or any kernel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval.errors import InputError
from deteval.protocols import presets
from deteval.vocabulary import IOU_TYPES as IOU_TYPE_TABLE

IOU_TYPES = tuple(IOU_TYPE_TABLE)  # every iou type of the table
# the keywords of make_params a preset (built-in or --config) may set
PRESET_KEYS = ("iou_thrs", "rec_thrs", "max_dets", "area_ranges", "use_cats", "kpt_sigmas")


@dataclass(frozen=True, eq=False)
class CocoParams:
    """Evaluation parameters, pycocotools' ``Params`` after ``evaluate()`` normalised them."""

    iou_type: str
    iou_thrs: np.ndarray  # float64 (T,)
    rec_thrs: np.ndarray  # float64 (R,)
    max_dets: tuple[int, ...]  # ascending, as pycocotools sorts them
    area_ranges: np.ndarray  # float64 (A, 2), inclusive bounds
    area_labels: tuple[str, ...]
    use_cats: bool = True
    compat: bool = True
    kpt_sigmas: np.ndarray | None = None  # keypoints only: one sigma per keypoint
    strict: bool = False  # loading: what pycocotools scores and deteval warns about is an error instead
    keep_iou: bool = False  # matching also keeps each match's overlap (CocoMatches.match_iou), for LRP

    def to_dict(self) -> dict:
        return {
            "iou_type": self.iou_type,
            **({"kpt_sigmas": self.kpt_sigmas.tolist()} if self.kpt_sigmas is not None else {}),
            "iou_thrs": self.iou_thrs.tolist(),
            "max_dets": list(self.max_dets),
            "area_ranges": {k: v.tolist() for k, v in zip(self.area_labels, self.area_ranges)},
            "use_cats": self.use_cats,
            "compat": self.compat,
        }


def _array(spec) -> np.ndarray:
    if isinstance(spec, dict):
        start, stop, num = spec["linspace"]
        return np.linspace(start, stop, int(num), endpoint=True)
    return np.asarray(spec, dtype=np.float64)


def default_iou_thrs(iou_type: str) -> np.ndarray:
    """The built-in preset's IoU thresholds for ``iou_type`` (pycocotools' .50:.05:.95 grid)."""
    return _array(presets.builtin("coco")[iou_type]["iou_thrs"])


def _user_preset(iou_type: str, preset: presets.Preset | Mapping[str, Any] | None) -> presets.Preset | None:
    """A user's preset for ``iou_type``: its keys, or those of its section named after the iou type."""
    preset = presets.as_preset(preset)
    if preset is None:
        return None
    values = preset.values
    if isinstance(values.get(iou_type), Mapping):  # [bbox] / [segm] / [keypoints] tables: this iou type's
        values = values[iou_type]
    return presets.Preset({k: v for k, v in values.items() if k not in IOU_TYPES}, preset.source)


def make_params(
    iou_type: str = "bbox",
    *,
    preset: presets.Preset | Mapping[str, Any] | None = None,
    iou_thrs: Sequence[float] | None = None,
    rec_thrs: Sequence[float] | None = None,
    area_ranges: Mapping[str, Sequence[float]] | None = None,
    max_dets: Sequence[int] | None = None,
    use_cats: bool | None = None,
    compat: bool = True,
    kpt_sigmas: Sequence[float] | None = None,
    strict: bool = False,
    builtin: str = "coco",
) -> CocoParams:
    """Build :class:`CocoParams` from the built-in preset, then a user's ``preset``, then what is given.

    ``builtin`` names the built-in preset, ``configs/<builtin>.toml`` (another protocol on COCO's
    parameters, e.g. ``crowdpose``, reads its own).

    ``rec_thrs`` (pycocotools' ``recThrs``) must be ascending in [0, 1].
    ``area_ranges`` maps a label to ``(lo, hi)``; the summary reads the
    labels ``all``, ``small``, ``medium`` and ``large``. Bounds are inclusive, as in
    pycocotools: ``lo > hi`` is an :class:`InputError` naming the label (no area fits it), while
    ``lo == hi`` is a valid point range (the annotations of exactly that area). ``kpt_sigmas``
    (keypoints only) defaults to the 17 COCO person sigmas. A wrong value
    that came from a user's preset is reported naming the preset's source. ``strict`` is read by
    :meth:`CocoProtocol.load` (a repeated image id is an error); it is no parameter of pycocotools'.
    """
    if iou_type not in IOU_TYPES:
        raise InputError(
            "iou_type", None, f"{iou_type!r} is not supported by the coco protocol; choose from {IOU_TYPES}"
        )
    given = {"iou_thrs": iou_thrs, "rec_thrs": rec_thrs, "area_ranges": area_ranges, "max_dets": max_dets,
             "use_cats": use_cats, "kpt_sigmas": kpt_sigmas}  # fmt: skip
    return presets.resolve(
        presets.builtin(builtin)[iou_type], _user_preset(iou_type, preset), given, PRESET_KEYS,
        lambda values: _checked_params(iou_type, values, compat, strict),
    )  # fmt: skip


def _check_range_order(rng: Mapping, ranges: np.ndarray) -> None:
    """An inverted range (lo > hi) holds no area: surely a typo, so an error naming its label."""
    for label, (lo, hi) in zip(rng, ranges.tolist()):
        if not lo <= hi:  # NaN bounds fail too: no area compares with them
            raise InputError("area_ranges", str(label), f"area range (lo, hi) must have lo <= hi, got ({lo:g}, {hi:g})")


def _rec_thrs(spec: Any) -> np.ndarray:
    """The recall thresholds: ascending numbers in [0, 1] (the accumulation walks them in order)."""
    try:
        rec = _array(spec).astype(np.float64).reshape(-1)
    except (TypeError, ValueError, KeyError):
        raise InputError("rec_thrs", None, f"recall thresholds must be numbers, got {spec!r}") from None
    if len(rec) == 0 or not np.all((rec >= 0) & (rec <= 1)) or np.any(np.diff(rec) < 0):
        rule = f"recall thresholds must be a non-empty ascending list in [0, 1], got {rec.tolist()}"
        raise InputError("rec_thrs", None, rule)
    return rec


def _checked_params(iou_type: str, values: dict, compat: bool, strict: bool = False) -> CocoParams:
    iou_thrs, md, use_cats = values.get("iou_thrs"), values["max_dets"], values.get("use_cats", True)
    kpt_sigmas = values.get("kpt_sigmas")
    if isinstance(iou_thrs, Mapping):  # { linspace = [...] } in a preset
        thrs = _array(iou_thrs)
    else:
        try:
            thrs = np.asarray(iou_thrs, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise InputError("iou_thrs", None, f"IoU thresholds must be numbers, got {iou_thrs!r}") from None
    if len(thrs) == 0 or not np.all((thrs >= 0) & (thrs <= 1)):
        raise InputError("iou_thrs", None, f"IoU thresholds must be a non-empty list in [0, 1], got {thrs.tolist()}")
    rec = _rec_thrs(values["rec_thrs"])
    md = list(md) if isinstance(md, (list, tuple, np.ndarray)) else [md]
    if len(md) == 0 or any(isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1 for m in md):
        raise InputError("max_dets", None, f"max dets must be positive integers, got {md}")
    if compat and len(md) < 3 and iou_type != "keypoints":
        rule = f"pycocotools' summary reads 3 max-dets values, got {md}; use compat=False (--fixed) to summarise fewer"
        raise InputError("max_dets", None, rule)
    rng = values["area_ranges"]
    if not isinstance(rng, Mapping):
        raise InputError("area_ranges", None, f"area ranges must map labels to (lo, hi) pairs, got {rng!r}")
    try:
        ranges = np.array([[float(lo), float(hi)] for lo, hi in rng.values()], dtype=np.float64).reshape(-1, 2)
    except (TypeError, ValueError):
        raise InputError("area_ranges", None, f"area ranges must map labels to (lo, hi) pairs, got {rng}") from None
    if len(ranges) == 0:
        raise InputError("area_ranges", None, "at least one area range is needed")
    _check_range_order(rng, ranges)
    sigmas = None
    if iou_type == "keypoints":
        from deteval.geometry.keypoints import COCO_SIGMAS

        try:
            sigmas = COCO_SIGMAS if kpt_sigmas is None else np.asarray(kpt_sigmas, dtype=np.float64).reshape(-1)
            ok = len(sigmas) > 0 and bool(np.all(np.isfinite(sigmas) & (sigmas > 0)))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise InputError("kpt_sigmas", None, f"keypoint sigmas must be positive numbers, got {kpt_sigmas!r}")
        if compat and not use_cats:
            rule = (
                "pycocotools cannot pool categories for keypoints (computeOks reads no ground truth); use compat=False"
            )
            raise InputError("use_cats", None, rule)
    elif kpt_sigmas is not None:
        raise InputError("kpt_sigmas", None, "keypoint sigmas apply to iou_type='keypoints' only")
    return CocoParams(
        iou_type=iou_type,
        iou_thrs=thrs,
        rec_thrs=rec,
        max_dets=tuple(sorted(int(m) for m in md)),
        area_ranges=ranges,
        area_labels=tuple(str(k) for k in rng),
        use_cats=bool(use_cats),
        compat=bool(compat),
        kpt_sigmas=sigmas,
        strict=bool(strict),
    )
