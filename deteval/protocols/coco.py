"""The COCO protocol: pycocotools' parameters, its pipeline and its summary.

``compat=True`` (the default) reproduces pycocotools 2.0.11 to the last bit,
quirks included; ``compat=False`` corrects them (see README, "Compat and
fixed modes"):

============================  =======================================  ==========================
behaviour                     compat (pycocotools)                     fixed
============================  =======================================  ==========================
GT ``ignore`` field           overwritten by ``iscrowd``: no effect    honoured (ignored GT)
GT annotation id 0            a match to it counts as a false positive  an ordinary match
``stats[0]`` max dets         100, hard-coded (-1 if 100 is absent)    the largest max dets
summary IoU lookup            exact float equality (0.9 never found)   ``np.isclose``
============================  =======================================  ==========================
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval._startup.compile_ahead import compile_ahead
from deteval.errors import InputError
from deteval.io.coco import load_coco_pair
from deteval.protocols.base import Option, Protocol, split_list
from deteval.protocols.coco_matching import (
    CocoMatches,
    MatchRules,
    ignore_flags,
    match_pipeline,
    matches_record,
    overlaps_of,
)
from deteval.protocols.coco_params import IOU_TYPES, CocoParams, all_area_index, keeping_tables, make_params
from deteval.protocols.coco_summary import coco_stats, extra_stats, per_class_rows, summary_lines
from deteval.protocols.replay import Replay, ReplayRecord, kept_replay
from deteval.protocols.streaming import StreamPart, StreamRows, StreamSpec
from deteval.result import CocoResult, EvalResult, Outcomes
from deteval.tuning import TUNING
from deteval.types import Detections, GroundTruth, IdTable
from deteval.vocabulary import IOU_TYPES as IOU_TYPE_TABLE

__all__ = [
    "COCO", "DILATION_OPTION", "CocoMatches", "CocoParams", "CocoProtocol", "CocoReplay", "CocoReplayStats",
    "coco_replay_index", "replay_of", "make_params", "match", "match_with", "result_from_matches", "rules_of",
    "stream_matches", "stream_part",
]  # fmt: skip


def rules_of(params: CocoParams) -> MatchRules:
    """How ``params``' mode reads the ground truth and results (pycocotools' in compat mode; boundary-iou-api's,
    which honours ``ignore``, for boundary IoU)."""
    if params.compat:  # pycocotools marks matches with annotation ids and reads 0 as "no match"
        honour = IOU_TYPE_TABLE[params.iou_type].honours_ignore
        return MatchRules(crowd=True, honour_ignore=honour, id0_unmatched=True, mask_area=False)
    return MatchRules(crowd=True, honour_ignore=True, id0_unmatched=False, mask_area=True)


def match(dets: Detections, gt: GroundTruth, params: CocoParams) -> CocoMatches:
    """Group, compute IoU and match, for every IoU threshold and area range."""
    return match_with(dets, gt, params, rules_of(params))


def match_with(dets: Detections, gt: GroundTruth, params: CocoParams, rules: MatchRules) -> CocoMatches:
    """:func:`match` under ``rules`` (another tool's reading of COCO's inputs, e.g. xtcocotools')."""
    from deteval.jit import warm

    # the later stages' kernels load on a thread of their own while the grouping runs on this one; the sorts'
    # kernels of a large input are noted for the compile helpers (a cold cache's)
    warm(IOU_TYPE_TABLE[params.iou_type].kernel_group, large=len(dets) >= TUNING.kernel_sort_rows)
    if gt.box_format != "xywh" or dets.box_format != "xywh":
        raise InputError(dets.source, None, "the coco protocol needs xywh boxes")
    keep_iou = params.keep_iou or params.keep_matches  # the matches table shows each match's overlap too
    all_area = all_area_index(params.area_labels) if keep_iou else None
    matched = match_pipeline(
        dets, gt, iou_type=params.iou_type, iou_thrs=params.iou_thrs, area_ranges=params.area_ranges, rules=rules,
        use_cats=params.use_cats, max_det=params.max_dets[-1], kpt_sigmas=params.kpt_sigmas,
        dilation_ratio=params.dilation_ratio, iou_area=all_area, keep_gt=params.keep_matches,
    )  # fmt: skip
    n_cat = len(gt.categories) if params.use_cats else 1
    record = matches_record(matched, dets, n_cat, params.use_cats, nan_scores=dets.nan_scores)
    if params.keep_matches or params.keep_per_image:
        record = dataclasses.replace(record, tables=tables_of(matched, dets, gt, params, rules))
    return record


def tables_of(matched, dets: Detections, gt: GroundTruth, params: CocoParams, rules: MatchRules) -> tuple:
    """``(matches, per image)`` tables of one matching pass, each None unless ``params`` keep it."""
    from deteval.protocols.coco_tables import image_table, match_table

    return (
        match_table(matched, dets, gt, params, rules.id0_unmatched) if params.keep_matches else None,
        image_table(matched, gt, params) if params.keep_per_image else None,
    )


def gt_ignored(gt: GroundTruth, params: CocoParams) -> np.ndarray:
    """Which ground truth is ignored (never a positive; a detection matched to it is ignored)."""
    return ignore_flags(gt, params.iou_type, rules_of(params))


@dataclass(frozen=True, eq=False)
class CocoReplay(ReplayRecord):
    """What re-accumulating a subset or a resample of the images needs (bootstrap, slices): the matches,
    each ground truth's image, category and "counts as a positive" flag per area range, and the image
    table's file order. Kept on the result (``EvalResult.replay``) by :meth:`CocoProtocol.reduce`."""

    matches: CocoMatches
    gt_image: np.ndarray  # int32 (G,)
    gt_category: np.ndarray  # int32 (G,), 0 for all when categories are pooled
    gt_counted: np.ndarray  # bool (G, A)
    image_ids: np.ndarray  # (I,), sorted: the dense image indices' ids
    file_order: np.ndarray  # int64 (I,): the dense index of each image in the file's order
    params: CocoParams


def replay_of(matches: CocoMatches, gt: GroundTruth, params: CocoParams) -> CocoReplay:
    """The :class:`CocoReplay` of an evaluation of ``gt``."""
    ignore = gt_ignored(gt, params)
    area_ranges = np.asarray(params.area_ranges, np.float64).reshape(-1, 2)
    # pycocotools' test (outside: below or above), as positives_per_category: a NaN area is in every range
    counted = ~ignore[:, None] & ~((gt.area[:, None] < area_ranges[:, 0]) | (gt.area[:, None] > area_ranges[:, 1]))
    images = gt.images
    return CocoReplay(
        matches=matches,
        gt_image=gt.image,
        gt_category=gt.category if params.use_cats else np.zeros(len(gt), np.int32),
        gt_counted=counted,
        image_ids=images.ids,
        file_order=images.file_order(),
        params=params,
    )


def coco_replay_index(record: CocoReplay, max_dets: Any = None):
    """The ranked index (:func:`deteval.accumulation.resample.build_index`) of a :class:`CocoReplay` (or a record
    with its fields), cut at ``max_dets`` per (image, category) (default: the parameters')."""
    from deteval.accumulation.resample import build_index

    m, params = record.matches, record.params
    return build_index(
        m.det_category, m.det_image, m.det_rank, m.det_score, m.state, record.gt_image, record.gt_category,
        record.gt_counted, m.npig.shape[0], len(record.image_ids),
        np.array(params.max_dets if max_dets is None else max_dets), params.rec_thrs,
    )  # fmt: skip


class CocoReplayStats(Replay):
    """COCO's replay: a list of images re-accumulated from the matches (:mod:`deteval.accumulation.resample`), read as
    the stats and extra stats are read."""

    def build_index(self):
        from deteval.protocols.coco_summary import stat_reads

        return coco_replay_index(self.record), *stat_reads(self.record.params)

    def replicate(self, index, draw: np.ndarray, by_draw: bool = True) -> list[float]:
        from deteval.accumulation.resample import replicate_arrays
        from deteval.protocols.coco_summary import stats_of_plan

        ranked, plan, need = index
        return stats_of_plan(*replicate_arrays(ranked, draw, need), plan)


def overlaps(groups, dets: Detections, gt: GroundTruth, params: CocoParams) -> np.ndarray:
    """The overlap of every (detection, ground truth) pair of every group: box, mask or oriented-box IoU, or OKS."""
    return overlaps_of(groups, dets, gt, params.iou_type, gt.crowd, params.kpt_sigmas, params.dilation_ratio)


def shown_nan_scores(scores: np.ndarray) -> None:
    """pycocotools' ``scores`` array where NaN scores were ranked as -inf (see ``Detections.nan_scores``):
    their -inf entries become NaN again, in place."""
    scores[scores == -np.inf] = np.nan


def outcomes_of(
    m: CocoMatches, categories: IdTable, iou_thrs: np.ndarray, area_labels: tuple[str, ...], use_cats: bool = True
) -> Outcomes:
    """Every detection's matching state, the input of the analyses that re-rank (curves, operating points)."""
    return Outcomes(
        category=m.det_category,
        image=m.det_image,
        score=m.det_score,
        state=m.state,
        npos=m.npig,
        iou_thrs=iou_thrs,
        area_labels=area_labels,
        category_ids=categories.ids if use_cats else np.array([-1]),
        category_names=tuple(categories.name_of(k) for k in range(len(categories))) if use_cats else ("all",),
        match_iou=m.match_iou,
    )


def reduce_matches(matches: CocoMatches, categories: IdTable, params: CocoParams) -> CocoResult:
    """Rank and accumulate matches into pycocotools' arrays, the stats and the per-class rows (no summary lines)."""
    from deteval.accumulation.accumulate import accumulate

    m = matches
    precision, recall, scores = accumulate(
        m.det_category, m.det_image, m.det_rank, m.det_score, m.state, m.npig,
        np.array(params.max_dets), params.rec_thrs,
    )  # fmt: skip
    if m.nan_scores:
        shown_nan_scores(scores)
    cat_ids = categories.ids if params.use_cats else np.array([-1])
    match_rows, image_rows = m.tables if m.tables is not None else (None, None)
    return CocoResult(
        match_table=match_rows,
        image_table=image_rows,
        protocol="coco",
        iou_type=params.iou_type,
        stats=coco_stats(precision, recall, params),
        extra_stats=extra_stats(precision, recall, params),
        per_class=per_class_rows(precision, recall, m.npig, m.ndet, categories, params),
        params=params.to_dict(),
        outcomes=outcomes_of(m, categories, params.iou_thrs, params.area_labels, params.use_cats),
        precision=precision,
        recall=recall,
        scores=scores,
        iou_thrs=params.iou_thrs,
        rec_thrs=params.rec_thrs,
        cat_ids=cat_ids,
        area_labels=np.array(params.area_labels),
        max_dets=np.array(params.max_dets),
    )


def result_from_matches(matches: CocoMatches, categories: IdTable, params: CocoParams) -> CocoResult:
    """:func:`reduce_matches` with pycocotools' summary lines: the whole result of matched shards."""
    result = reduce_matches(matches, categories, params)
    result.summary_lines = summary_lines(result.stats, params, result.extra_stats)
    return result


# --------------------------------------------------------------------------------------
# the protocol object and its options


def _numbers(kind: type, what: str):
    def convert(values: list[str]) -> list:
        try:
            return [kind(v) for v in split_list(values)]
        except ValueError:
            raise ValueError(f"{what} must be {kind.__name__}s, got {' '.join(values)!r}") from None

    return convert


def _area_ranges(specs: list[str]) -> dict[str, tuple[float, float]]:
    ranges = {}
    for spec in specs:
        try:
            label, lo, hi = spec.split(":")
            ranges[label] = (float(lo), float(hi))
        except ValueError:
            raise ValueError(f"expected LABEL:LO:HI, e.g. small:0:1024, got {spec!r}") from None
    return ranges


def _ratio(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"the dilation ratio must be a number, got {text!r}") from None


# boundary IoU's erosion depth (coco and lvis)
DILATION_OPTION = Option(
    "dilation_ratio", "--dilation-ratio",
    "--iou-type boundary: the boundary's width as a fraction of the mask's diagonal (default 0.02)",
    convert=_ratio, metavar="R",
)  # fmt: skip


# the batch box formats of COCO's streaming iou types and the containers' (deteval.protocols.streaming.StreamSpec)
STREAM_BOXES = {"xyxy": "xywh", "xywh": "xywh", "cxcywh": "xywh"}
STREAM_OBB = {"xywha": "obb", "poly": "obb"}


class CocoProtocol(Protocol):
    """COCO detection, segmentation and keypoints, as pycocotools 2.0.11 evaluates them."""

    name = "coco"
    title = "coco protocol (pycocotools)"
    iou_types = IOU_TYPES
    preset_name = "coco"
    # optimal LRP (deteval.analysis.lrp), TIDE (deteval.analysis.tide)
    analyses = {"lrp": IOU_TYPES, "tide": ("bbox", "segm")}
    options = (
        Option("iou_thrs", "--iou-thrs", "IoU thresholds (default: .50:.05:.95)", "list",
               _numbers(float, "IoU thresholds"), metavar="T"),
        Option("max_dets", "--max-dets", "max detections per image (default: 1 10 100)", "list",
               _numbers(int, "max dets"), metavar="N"),
        Option("area_ranges", "--area-range",
               "an area range, repeatable (default: all, small, medium, large as COCO defines them)", "repeat",
               _area_ranges, metavar="LABEL:LO:HI"),
        Option("use_cats", "--no-cats", "pool categories (pycocotools' useCats=0)", "switch", value=False),
        Option("kpt_sigmas", "--kpt-sigmas", "keypoint sigmas, one per keypoint (default: COCO's 17)", "list",
               _numbers(float, "keypoint sigmas"), metavar="S"),
        DILATION_OPTION,
        Option("image_sizes", "--image-sizes", 'YOLO label/prediction folders: {"<stem>": [width, height]} JSON '
               "or the images' folder (COCO's boxes and areas are in pixels)", metavar="SIZES"),
        Option("names", "--names", "class names file: one per line, indices in file order", metavar="FILE"),
    )  # fmt: skip

    def make_params(
        self, iou_type: str, compat: bool, preset: Mapping[str, Any] | None, strict: bool, options: dict[str, Any]
    ) -> CocoParams:
        yolo = {k: options.pop(k) for k in ("image_sizes", "names") if k in options}
        params = make_params(iou_type, preset=preset, compat=compat, strict=strict, **options)
        return dataclasses.replace(params, **yolo) if yolo else params

    def load(self, preds: Any, gt: Any, params: CocoParams) -> tuple[Detections, GroundTruth]:
        from deteval.io.yolo import is_yolo_folder

        if is_yolo_folder(gt):  # YOLO folders: evaluated as pycocotools evaluates their COCO conversion
            from deteval.io.yolo import coco_records, read_yolo

            if params.iou_type != "bbox":
                raise InputError(str(gt), None, f"YOLO folders hold boxes: --iou-type bbox, not {params.iou_type}")
            if params.image_sizes is None:
                raise InputError(str(gt), None, "YOLO folders need image_sizes (--image-sizes): COCO's boxes and "
                                 "area ranges are in pixels")  # fmt: skip
            preds, gt = coco_records(read_yolo(preds, gt, params.image_sizes, params.names))
        compile_ahead(IOU_TYPE_TABLE[params.iou_type].kernel_group)  # the evaluation's kernels, by helpers if cold
        loader_type = IOU_TYPE_TABLE[params.iou_type].loader_type  # boundary reads segm's records
        return load_coco_pair(preds, gt, iou_type=loader_type, strict=params.strict)

    def match(self, preds: Detections, gt: GroundTruth, params: CocoParams) -> CocoMatches:
        return match(preds, gt, params)

    def reduce(self, matches: CocoMatches, gt: GroundTruth, params: CocoParams) -> CocoResult:
        result = reduce_matches(matches, gt.categories, params)
        result.replay = replay_of(matches, gt, params)
        return result

    def summarize(self, result: CocoResult, params: CocoParams) -> list[str]:
        return summary_lines(result.stats, params, result.extra_stats)

    def keeping_tables(self, params: CocoParams, matches: bool = False, per_image: bool = False) -> CocoParams:
        return keeping_tables(params, matches, per_image)

    def replay(self, result: EvalResult) -> CocoReplayStats:
        return CocoReplayStats(kept_replay(result))

    # ---- the pycocotools view (deteval.pycocotools): COCOeval's steps on this protocol's parameters and pipeline

    def unchecked_params(self, **fields: Any) -> CocoParams:
        """Parameters taken as given: pycocotools checks none of its ``Params``."""
        return CocoParams(**fields)

    def match_record(self, dets: Detections, gt: GroundTruth, params: CocoParams, no_overlaps: bool = False):
        """The whole record of the matching pipeline (groups, overlaps, states, positives) in ``params``' mode:
        what ``COCOeval.evaluate()`` keeps. ``no_overlaps``: pycocotools computes none (pooled keypoints)."""
        return match_pipeline(
            dets, gt, iou_type=params.iou_type, iou_thrs=params.iou_thrs, area_ranges=params.area_ranges,
            rules=rules_of(params), use_cats=params.use_cats, max_det=params.max_dets[-1],
            kpt_sigmas=params.kpt_sigmas, dilation_ratio=params.dilation_ratio, no_overlaps=no_overlaps,
        )  # fmt: skip

    shown_nan_scores = staticmethod(shown_nan_scores)

    # ---- streaming (deteval.evaluator, deteval.evaluator.dask): one row per detection kept by the max-dets cut

    stream_spec = StreamSpec(formats={"bbox": STREAM_BOXES, "segm": STREAM_BOXES, "obb": STREAM_OBB})

    def stream_params(self, iou_type: str, compat: bool, options: dict[str, Any]) -> CocoParams:
        self.check_iou_type(iou_type)
        return make_params(iou_type, compat=compat, **options)

    def stream_config(self, params: CocoParams) -> tuple:
        return (*stream_config(params), ("use_cats", params.use_cats), ("compat", params.compat))

    def stream_shape(self, params: CocoParams) -> tuple[int, int, int, int]:
        return len(params.area_ranges), len(params.iou_thrs), len(params.area_ranges), 0

    def stream_match(self, preds: Detections, gt: GroundTruth, params: CocoParams, extra: Mapping) -> StreamPart:
        return stream_part(match(preds, gt, params), len(gt.categories))

    def stream_result(self, rows: StreamRows, categories: IdTable, params: CocoParams, extra: Mapping) -> CocoResult:
        return result_from_matches(stream_matches(rows, params.use_cats), categories, params)


def stream_config(params: Any) -> tuple:
    """The parameters COCO-family states must share to merge (COCO's and LVIS')."""
    return (
        ("iou_type", params.iou_type),
        ("iou_thrs", tuple(params.iou_thrs.tolist())),
        ("rec_thrs", tuple(params.rec_thrs.tolist())),
        ("max_dets", params.max_dets),
        ("area_ranges", tuple(zip(params.area_labels, map(tuple, params.area_ranges.tolist())))),
    )


def stream_part(m: CocoMatches, n_cat: int) -> StreamPart:
    """A shard's :class:`CocoMatches` as a streaming part; pooled categories (one row of counts) go on the
    first category's row, which the result sums back (:func:`stream_matches`)."""
    npig, ndet, det_category = m.npig, m.ndet, m.det_category
    if npig.shape[0] != n_cat:  # categories pooled
        npig = np.zeros((n_cat, m.npig.shape[1]), np.int64)
        ndet = np.zeros(n_cat, np.int64)
        if n_cat:
            npig[0], ndet[0] = m.npig[0], m.ndet[0]
        det_category = np.zeros(len(m.det_score), np.int32)
    return StreamPart(
        det_image=np.asarray(m.det_image, np.int32),
        det_category=np.asarray(det_category, np.int32),
        det_rank=np.asarray(m.det_rank, np.int32),
        det_score=np.asarray(m.det_score, np.float64),
        det_state=np.asarray(m.state, np.int8),
        npig=np.asarray(npig, np.int64),
        ndet=np.asarray(ndet, np.int64),
    )


def stream_matches(rows: StreamRows, use_cats: bool = True) -> CocoMatches:
    """The :class:`CocoMatches` of merged streaming rows (categories pooled into one unless ``use_cats``), rows
    in :func:`match`'s order over the whole dataset: by category, image and rank (what accumulation reads does
    not depend on it; the outcomes the analyses read are then those of evaluate())."""
    if use_cats:
        det_cat, npig, ndet = rows.det_category, rows.npig, rows.ndet
    else:
        det_cat = np.zeros(len(rows.det_score), np.int32)
        npig = rows.npig.sum(axis=0, keepdims=True).astype(np.int64).reshape(1, rows.npig.shape[1])
        ndet = np.array([rows.ndet.sum()], np.int64)
    order = _row_order(det_cat, rows.det_image, rows.det_rank)
    return CocoMatches(
        det_category=np.asarray(det_cat, np.int32)[order],
        det_image=rows.det_image[order],
        det_rank=rows.det_rank[order],
        det_score=rows.det_score[order],
        state=rows.det_state[order],
        npig=npig,
        ndet=ndet,
    )


def _row_order(category: np.ndarray, image: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """The rows sorted by (category, image, rank): one stable sort of a combined key where it fits int64."""
    if not len(rank):
        return np.zeros(0, np.int64)
    n_img, n_rank = int(image.max()) + 1, int(rank.max()) + 1
    if (int(category.max()) + 1) * n_img * n_rank < 2**62:
        key = (category.astype(np.int64) * n_img + image) * n_rank + rank
        return np.argsort(key, kind="stable")
    return np.lexsort((rank, image, category))


COCO = CocoProtocol()
