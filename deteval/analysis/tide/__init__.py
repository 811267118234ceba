"""TIDE error breakdown (Bolya et al., ECCV 2020), reproducing ``tidecv`` 1.0.1 (box and mask modes).

``tide_errors(dets, gt)`` runs what ``TIDE().evaluate(gt, preds, mode=TIDE.BOX)`` followed by
``summarize()`` computes, with the same numbers (bit for bit on the same Python: see "Sums"),
from deteval's containers and with numba kernels instead of per-detection Python;
``iou_type="segm"`` is ``mode=TIDE.MASK``: the same rules over masks.

Masks (tidecv's mask mode)
--------------------------
Every overlap below is then pycocotools' mask IoU of RLEs (``mask.iou``, computed by
:mod:`deteval.geometry.masks`), and an ignore region's is its crowd IoU (intersection over the
detection's mask area). Ground truth masks are what tidecv's COCO loader builds (polygons merged
into one RLE at the image's size, as pycocotools' ``annToRLE``; deteval's segm loader reads them
the same way); result masks are the results' RLEs (tidecv passes polygon results to ``mask.iou``
unconverted, which is not a mask comparison: deteval converts them, as pycocotools' ``loadRes``).
Boxes are not read in this mode.

What tidecv does (read from its source; docs/protocols.md, "TIDE's rules")
----------------------------------------------------------------------------
* **One IoU threshold.** Matching, errors and AP are at ``iou_thr`` (tidecv's ``pos_threshold``,
  0.5): its "bbox AP @ 50".
  ``evaluate_range`` only adds the AP at each of ``.50:.05:.95`` (``ap_thresholds=``); the errors
  stay at ``iou_thr``.
* **Per image**, in the order of the ground truth's ``images`` list: detections sorted by
  descending score (stable), cut to ``max_dets`` (100, tidecv's COCO loader) across classes.
  Greedy matching in that order: a detection takes the *unused same-class ground truth of highest
  IoU* (first of equals) when that IoU is ``>= iou_thr`` (COCO instead walks the ground truth and
  keeps the best above the threshold, crowd included). Crowd ground truth never matches: it is an
  ignore region; an unmatched detection whose intersection over its own area with a same-class
  crowd box is ``> iou_thr`` is ignored (left out of AP, but still classified and counted as an
  error). The ``ignore`` flag of the ground truth is not read (tidecv's loader reads ``iscrowd``
  only), and there are no area ranges.
* **Errors** of each unmatched or ignored detection, first that applies: no ground truth in the
  image -> Bkg; ``bg_thr <= max same-class IoU <= iou_thr`` -> Loc; max other-class IoU
  ``>= iou_thr`` -> Cls; max IoU with a matched same-class ground truth ``>= iou_thr`` -> Dupe;
  max IoU ``<= bg_thr`` -> Bkg; else Both. A ground truth left unmatched is a Miss unless some
  Loc or Cls error points at it.
* **AP** per class: a 101-point COCO-style integral of the monotone precision over recall,
  ``sum / 101 * 100``; the mAP is the mean over the classes with ground truth or detections. A
  class with detections but no ground truth has AP 0 and counts (COCO leaves it out).
* **dAP** of a type: rebuild the AP with only that type fixed, ``max(mAP_fixed - mAP, 0)``
  (non-progressive). Loc/Cls: the highest-scoring Loc-or-Cls error aimed at each unmatched ground
  truth becomes a true positive (in the ground truth's class for Cls), every other error of the
  type is removed; Dupe/Bkg/Both: removed; Miss: each missed ground truth leaves its class's count.
  FalsePos: every false positive scored 0; FalseNeg: every unmatched ground truth leaves the counts
  (both not clamped). The rebuilt lists put the error points before the true positives, so score
  ties rank differently from the original run; classes also enter the mean in another order.
  Both are reproduced (they move results by ~1e-14, or through ``max(., 0)``).

Where deteval's inputs differ from tidecv's
--------------------------------------------
* **Image order** (it breaks score ties): tidecv walks the ``images`` list in file order; a
  :class:`~deteval.types.GroundTruth` keeps images by ascending id, and neither its annotation
  rows (file order, but a file need not list annotations image by image in the ``images`` order:
  coco_fake100 does not) nor the detections (input order) say what that order was. Given a path or
  dict, the file's order is read; given containers (:func:`tide_from_containers`), the order is
  ``image_order=`` (the file's image ids in order), else the image table's ``file_rank`` when the
  loader kept one, else ascending id: the results are the same unless scores tie across images.
* **Results** whose ``category_id`` is not a ground-truth category are dropped by deteval's loader
  (with a warning), and an ``image_id`` not in the ground truth is an error; tidecv keeps the former
  as an extra class (AP 0, lowering the mAP) and skips the latter silently.
* **No classes left.** Where a mean has no class (no ground truth and every detection removed by
  a fix, or nothing at all), tidecv raises ``ZeroDivisionError``; deteval takes the mean as 0.
  For scores ``<= -1`` tidecv raises ``KeyError`` in a Loc/Cls fix; deteval leaves such
  detections unfixed (removed), as tidecv would if it did not raise.
* **Boxes.** ``xyxy`` containers are converted to ``xywh``; zero-area boxes overlap nothing
  (pycocotools' ``bbIou``), so such a detection is Bkg and such a ground truth a Miss. A crowd box
  of category id ``-1`` is tidecv's "any class" region.
* **Sums.** tidecv sums with Python's ``sum()``, which is left to right up to Python 3.11 and
  Neumaier-compensated from 3.12; deteval follows the interpreter it runs on.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from deteval.analysis.tide.core import COCO_THRESHOLDS, FILE_RANK
from deteval.analysis.tide.result import ERROR_TYPES, SPECIAL_TYPES, TideResult
from deteval.errors import renamed_keywords
from deteval.types import Detections, GroundTruth

__all__ = [
    "COCO_THRESHOLDS",
    "ERROR_TYPES",
    "FILE_RANK",
    "SPECIAL_TYPES",
    "TideResult",
    "tide_errors",
    "tide_from_containers",
]


def _run_name(dets: Any, source: str) -> str:
    """tidecv names a run after the results file (basename, no extension)."""
    if isinstance(dets, (str, Path)):
        return Path(dets).stem
    if source and not source.startswith("<"):
        return Path(source).stem
    return "detections"


@renamed_keywords(pos_thr="iou_thr")
def tide_errors(
    dets: Any,
    gt: Any,
    *,
    iou_thr: float = 0.5,
    bg_thr: float = 0.1,
    max_dets: int = 100,
    image_order: Sequence | None = None,
    ap_thresholds: Sequence[float] | bool | None = None,
    iou_type: str = "bbox",
    name: str | None = None,
) -> TideResult:
    """TIDE error breakdown of detections against ground truth, as tidecv computes it.

    Parameters
    ----------
    dets : Detections, or COCO results (path or list)
        Boxes in COCO ``[x, y, w, h]`` (``xyxy`` containers are converted).
    gt : GroundTruth, or COCO ground truth (path or dict)
        ``iscrowd`` ground truth is a set of ignore regions, as in tidecv.
    iou_thr : float, default 0.5
        IoU for a match (tidecv's ``pos_threshold``; ``pos_thr=`` is deprecated): the AP, the errors
        and dAP are at this IoU. The result keeps it as ``pos_thr``.
    bg_thr : float, default 0.1
        IoU up to which a detection is background (``background_threshold``).
    max_dets : int, default 100
        Detections kept per image, all classes together (tidecv's COCO loader: 100; LVIS: 300).
    image_order : sequence of image ids, optional
        The order tidecv walks the images (the ground-truth file's ``images`` list), which breaks
        score ties between images. Read from ``gt`` when it is a path or dict; for a container, as
        :func:`tide_from_containers` takes it.
    ap_thresholds : sequence of floats, or True, optional
        Also give the AP at each of these IoU thresholds (``True``: ``.50:.05:.95``, tidecv's
        ``evaluate_range``), in ``result.ap_by_threshold`` and their mean in ``result.ap_range``.
    iou_type : "bbox" or "segm"
        Boxes (tidecv's ``TIDE.BOX``) or masks (``TIDE.MASK``: both files need segmentations).
    name : str, optional
        The run's name in the summary (default: the results file's name, as tidecv).

    Returns
    -------
    TideResult
        ``.ap``, ``.counts``, ``.dap``, ``.special_dap``, ``.fixed_ap``, ``.per_class``,
        ``.summary()``, ``.to_dict()``; AP values in percent.

    Raises
    ------
    ValueError
        An ``iou_type`` other than bbox or segm, containers that do not belong together, non-finite boxes or
        scores, negative box sizes, thresholds outside ``0 <= bg_thr <= iou_thr <= 1``,
        ``iou_thr == 0``, ``max_dets < 1``, or an ``image_order`` that is not the image list.
    """
    if iou_type not in ("bbox", "segm"):
        raise ValueError(f"TIDE supports iou_type 'bbox' and 'segm' (tidecv's box and mask modes), got {iou_type!r}")
    gt_loaded, order = gt, image_order
    if not isinstance(gt, GroundTruth):
        if isinstance(gt, Detections):
            raise ValueError("gt must be a GroundTruth (are dets and gt swapped?)")
        from deteval.io.coco import load_coco_gt
        from deteval.io.json_source import read_json

        data, src = read_json(gt, "ground truth")
        gt_loaded = load_coco_gt(data, iou_type=iou_type)
        if isinstance(data, dict) and isinstance(data.get("images"), list) and order is None:
            order = [im["id"] for im in data["images"]]
        gt_loaded = _with_source(gt_loaded, src)
    if isinstance(dets, GroundTruth):
        raise ValueError("dets must be detections, got a GroundTruth (are dets and gt swapped?)")
    dets_loaded = dets
    if not isinstance(dets, Detections):
        from deteval.io.coco import load_coco_results

        dets_loaded = load_coco_results(dets, gt_loaded, iou_type=iou_type)
    return tide_from_containers(
        dets_loaded,
        gt_loaded,
        iou_thr=iou_thr,
        bg_thr=bg_thr,
        max_dets=max_dets,
        image_order=order,
        ap_thresholds=ap_thresholds,
        name=name if name is not None else _run_name(dets, dets_loaded.source),
        iou_type=iou_type,
    )


@renamed_keywords(pos_thr="iou_thr")
def tide_from_containers(
    dets: Detections,
    gt: GroundTruth,
    *,
    iou_thr: float = 0.5,
    bg_thr: float = 0.1,
    max_dets: int = 100,
    image_order: Sequence | None = None,
    ap_thresholds: Sequence[float] | bool | None = None,
    name: str | None = None,
    iou_type: str = "bbox",
) -> TideResult:
    """TIDE of already-loaded containers, with no file read: :func:`tide_errors`' numbers, bit for bit,
    when the image order is tidecv's.

    tidecv breaks score ties between images by its walk over the ground truth's ``images`` list
    (file order), which a :class:`~deteval.types.GroundTruth` does not record in its id-sorted
    image table. The walk order is, first that applies: ``image_order`` (the file's image ids, in
    order); the image table's ``file_rank`` attribute (:data:`FILE_RANK`: each image's place in the
    file's list) when the loader kept it; ascending image id. Detections are read in their input
    order (it breaks ties within an image) and ground truth in row order, as the loaders keep them.

    Parameters as :func:`tide_errors`; ``name`` defaults to the detections' source file name;
    ``iou_type="segm"`` needs containers loaded with their masks (``iou_type="segm"``).

    Raises
    ------
    TypeError
        ``dets`` or ``gt`` is not a loaded container (use :func:`tide_errors` for paths and JSON).
    ValueError
        As :func:`tide_errors`.
    """
    from deteval.analysis.tide.core import tide_errors_impl

    if not isinstance(gt, GroundTruth) or not isinstance(dets, Detections):
        raise TypeError(
            f"tide_from_containers takes Detections and a GroundTruth, got {type(dets).__name__} and "
            f"{type(gt).__name__}; tide_errors() loads paths and JSON"
        )
    if ap_thresholds is True:
        ap_thresholds = COCO_THRESHOLDS
    elif ap_thresholds is False:
        ap_thresholds = None
    return tide_errors_impl(
        dets,
        gt,
        iou_thr=iou_thr,
        bg_thr=bg_thr,
        max_dets=max_dets,
        image_order=image_order,
        ap_thresholds=ap_thresholds,
        name=name if name is not None else _run_name(None, dets.source),
        iou_type=iou_type,
    )


def _with_source(gt: GroundTruth, src: str) -> GroundTruth:
    import dataclasses

    return dataclasses.replace(gt, source=src)
