"""What the VOC protocols accept as inputs, as containers: paths in any VOC format, COCO objects, containers."""

from __future__ import annotations

from typing import Any

from deteval.errors import InputError
from deteval.io import voc as voc_io
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.io.coco_columns import area_unread
from deteval.io.json_source import is_path
from deteval.types import Detections, GroundTruth


def load_voc_inputs(
    preds: Any, gt: Any, *, names: Any = None, image_set: Any = None, box_format: str = "xyxy", strict: bool = False
) -> tuple[Detections, GroundTruth]:
    """``(detections, ground truth)`` from paths (formats detected: VOC XML folder or image-set list,
    per-image text folder, comp4 folder/file, COCO JSON), COCO objects, or containers (passed through).

    ``names``, ``image_set``, ``box_format`` and ``strict`` are those of :func:`deteval.io.voc.load_voc`.
    """
    if is_path(preds) and is_path(gt):
        return voc_io.load_voc(preds, gt, names=names, image_set=image_set, box_format=box_format, strict=strict)
    if is_path(gt) or isinstance(gt, dict):
        if is_path(gt) and voc_io.detect_format(gt, "gt") != "coco":
            rule = "VOC-format ground truth needs its detections as a path too (or load both with deteval.io.voc)"
            raise InputError(str(gt), None, rule)
        with area_unread():  # voc_eval reads no area: a missing one is no oddity here
            gt = load_coco_gt(gt, strict=strict)
    if not isinstance(gt, GroundTruth):
        rule = f"must be a GroundTruth, a path or a COCO ground-truth dict, got {type(gt).__name__}"
        raise InputError("gt", None, rule)
    if isinstance(preds, Detections):
        return preds, gt
    fmt = voc_io.detect_format(preds, "dets") if is_path(preds) else "coco"
    if fmt == "comp4":
        return voc_io.load_comp4(preds, gt, names=names, strict=strict), gt
    if fmt == "text":
        return voc_io.load_text_dets(preds, gt, names=names, box_format=box_format, strict=strict), gt
    if isinstance(preds, list) or is_path(preds):
        return load_coco_results(preds, gt, strict=strict), gt
    raise InputError("preds", None, f"must be Detections, a path or a COCO results list, got {type(preds).__name__}")
