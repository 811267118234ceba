"""The public entry point: ``evaluate()``."""

from __future__ import annotations

from typing import Any

from deteval import protocols
from deteval.result import EvalResult
from deteval.types import Detections, GroundTruth


def load_coco_pair(preds: Any, gt: Any, iou_type: str = "bbox") -> tuple[Detections, GroundTruth]:
    """Load COCO results and ground truth given as paths, JSON objects or containers."""
    from deteval.io import coco

    if not isinstance(gt, GroundTruth) and not isinstance(preds, Detections):
        return coco.load_coco_pair(preds, gt, iou_type=iou_type)
    gt_loaded = gt if isinstance(gt, GroundTruth) else coco.load_coco_gt(gt, iou_type=iou_type)
    dets = preds if isinstance(preds, Detections) else coco.load_coco_results(preds, gt_loaded, iou_type=iou_type)
    return dets, gt_loaded


def evaluate(
    preds: Any,
    gt: Any,
    protocol: str = "coco",
    iou_type: str = "bbox",
    compat: bool = True,
    **options: Any,
) -> EvalResult:
    """Evaluate detections against ground truth.

    Parameters
    ----------
    preds : path, list of dicts or Detections
        COCO results: a JSON file, the loaded list, or loaded :class:`Detections`.
    gt : path, dict or GroundTruth
        COCO ground truth: a JSON file, the loaded dict, or a loaded :class:`GroundTruth`.
        Neither input is modified.
    protocol : str, default "coco"
        A registered protocol (``deteval.protocols.available()``).
    iou_type : {"bbox", "segm", "keypoints"}, default "bbox"
    compat : bool, default True
        Reproduce the reference tool exactly, quirks included; False corrects
        the quirks (see README, "Compat and fixed modes").
    **options
        Protocol options. For ``coco``: ``iou_thrs`` (sequence of floats),
        ``area_ranges`` (mapping label -> (lo, hi)), ``max_dets`` (sequence of
        ints), ``use_cats`` (bool), ``kpt_sigmas`` (keypoints: one per keypoint).

    Returns
    -------
    EvalResult
        ``.stats`` (ordered name -> float), ``.precision``, ``.recall``,
        ``.scores``, ``.per_class``, ``.summary()``, ``.to_json()``.

    Examples
    --------
    >>> res = deteval.evaluate("results.json", "instances_val2017.json")  # doctest: +SKIP
    >>> res.stats["AP"]  # doctest: +SKIP
    """
    dets, gt_loaded = load_inputs(preds, gt, protocol=protocol, iou_type=iou_type)
    return evaluate_loaded(dets, gt_loaded, protocol=protocol, iou_type=iou_type, compat=compat, **options)


def _protocol_module(protocol: str, iou_type: str):
    module = protocols.get(protocol)
    if iou_type not in module.IOU_TYPES:
        raise ValueError(f"protocol {protocol!r} supports iou_type {module.IOU_TYPES}, not {iou_type!r}")
    return module


def load_inputs(preds: Any, gt: Any, protocol: str = "coco", iou_type: str = "bbox") -> tuple[Any, Any]:
    """Load ``(detections, ground truth)`` the way ``protocol`` reads them (paths, objects or containers)."""
    module = _protocol_module(protocol, iou_type)
    loader = getattr(module, "load_inputs", load_coco_pair)
    return loader(preds, gt, iou_type=iou_type)


def evaluate_loaded(
    dets: Any, gt: Any, protocol: str = "coco", iou_type: str = "bbox", compat: bool = True, **options: Any
) -> EvalResult:
    """:func:`evaluate` on inputs already loaded by :func:`load_inputs`."""
    module = _protocol_module(protocol, iou_type)
    if hasattr(module, "PROTOCOLS"):  # a module serving several protocols (voc07, voc10) is told which
        options.setdefault("protocol", protocol)
    return module.evaluate(dets, gt, iou_type=iou_type, compat=compat, **options)
