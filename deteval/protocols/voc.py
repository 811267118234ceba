"""PASCAL VOC protocols: ``voc07`` (11-point AP) and ``voc10`` (all-point AP).

One evaluation: VOC matching (:mod:`deteval.matching.voc`) at every IoU
threshold in one pass, then one stable ranking per class (descending score,
ties in input order) reduced by an integrator from :mod:`deteval.integrators`.

Defaults reproduce py-faster-rcnn's ``voc_eval.py`` (and detectron2's VOC
evaluator): IoU test ``>`` thr, the +1 pixel convention, the 11-point grid
``np.arange(0., 1.1, 0.1)``, IoU 0.5. Where they differ deliberately:

* the score sort is stable (theirs is numpy's unstable quicksort), so ties keep
  input order and results do not depend on the numpy version;
* precision is guarded (``tp / max(tp + fp, eps)``) as in detectron2, so a
  class whose top detection hits a difficult object gets no NaN;
* classes without positives (no non-difficult ground truth) get no AP; they
  are listed with ``no_positives: true`` and left out of the mean.

``iou_test="ge"`` with ``grid="matlab"`` (for voc07) gives the MATLAB devkit's
rules. Several IoU thresholds give per-threshold mAPs and their mean under
``"mAP"`` (detectron2 reports the mean over 0.50:0.95 as VOC "AP"). Several
integrators report the same matches under each definition: the first one is
the headline, the others are suffixed ``":<integrator>"``.

Inputs are containers, COCO objects, or paths (see :func:`deteval.io.voc.load_voc`).
COCO boxes (``xywh``) are converted to corners as ``x2 = x + w``, ``y2 = y + h``;
the +1 convention then applies to them as to VOC boxes (``plus_one=False`` for
continuous coordinates). COCO ``iscrowd`` and ``ignore`` ground truth are treated
as VOC difficult: not counted as positives, and absorbing the detections whose
best match they are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from deteval import integrators as integ
from deteval.errors import InputError
from deteval.io import voc as voc_io
from deteval.matching.groups import group_by_image_category
from deteval.matching.voc import IOU_TESTS, match_voc
from deteval.result import EvalResult, Outcomes
from deteval.types import Detections, GroundTruth

IOU_TYPES = ("bbox",)
PROTOCOLS = {"voc07": "voc11", "voc10": "all_points"}  # protocol -> its integrator


# --------------------------------------------------------------------------------------
# options


def parse_iou_thresholds(values) -> list[float]:
    """IoU thresholds from numbers or strings: ``0.5``, ``"0.75"``, ``"0.5:0.95"`` (step 0.05), ``"0.5:0.95:0.05"``.

    Ranges on a 0.01 grid are built as ``k / 100`` (detectron2's values exactly).
    """
    if isinstance(values, (int, float, str)):
        values = [values]
    out: list[float] = []
    for v in values:
        if isinstance(v, str) and ":" in v:
            parts = v.split(":")
            if len(parts) not in (2, 3):
                raise ValueError(f"IoU range must be 'start:stop[:step]', got {v!r}")
            try:
                a, b = float(parts[0]), float(parts[1])
                s = float(parts[2]) if len(parts) == 3 else 0.05
            except ValueError:
                raise ValueError(f"IoU range must be 'start:stop[:step]' of numbers, got {v!r}") from None
            if s <= 0 or b < a:
                raise ValueError(f"IoU range {v!r} must rise with a positive step")
            n = int(round((b - a) / s)) + 1
            ka, ks = round(a * 100), round(s * 100)
            if abs(ka - a * 100) < 1e-9 and abs(ks - s * 100) < 1e-9 and ks > 0:
                out += [(ka + i * ks) / 100.0 for i in range(n)]
            else:
                out += [a + i * s for i in range(n)]
        else:
            try:
                out.append(float(v))
            except (TypeError, ValueError):
                raise ValueError(f"IoU threshold must be a number, got {v!r}") from None
    if not out or not all(0.0 < t <= 1.0 for t in out):
        raise ValueError(f"IoU thresholds must lie in (0, 1], got {out}")
    if len(set(out)) != len(out):
        raise ValueError(f"IoU thresholds repeat: {out}")
    return out


def _iou_key(t: float) -> str:
    return f"{round(t * 100, 6):g}"


def _integrators(protocol: str, integrator) -> list[str]:
    if integrator is None:
        return [PROTOCOLS[protocol]]
    names = [integrator] if isinstance(integrator, str) else list(integrator)
    for n in names:
        if n not in integ.INTEGRATORS:
            raise ValueError(f"integrator must be one of {integ.INTEGRATORS}, got {n!r}")
    if not names or len(set(names)) != len(names):
        raise ValueError(f"integrators must be distinct and at least one, got {names}")
    return names


# --------------------------------------------------------------------------------------
# inputs


def load_inputs(preds, gt, **_context):
    """Loading hook of :func:`deteval.api.evaluate`: defer to :func:`evaluate`.

    VOC inputs need options to load (``names``, ``image_set``, ``box_format``),
    which the hook does not receive, so paths and objects pass through unchanged
    (``iou_type`` and other context are checked by :func:`evaluate`).
    """
    return preds, gt


def _is_path(x) -> bool:
    return isinstance(x, (str, Path))


def _load(dets, gt, names, image_set, box_format) -> tuple[Detections, GroundTruth]:
    if _is_path(dets) and _is_path(gt):
        return voc_io.load_voc(dets, gt, names=names, image_set=image_set, box_format=box_format)
    if _is_path(gt) or isinstance(gt, dict):
        from deteval.io.coco import load_coco_gt

        if _is_path(gt) and voc_io.detect_format(gt, "gt") != "coco":
            raise TypeError(
                "VOC-format ground truth needs its detections as a path too (or load both with deteval.io.voc)"
            )
        gt = load_coco_gt(gt)
    if not isinstance(gt, GroundTruth):
        raise TypeError(f"gt must be a GroundTruth, a path or a COCO ground-truth dict, got {type(gt).__name__}")
    if isinstance(dets, Detections):
        return dets, gt
    fmt = voc_io.detect_format(dets, "dets") if _is_path(dets) else "coco"
    if fmt == "comp4":
        return voc_io.load_comp4(dets, gt, names=names), gt
    if fmt == "text":
        return voc_io.load_text_dets(dets, gt, names=names, box_format=box_format), gt
    if isinstance(dets, list) or _is_path(dets):
        from deteval.io.coco import load_coco_results

        return load_coco_results(dets, gt), gt
    raise TypeError(f"dets must be Detections, a path or a COCO results list, got {type(dets).__name__}")


def _corners(boxes: np.ndarray, box_format: str) -> np.ndarray:
    if box_format == "xyxy":
        return np.ascontiguousarray(boxes, dtype=np.float64)
    x, y, w, h = boxes.T
    return np.ascontiguousarray(np.stack([x, y, x + w, y + h], axis=1), dtype=np.float64)


# --------------------------------------------------------------------------------------
# evaluation


def evaluate(
    dets,
    gt,
    *,
    protocol: str | None = None,
    iou=(0.5,),
    integrator: str | list[str] | None = None,
    iou_test: str = "gt",
    plus_one: bool = True,
    ties: str = "item",
    grid: str = "numpy",
    names=None,
    image_set=None,
    box_format: str = "xyxy",
    iou_type: str = "bbox",
    compat: bool = True,
    voc_protocol: str | None = None,
) -> EvalResult:
    """Evaluate detections with a VOC protocol.

    Parameters
    ----------
    dets, gt :
        :class:`Detections` and :class:`GroundTruth`; or paths (VOC XML folder or
        image-set list, per-image text folder, comp4 folder/file, COCO JSON),
        formats detected from the paths; or COCO results and ground truth objects.
    protocol : ``"voc07"`` or ``"voc10"`` (required: it names the default integrator)
    iou : one or several IoU thresholds (numbers, or strings such as ``"0.5:0.95"``)
    integrator : override, one name or a list of names from :data:`deteval.integrators.INTEGRATORS`
    iou_test : ``"gt"`` (IoU > thr, voc_eval.py/detectron2) or ``"ge"`` (IoU >= thr, devkit)
    plus_one : VOC's +1 pixel convention in the IoU
    ties : ``"item"`` (stable order) or ``"group"`` (tie blocks, as scikit-learn)
    grid : 11-point grid, ``"numpy"`` (``np.arange(0., 1.1, 0.1)``) or ``"matlab"``
    names, image_set, box_format : used when loading from paths (:func:`deteval.io.voc.load_voc`)
    compat : accepted for :func:`deteval.api.evaluate`; VOC has one mode (the defaults
        reproduce voc_eval.py; its unstable sort and NaN precision are never reproduced)
    voc_protocol : the protocol name as the CLI passes it (an alias of ``protocol``)

    Returns
    -------
    EvalResult
        ``stats``: ``mAP`` (the mean over thresholds when there are several),
        ``mAP<t*100>`` per threshold when several, and the same keys suffixed
        ``:<integrator>`` for additional integrators; -1 when no class has
        positives. ``per_class``: ``category_id``, ``name``, ``AP`` (None
        without positives), per-threshold ``AP<t*100>``, ``npos``, ``ndet``,
        ``no_positives``. ``arrays``: ``ap`` (T, K, I), ``mAP`` (T, I),
        ``iou_thrs``, ``npos``, ``ndet`` and the detections' ``outcome``
        (T, D; 1 TP, 0 FP, -1 ignored) and ``rank`` (D,; rank within the class).
    """
    if voc_protocol is not None:
        if protocol is not None and protocol != voc_protocol:
            raise ValueError(f"protocol={protocol!r} and voc_protocol={voc_protocol!r} disagree")
        protocol = voc_protocol
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {sorted(PROTOCOLS)}, got {protocol!r}")
    if iou_type not in IOU_TYPES:
        raise ValueError(f"the VOC protocols evaluate {IOU_TYPES}, got iou_type={iou_type!r}")
    if iou_test not in IOU_TESTS:
        raise ValueError(f"iou_test must be one of {IOU_TESTS}, got {iou_test!r}")
    if ties not in integ.TIE_POLICIES:
        raise ValueError(f"ties must be one of {integ.TIE_POLICIES}, got {ties!r}")
    if grid not in integ.VOC11_GRIDS:
        raise ValueError(f"grid must be one of {integ.VOC11_GRIDS}, got {grid!r}")
    thrs = parse_iou_thresholds(iou)
    names_i = _integrators(protocol, integrator)
    dt, gt = _load(dets, gt, names, image_set, box_format)
    if len(dt) and (dt.image.max() >= len(gt.images) or dt.category.max() >= len(gt.categories)):
        raise ValueError("detections index images or categories outside the ground truth's tables")

    gt_boxes = _corners(gt.boxes, gt.box_format)
    dt_boxes = _corners(dt.boxes, dt.box_format)
    difficult = gt.difficult | gt.crowd | gt.ignore
    groups = group_by_image_category(gt, dt, use_cats=True, max_det=None)
    outcome, _, _, _ = match_voc(gt_boxes, difficult, dt_boxes, groups, thrs, iou_test=iou_test, plus_one=plus_one)

    n_cat = len(gt.categories)
    # one ranking per class over all images: stable, so ties keep input order
    order = np.lexsort((-dt.score, dt.category))
    offsets = np.searchsorted(dt.category[order], np.arange(n_cat + 1), side="left").astype(np.int64)
    npos = np.bincount(gt.category[~difficult], minlength=n_cat).astype(np.int64)
    ndet = np.bincount(dt.category, minlength=n_cat).astype(np.int64)
    scores = np.ascontiguousarray(dt.score[order])
    ap = np.empty((len(thrs), n_cat, len(names_i)))
    for t in range(len(thrs)):
        o = outcome[t, order]
        ap[t] = integ.average_precision_segments(
            o == 1, o == 0, offsets, npos, names_i, ties=ties, scores=scores, grid=grid
        )
    valid = npos > 0
    m_ap = np.array(
        [[np.mean(ap[t, valid, i]) if valid.any() else -1.0 for i in range(len(names_i))] for t in range(len(thrs))]
    )
    rank = np.empty(len(dt), np.int64)
    rank[order] = np.arange(len(dt)) - np.repeat(offsets[:-1], np.diff(offsets))

    stats: dict[str, float] = {}
    for i, name in enumerate(names_i):
        suffix = "" if i == 0 else f":{name}"
        stats["mAP" + suffix] = float(np.mean(m_ap[:, i])) if valid.any() else -1.0
        if len(thrs) > 1:
            for t, thr in enumerate(thrs):
                stats[f"mAP{_iou_key(thr)}{suffix}"] = float(m_ap[t, i])

    per_class = []
    for k in range(n_cat):
        row: dict[str, Any] = {"category_id": gt.categories.id_of(k), "name": gt.categories.name_of(k)}
        for i, name in enumerate(names_i):
            suffix = "" if i == 0 else f":{name}"
            row["AP" + suffix] = float(np.mean(ap[:, k, i])) if valid[k] else None
            if len(thrs) > 1:
                for t, thr in enumerate(thrs):
                    row[f"AP{_iou_key(thr)}{suffix}"] = float(ap[t, k, i]) if valid[k] else None
        row.update(npos=int(npos[k]), ndet=int(ndet[k]), no_positives=not bool(valid[k]))
        per_class.append(row)

    params = {
        "protocol": protocol,
        "integrators": names_i,
        "iou_thresholds": thrs,
        "iou_test": ">" if iou_test == "gt" else ">=",
        "plus_one": bool(plus_one),
        "ties": ties,
        "voc11_grid": grid,
        "difficult": "not positives; a detection whose best match is difficult is ignored",
        "compat": bool(compat),
    }
    result = EvalResult(
        protocol=protocol,
        iou_type=iou_type,
        stats=stats,
        per_class=per_class,
        arrays={
            "ap": ap,
            "mAP": m_ap,
            "iou_thrs": np.array(thrs),
            "npos": npos,
            "ndet": ndet,
            "outcome": outcome,
            "rank": rank,
        },
        params=params,
        outcomes=Outcomes(
            category=dt.category,
            image=dt.image,
            score=dt.score,
            # VOC's -1 (matched a difficult box) is the shared "ignored" state 2
            state=np.where(outcome == -1, 2, outcome).astype(np.int8).T[:, None, :].copy(),
            npos=npos[:, None],
            iou_thrs=np.array(thrs),
            area_labels=("all",),
            category_ids=gt.categories.ids,
            category_names=tuple(gt.categories.name_of(k) for k in range(n_cat)),
        ),
    )
    result.summary_lines = _summary(result, thrs, names_i, ap, m_ap, valid)
    return result


def _summary(result: EvalResult, thrs, names_i, ap, m_ap, valid) -> list[str]:
    p = result.params
    head = (
        f"{result.protocol}: AP = {', '.join(names_i)}; IoU {p['iou_test']} {', '.join(f'{t:g}' for t in thrs)}; "
        f"{'+1 pixel' if p['plus_one'] else 'no +1'}; ties: {p['ties']}"
    )
    cols = [(t, i) for i in range(len(names_i)) for t in range(len(thrs))]
    labels = [f"AP{_iou_key(thrs[t])}" + ("" if i == 0 else f":{names_i[i]}") for t, i in cols]
    width = max([len("class")] + [len(r["name"]) for r in result.per_class])
    lines = [head, f"{'class':<{width}}  {'npos':>5}  {'ndet':>5}  " + "  ".join(f"{c:>8}" for c in labels)]
    for k, r in enumerate(result.per_class):
        vals = "  ".join(f"{ap[t, k, i]:8.4f}" if valid[k] else f"{'-':>8}" for t, i in cols)
        note = "  (no positives)" if not valid[k] else ""
        lines.append(f"{r['name']:<{width}}  {r['npos']:>5}  {r['ndet']:>5}  {vals}{note}")
    vals = "  ".join(f"{m_ap[t, i]:8.4f}" if m_ap[t, i] >= 0 else f"{'-':>8}" for t, i in cols)
    lines.append(f"{'mAP':<{width}}  {'':>5}  {'':>5}  {vals}")
    if len(thrs) > 1:
        for i, name in enumerate(names_i):
            lines.append(
                f"mAP (mean over IoU thresholds, {name}) = {result.stats['mAP' + ('' if i == 0 else ':' + name)]:.4f}"
            )
    return lines


# --------------------------------------------------------------------------------------
# CLI hooks


def add_cli_arguments(parser) -> None:
    """The VOC options of the ``deteval`` command."""
    g = parser.add_argument_group("VOC protocols (voc07, voc10)")
    # one value per flag (comma lists, or the flag repeated): nargs="+" would swallow DETS GT
    g.add_argument(
        "--iou",
        action="append",
        default=None,
        metavar="T[,T...]",
        help="IoU threshold(s): 0.5 (default), 0.5,0.75, 0.5:0.95 (detectron2's ten); repeatable",
    )
    g.add_argument(
        "--integrator",
        action="append",
        default=None,
        metavar="NAME[,NAME...]",
        help=f"AP integrator(s) from {', '.join(integ.INTEGRATORS)}; the first is the headline "
        "(default: voc11 for voc07, all_points for voc10); repeatable",
    )
    g.add_argument(
        "--names", default=None, metavar="FILE", help="class names file: one per line, indices in file order"
    )
    g.add_argument("--image-set", default=None, metavar="FILE", help="image ids to evaluate (VOC ImageSets/Main list)")
    g.add_argument(
        "--iou-test",
        choices=IOU_TESTS,
        default="gt",
        help="gt: IoU > t (voc_eval.py, detectron2; default); ge: IoU >= t (MATLAB devkit)",
    )
    g.add_argument("--no-plus-one", action="store_true", help="continuous IoU, without VOC's +1 pixel convention")
    g.add_argument(
        "--ties",
        choices=integ.TIE_POLICIES,
        default="item",
        help="item: stable order (default); group: tie blocks as scikit-learn",
    )
    g.add_argument(
        "--voc11-grid",
        choices=integ.VOC11_GRIDS,
        default="numpy",
        help="11-point grid: numpy np.arange(0,1.1,0.1) (default) or matlab 0:0.1:1",
    )
    g.add_argument(
        "--box-format", choices=("xyxy", "xywh"), default="xyxy", help="boxes of per-image text files (default xyxy)"
    )


def options_from_args(args) -> dict[str, Any]:
    """:func:`evaluate` keyword arguments from parsed CLI arguments."""
    opts: dict[str, Any] = {
        # the CLI passes protocol= to deteval.api.evaluate, which does not forward it
        "voc_protocol": args.protocol,
        "iou_test": args.iou_test,
        "plus_one": not args.no_plus_one,
        "ties": args.ties,
        "grid": args.voc11_grid,
        "names": args.names,
        "image_set": args.image_set,
        "box_format": args.box_format,
    }
    try:
        if args.iou is not None:
            opts["iou"] = parse_iou_thresholds([v for arg in args.iou for v in arg.split(",")])
        if args.integrator is not None:
            opts["integrator"] = _integrators(args.protocol, [v for arg in args.integrator for v in arg.split(",")])
    except ValueError as e:
        raise InputError("--iou" if "IoU" in str(e) else "--integrator", None, str(e)) from None
    return opts
