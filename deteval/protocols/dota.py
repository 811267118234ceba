"""DOTA task 1 (oriented boxes): AP per class as DOTA_devkit's ``dota_evaluation_task1.py`` computes it.

It is VOC's rule with another IoU, so it runs VOC's path (:class:`deteval.protocols.voc.VocProtocol`,
:func:`deteval.matching.voc.match_voc` with ``geometry="quad"``):

* the images are every ``*.txt`` of the ground-truth folder; the classes exactly those its files name
  (sorted), or, with ``classes`` (``--classes dota1.0|dota1.5|dota2.0|FILE``), that list in its order;
  mAP is the plain mean of their APs;
* by descending score (equal scores as the devkit's ``np.argsort(-confidence)`` ordered them under
  numpy < 1.25, ``ties="argsort"``, the default; ``ties="item"``: file order),
  each detection takes the first highest-IoU ground truth of its class and image among those the
  devkit's enclosing-box pre-filter keeps (:mod:`deteval.geometry.quads`), difficult and taken ones
  included; IoU ``> 0.5`` on a difficult one: ignored; on a free one: TP; on a taken one: FP; else FP;
* precision ``tp / max(tp + fp, eps)``, recall ``tp / npos`` (npos: the non-difficult ground truth);
  VOC07's 11 points on ``np.arange(0, 1.1, 0.1)`` (``integrator="voc11"``, the default) or the all-point
  AP (``"all_points"``, VOC10's);
* a class without positives (only difficult ground truth, or listed by ``classes`` but absent): AP 0,
  counted in the mean. The devkit's 11-point AP is 0 there (its recall is NaN, no grid point is
  reached); its all-point AP is NaN, and deteval's 0;
* a class with no detection file, or an empty one: AP 0 (the devkit crashes).

The IoU is the exact one for simple quadrilaterals (either orientation, convex or not); the
devkit's differs from it by a few 1e-11, so an IoU within that of 0.5 may be decided differently,
and deteval makes no parity claim there. Self-intersecting quadrilaterals are
scored as the devkit scores them (signed lobes, :mod:`deteval.geometry.quads`), with a warning naming
the first file and line; ``strict=True`` (``--strict``) makes that an error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deteval.errors import InputError
from deteval.protocols import presets
from deteval.protocols.base import Option, split_list
from deteval.protocols.voc import VocMatches, VocProtocol, match_in_rank_order, voc_matches
from deteval.protocols.voc_params import VocParams, checked_matching, parse_iou_thresholds
from deteval.types import Detections, GroundTruth
from deteval.vocabulary import INTEGRATORS, IOU_TESTS, TIE_POLICIES

PRESET_KEYS = ("iou_thrs", "integrator", "iou_test", "ties", "classes")
CLASS_LISTS = ("dota1.0", "dota1.5", "dota2.0")


@dataclass(frozen=True)
class DotaParams(VocParams):
    """A DOTA evaluation's parameters: VOC's, with the class list (None: every class the ground truth names)."""

    classes: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        del out["plus_one"]
        out.update(
            iou="DOTA_devkit polygon IoU of quadrilaterals (exact), pairs kept by its +1 enclosing-box pre-filter",
            classes=None if self.classes is None else list(self.classes),
            no_positives="AP 0, counted in the mean",
        )
        return out


def class_list(value: Any) -> tuple[str, ...] | None:
    """A class list: ``dota1.0``, ``dota1.5``, ``dota2.0``, a file of names (one per line), or a list of names."""
    if value is None or value == "":
        return None
    if isinstance(value, (list, tuple)):
        names = [str(v) for v in value]
    elif value in CLASS_LISTS:
        from deteval.io.dota import DOTA_CLASSES

        return DOTA_CLASSES[value]
    else:
        from deteval.io.voc_rows import load_names

        if not Path(value).is_file():
            raise InputError(
                "classes", None, f"must be one of {', '.join(CLASS_LISTS)} or a file of names, got {value!r}"
            )
        names = load_names(value)
    if not names or len(set(names)) != len(names):
        raise InputError("classes", None, f"class names must be distinct and at least one, got {names}")
    return tuple(names)


def _checked(values: Mapping[str, Any], compat: bool, strict: bool) -> DotaParams:
    return DotaParams(
        protocol="dota",
        **checked_matching(values),
        plus_one=False,
        grid="numpy",
        box_format="quad",
        compat=bool(compat),
        classes=class_list(values.get("classes")),
        strict=bool(strict),
    )


class DotaProtocol(VocProtocol):
    """DOTA task 1 AP (``dota_evaluation_task1.py``), on VOC's matching and ranking."""

    options = (
        Option("iou_thrs", "--iou-thrs", "IoU threshold(s) (default 0.5)", "list",
               lambda v: parse_iou_thresholds(split_list(v)), metavar="T"),
        Option("integrator", "--integrator", "AP integrator(s): voc11 (default, the devkit's use_07_metric) or "
               "all_points (VOC10's); the first is the headline", "list", split_list, choices=INTEGRATORS,
               metavar="NAME"),
        Option("classes", "--classes", "evaluate only these classes: dota1.0, dota1.5, dota2.0 or a file of names "
               "(default: every class the ground truth names)", metavar="LIST"),
        Option("iou_test", "--iou-test", "gt: IoU > t (the devkit; default); ge: IoU >= t", choices=IOU_TESTS),
        Option("ties", "--ties", "argsort: equal scores as the devkit's np.argsort(-score) under numpy < 1.25 "
               "(default); item: stable order; group: tie blocks", choices=TIE_POLICIES),
    )  # fmt: skip
    renamed_options: dict[str, str] = {}

    def __init__(self) -> None:
        super().__init__("dota", "dota protocol (DOTA task 1, oriented boxes)")

    def scored(self, npos: np.ndarray) -> np.ndarray:
        return np.ones(len(npos), bool)  # every evaluated class counts, with AP 0 when it has no positives

    def make_params(
        self, iou_type: str, compat: bool, preset: Mapping[str, Any] | None, strict: bool, options: dict[str, Any]
    ) -> DotaParams:
        build = lambda values: _checked(values, compat, strict)  # noqa: E731
        return presets.resolve(presets.builtin(self.preset_name), preset, options, PRESET_KEYS, build)

    def load(self, preds: Any, gt: Any, params: DotaParams) -> tuple[Detections, GroundTruth]:
        from deteval.io.dota import load_dota, load_dota_dets

        if isinstance(gt, GroundTruth):
            if gt.box_format != "quad":
                raise InputError("gt", None, "DOTA needs quadrilateral ground truth (box_format 'quad', boxes (N, 8))")
            return (preds if isinstance(preds, Detections) else load_dota_dets(preds, gt, params.strict)), gt
        if isinstance(preds, Detections):
            raise InputError("preds", None, "DOTA detections as a container need the ground truth as one too")
        return load_dota(preds, gt, params.classes, params.strict)

    def match(self, preds: Detections, gt: GroundTruth, params: DotaParams) -> VocMatches:
        from deteval.matching.groups import group_by_image_category
        from deteval.matching.voc import match_voc

        dt = preds
        if dt.box_format != "quad" or dt.boxes.shape[1:] != (8,) or gt.boxes.shape[1:] != (8,):
            raise InputError(dt.source, None, "DOTA needs quadrilaterals (box_format 'quad', boxes (N, 8))")
        if len(dt) and (dt.image.max() >= len(gt.images) or dt.category.max() >= len(gt.categories)):
            raise InputError(dt.source, None, "detections index images or categories outside the ground truth's tables")
        difficult = gt.difficult | gt.crowd | gt.ignore

        def run(dt: Detections) -> tuple[np.ndarray, ...]:
            groups = group_by_image_category(gt, dt, use_cats=True, max_det=None)
            return match_voc(
                gt.boxes, difficult, dt.boxes, groups, list(params.iou_thrs), iou_test=params.iou_test,
                geometry="quad",
            )

        return voc_matches(match_in_rank_order(run, dt, len(gt.categories), params), gt, dt, difficult)

    # streaming: VOC's (VocProtocol.stream_match, stream_result), quadrilaterals (n, 8) as given
    stream_spec = dataclasses.replace(VocProtocol.stream_spec, formats={"bbox": {"poly": "quad"}})

    def summarize(self, result, params: DotaParams) -> list[str]:
        lines = super().summarize(result, params)
        lines[0] = lines[0].replace("; no +1", "; DOTA_devkit polygon IoU")
        return lines


DOTA = DotaProtocol()
