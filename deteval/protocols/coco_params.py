"""COCO's parameters: pycocotools' ``Params``, built from the preset ``configs/coco.toml``.

The built-in preset, a user's preset (``--config``) and keyword options apply in that
order; every value is checked here, before loading or any kernel.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval.errors import InputError
from deteval.protocols import param_checks as checks
from deteval.protocols import presets
from deteval.vocabulary import IOU_TYPES as IOU_TYPE_TABLE

IOU_TYPES = tuple(IOU_TYPE_TABLE)  # every iou type of the table
DILATION_RATIO = 0.02  # boundary-iou-api's default: the erosion depth is 2% of the mask's diagonal
# the keywords of make_params a preset (built-in or --config) may set
PRESET_KEYS = ("iou_thrs", "rec_thrs", "max_dets", "area_ranges", "use_cats", "kpt_sigmas", "dilation_ratio")


def all_area_index(area_labels: tuple[str, ...]) -> int:
    """The area range the match and per-image tables read (and the overlaps are kept at): ``all``, else the first."""
    return area_labels.index("all") if "all" in area_labels else 0


def keeping_tables(params: Any, matches: bool = False, per_image: bool = False) -> Any:
    """COCO's or LVIS's ``params`` also keeping the match table and/or the per-image counts."""
    return dataclasses.replace(
        params, keep_matches=params.keep_matches or matches, keep_per_image=params.keep_per_image or per_image
    )


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
    dilation_ratio: float | None = None  # boundary only: the erosion depth over the mask's diagonal
    strict: bool = False  # loading: what pycocotools scores and deteval warns about is an error instead
    keep_iou: bool = False  # matching also keeps each match's overlap (CocoMatches.match_iou), for LRP
    keep_matches: bool = False  # the result keeps every detection's match (result.matches; deteval --matches)
    keep_per_image: bool = False  # the result keeps the per-image counts (result.per_image; deteval --per-image)
    # loading YOLO folders (deteval.io.yolo): {"<stem>": [width, height]} (file or mapping), class names
    image_sizes: Any = None
    names: Any = None

    def to_dict(self) -> dict:
        return {
            "iou_type": self.iou_type,
            **({"kpt_sigmas": self.kpt_sigmas.tolist()} if self.kpt_sigmas is not None else {}),
            **({"dilation_ratio": self.dilation_ratio} if self.dilation_ratio is not None else {}),
            "iou_thrs": self.iou_thrs.tolist(),
            "max_dets": list(self.max_dets),
            "area_ranges": {k: v.tolist() for k, v in zip(self.area_labels, self.area_ranges)},
            "use_cats": self.use_cats,
            "compat": self.compat,
        }


def default_iou_thrs(iou_type: str) -> np.ndarray:
    """The built-in preset's IoU thresholds for ``iou_type`` (pycocotools' .50:.05:.95 grid)."""
    return checks.grid(presets.builtin("coco")[iou_type]["iou_thrs"])


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
    dilation_ratio: float | None = None,
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
    (keypoints only) defaults to the 17 COCO person sigmas; ``dilation_ratio`` (boundary only, in (0, 1])
    to boundary-iou-api's 0.02. A wrong value
    that came from a user's preset is reported naming the preset's source. ``strict`` is read by
    :meth:`CocoProtocol.load` (a repeated image id is an error); it is no parameter of pycocotools'.
    """
    if iou_type not in IOU_TYPES:
        raise InputError(
            "iou_type", None, f"{iou_type!r} is not supported by the coco protocol; choose from {IOU_TYPES}"
        )
    given = {"iou_thrs": iou_thrs, "rec_thrs": rec_thrs, "area_ranges": area_ranges, "max_dets": max_dets,
             "use_cats": use_cats, "kpt_sigmas": kpt_sigmas, "dilation_ratio": dilation_ratio}  # fmt: skip
    return presets.resolve(
        presets.builtin(builtin)[iou_type], _user_preset(iou_type, preset), given, PRESET_KEYS,
        lambda values: _checked_params(iou_type, values, compat, strict),
    )  # fmt: skip


def _checked_params(iou_type: str, values: dict, compat: bool, strict: bool = False) -> CocoParams:
    use_cats, kpt_sigmas = values.get("use_cats", True), values.get("kpt_sigmas")
    thrs = checks.unit_thresholds("iou_thrs", values.get("iou_thrs"))
    rec = checks.unit_thresholds("rec_thrs", values["rec_thrs"], "recall thresholds", ascending=True)
    md = checks.positive_counts("max_dets", values["max_dets"])
    if compat and len(md) < 3 and iou_type != "keypoints":
        rule = f"pycocotools' summary reads 3 max-dets values, got {md}; use compat=False (--fixed) to summarise fewer"
        checks.fail("max_dets", rule)
    labels, ranges = checks.area_ranges("area_ranges", values["area_ranges"])
    sigmas = None
    if iou_type == "keypoints":
        from deteval.geometry.keypoints import COCO_SIGMAS

        sigmas = checks.sigmas("kpt_sigmas", kpt_sigmas, COCO_SIGMAS)
        if compat and not use_cats:
            rule = (
                "pycocotools cannot pool categories for keypoints (computeOks reads no ground truth); use compat=False"
            )
            checks.fail("use_cats", rule)
    elif kpt_sigmas is not None:
        checks.fail("kpt_sigmas", "keypoint sigmas apply to iou_type='keypoints' only")
    ratio = dilation_ratio_of(iou_type, values.get("dilation_ratio"))
    return CocoParams(
        iou_type=iou_type,
        iou_thrs=thrs,
        rec_thrs=rec,
        max_dets=tuple(sorted(md)),
        area_ranges=ranges,
        area_labels=labels,
        use_cats=bool(use_cats),
        compat=bool(compat),
        kpt_sigmas=sigmas,
        dilation_ratio=ratio,
        strict=bool(strict),
    )


def dilation_ratio_of(iou_type: str, value: Any) -> float | None:
    """The checked dilation ratio of boundary IoU (a number in (0, 1]); None for the other iou types, which
    refuse one."""
    if iou_type != "boundary":
        if value is not None:
            checks.fail("dilation_ratio", "a dilation ratio applies to iou_type='boundary' only")
        return None
    if value is None:
        return DILATION_RATIO
    ratio = checks.number_in("dilation_ratio", value, 0.0, 1.0, "the dilation ratio")
    if not ratio > 0:
        checks.fail("dilation_ratio", f"the dilation ratio must be above 0, got {ratio!r}")
    return ratio
