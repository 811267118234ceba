"""The public entry point: ``evaluate()``, for every registered protocol."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from deteval import protocols
from deteval.protocols.presets import Preset, read_config
from deteval.result import EvalResult

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path  # not imported at run time: pathlib is 3 ms of every start

    from deteval.analysis.comparison import ComparisonResult
    from deteval.analysis.intervals import BootstrapResult
from deteval.types import Detections, GroundTruth


def load(
    preds: Any,
    gt: Any,
    protocol: str = "coco",
    iou_type: str | None = None,
    config: str | Path | Preset | dict | None = None,
    strict: bool = False,
    **options: Any,
) -> tuple[Detections, GroundTruth]:
    """``(detections, ground truth)`` as ``protocol`` reads them: the containers :func:`evaluate` works on.

    Takes the same inputs and options as :func:`evaluate` (``strict`` included); loaded containers pass through.
    Useful to evaluate several protocols, or run analyses (confusion matrix, TIDE), on one load.
    """
    proto = protocols.get(protocol)
    params = proto.params(iou_type, preset=_preset(config), strict=strict, **options)
    return proto.load(preds, gt, params)


def _preset(config: str | Path | Preset | dict | None) -> Preset | dict | None:
    return read_config(config) if isinstance(config, (str, os.PathLike)) else config


def evaluate(
    preds: Any,
    gt: Any,
    protocol: str = "coco",
    iou_type: str | None = None,
    compat: bool = True,
    config: str | Path | Preset | dict | None = None,
    strict: bool = False,
    **options: Any,
) -> EvalResult:
    """Evaluate detections against ground truth.

    Parameters
    ----------
    preds : path, list of dicts or Detections
        The detections: for ``coco`` a results JSON file, the loaded list, or
        loaded :class:`~deteval.types.Detections`; for ``voc07``/``voc10`` also
        VOC formats (comp4 files, per-image text files).
    gt : path, dict or GroundTruth
        The ground truth: a COCO JSON file, the loaded dict, a loaded
        :class:`~deteval.types.GroundTruth`, or (VOC) an XML folder or image-set
        list. Neither input is modified.
    protocol : str, default "coco"
        A registered protocol (``deteval.protocols.available()``).
    iou_type : {"bbox", "segm", "keypoints", "obb"}, optional
        What is compared; each protocol lists its own (``Protocol.iou_types``). Default: ``bbox``, or the
        protocol's only iou type (crowdpose: ``keypoints``).
    compat : bool, default True
        Reproduce the reference tool exactly, quirks included; False corrects
        the quirks (see README, "Compat and fixed modes").
    config : path, dict or Preset, optional
        A preset that overrides the protocol's built-in one (the keys are the
        protocol's option names; ``configs/*.toml`` are the built-in presets).
    strict : bool, default False
        Refuse input the reference tool accepts silently and deteval with a
        warning: for ``coco``, boxes of negative size or with NaN/infinite
        coordinates, repeated image or annotation ids, a missing ``iscrowd``,
        polygons on images of height 0, box-only results in mask evaluation and
        LVIS fields raise :class:`InputError` naming the file and the first record
        (README: "Where pycocotools is lenient"). VOC's readers have no such
        input: ignored there.
        Numbers are never changed by it; a loaded ``GroundTruth`` is not re-checked.
    matches : bool, default False
        Keep every evaluated detection's match per IoU threshold and the ground truth left unmatched
        (``result.matches``), and the per-image counts (``result.per_image``), from the one matching pass
        (``coco``, ``lvis``; docs/cli.md, "Matches and per-image counts").
    slices : mapping, optional
        ``{name: [image ids]}`` (every protocol but LVIS's Fixed AP): every stat per slice, in ``result.slices``
        (``{name: {stat: value}}``), each equal to evaluating the slice's images alone, from the one
        matching pass (:mod:`deteval.analysis.slices`; ``slices_by_field`` builds them from an image field).
    **options
        The protocol's options (``deteval.protocols.get(name).options``). For
        ``coco``: ``iou_thrs`` (sequence of floats), ``area_ranges`` (mapping
        label -> (lo, hi)), ``max_dets`` (sequence of ints), ``use_cats``
        (bool), ``kpt_sigmas`` (keypoints: one per keypoint). For ``lvis``:
        ``fixed_ap`` (bool: Fixed AP's 10,000 per category). For ``voc07`` /
        ``voc10``: ``iou_thrs``, ``integrator``, ``iou_test``, ``plus_one``,
        ``ties``, ``grid``, ``names``, ``image_set``, ``box_format``.
        For ``openimages``: ``labels``, ``hierarchy``, ``class_names`` (paths),
        ``expand`` (bool), ``group_of_weight``, ``iou_thr``; ``preds`` and ``gt``
        are then the detections and boxes CSVs. For ``yolo`` (ultralytics' metrics)
        ``preds`` and ``gt`` are YOLO prediction and label folders (or containers):
        ``image_sizes`` (``{"<stem>": [width, height]}``, a JSON path or mapping),
        ``names`` (a names file, a data.yaml or a list), ``compare_coco`` (bool);
        ``coco`` takes the same folders with ``image_sizes`` (docs/yolo.md).

    Returns
    -------
    EvalResult
        The protocol's result type (:class:`~deteval.result.CocoResult`,
        :class:`~deteval.result.VocResult`): ``.stats`` (ordered name ->
        float), ``.per_class``, ``.summary()``, ``.to_json()`` and its arrays.

    Raises
    ------
    InputError
        Bad input or options, naming the file or argument, the record and the rule.

    Examples
    --------
    >>> res = deteval.evaluate("results.json", "instances_val2017.json")  # doctest: +SKIP
    >>> res.stats["AP"]  # doctest: +SKIP
    """
    proto = protocols.get(protocol)
    slices = options.pop("slices", None)
    keep_matches = bool(options.pop("matches", False))
    preset = _preset(config)
    if keep_matches:
        params = proto.params(iou_type, compat=compat, preset=preset, strict=strict, **options)
        params = proto.keeping_tables(params, matches=True, per_image=True)
        result = proto.evaluate_loaded(*proto.load(preds, gt, params), params)
    else:
        result = proto.evaluate(preds, gt, iou_type=iou_type, compat=compat, preset=preset, strict=strict, **options)
    if slices is not None:
        from deteval.analysis.slices import slice_stats

        result.slices = slice_stats(result, slices)
    return result


def bootstrap(
    result: EvalResult | Any,
    gt: Any = None,
    n: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    **evaluate_options: Any,
) -> BootstrapResult:
    """Bootstrap percentile intervals of every stat, from one matching pass.

    ``result`` is a result of :func:`evaluate` (any protocol but LVIS's Fixed AP), or the detections, with
    ``gt`` and any :func:`evaluate` keywords, to evaluate first.
    Replicate ``b`` resamples the ground truth's images (in file order) with
    ``idx = np.random.default_rng(seed).integers(0, n_images, n_images)``, the ``b``-th such draw; an image
    drawn k times counts k times, the images in draw order (how score ties between images break; the VOC
    family and Open Images, which break ties by row, see the rows draw after draw, each image's in their own
    order). Its stats equal those of evaluating that materialised dataset.

    Returns
    -------
    BootstrapResult
        ``.replicates`` (n, n_stats) in ``stats`` order (then ``extra_stats``), ``.intervals``
        ``{stat: (low, high)}``, ``.point``, ``.to_dict()``, ``.format_table()``.

    Examples
    --------
    >>> ci = deteval.bootstrap("results.json", "instances_val2017.json", n=1000)  # doctest: +SKIP
    >>> ci.intervals["AP"]  # doctest: +SKIP
    """
    from deteval.analysis.intervals import bootstrap_result

    if not isinstance(result, EvalResult):
        if gt is None:
            raise TypeError("bootstrap() takes a result, or detections and ground truth")
        result = evaluate(result, gt, **evaluate_options)
    elif gt is not None or evaluate_options:
        raise TypeError("bootstrap() of a result takes no ground truth or evaluate() options")
    return bootstrap_result(result, n=n, seed=seed, level=level)


def compare(
    a: EvalResult | Any,
    b: EvalResult | Any,
    gt: Any = None,
    n: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    protocol: str = "coco",
    iou_type: str | None = None,
    compat: bool = True,
    config: str | Path | Preset | dict | None = None,
    strict: bool = False,
    **options: Any,
) -> ComparisonResult:
    """Paired bootstrap comparison of two models on the same ground truth (any protocol but LVIS's Fixed AP).

    ``a`` and ``b`` are two results of :func:`evaluate` on the same ground truth, or two detection
    inputs with ``gt`` (evaluated here: the ground truth is loaded once, each model matched once). Each
    replicate resamples the images once (the rule of :func:`bootstrap`) and re-accumulates both models
    on them. Returns a :class:`~deteval.analysis.comparison.ComparisonResult`: per stat ``a``, ``b``, ``delta``
    (b - a), its percentile ``intervals`` and two-sided bootstrap ``p_values``; per-class AP deltas
    sorted by size; ``.format_table()``, ``.to_dict()``.
    """
    from deteval.analysis.comparison import compare_results

    if isinstance(a, EvalResult) and isinstance(b, EvalResult):
        if gt is not None or options:
            raise TypeError("compare() of two results takes no ground truth or evaluate() options")
        return compare_results(a, b, n=n, seed=seed, level=level)
    if gt is None:
        raise TypeError("compare() takes two results, or two detection inputs and the ground truth")
    proto = protocols.get(protocol)
    params = proto.params(iou_type, compat=compat, preset=_preset(config), strict=strict, **options)
    dets_a, gt_loaded = proto.load(a, gt, params)
    dets_b, _ = proto.load(b, gt_loaded, params)
    result_a = proto.evaluate_loaded(dets_a, gt_loaded, params)
    result_b = proto.evaluate_loaded(dets_b, gt_loaded, params)
    return compare_results(result_a, result_b, n=n, seed=seed, level=level)
