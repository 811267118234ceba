"""The LVIS protocol: federated evaluation as lvis-api 0.5.3 (``LVISEval``) computes it, to the last bit.

LVIS evaluation is COCO's greedy matching and accumulation with these differences (each reproduced):

- results are cut to the 300 highest-scoring per image across all categories, ties in file order
  (``LVISResults``), and no further per image and category;
- ground truth and results with an area outside ``0 < area < inf`` are never evaluated;
- a category is evaluated on an image only if the image has ground truth of it or lists it in
  ``neg_category_ids``; other results are dropped;
- a result of a category in the image's ``not_exhaustive_category_ids`` that matches nothing is ignored;
- ``iscrowd`` is not read (every ground truth is an ordinary one); a truthy ``ignore`` field is honoured;
- the stats: AP over all categories, and APr/APc/APf over the categories of each frequency; AR@300.

Fixed AP (Dave et al. 2021; ``fixed_ap=True``, ``--fixed-ap``) is the ``lvis_challenge_2021`` branch of
lvis-api (@04e89fd) with ``LVISResults(max_dets_per_cat=10000, max_dets_per_im=-1)``: no cut per image,
each category's 10,000 highest-scoring results over the dataset kept (ties in file order); the AR stats
are then named ``AR@10000/cat`` and so on, as that branch names them. Everything else is unchanged
there. Its ``mode="challenge2021"`` also switches to boundary IoU: ``iou_type="boundary"`` with ``--fixed-ap``
(the branch's boundary IoU is boundary-iou-api's, :mod:`deteval.geometry.boundary`, under lvis-api's rules
above: ``iscrowd`` not read, area bounds inclusive).

As in pycocotools, a match to a ground truth with annotation id 0 reads as unmatched (lvis-api records
matches by id). lvis-api picks how results are read (box or mask branch) from the first result left
after its cut, deteval from the first in the file; they differ only for a file that mixes the two.
Results of categories not in the ground truth count in their image's 300, as in lvis-api, and are
then dropped (with a warning; :func:`deteval.io.lvis.load_lvis_pair`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval.errors import InputError
from deteval.io.lvis import FREQUENCIES, LvisGroundTruth, load_lvis_pair
from deteval.protocols import param_checks as checks
from deteval.protocols import presets
from deteval.protocols.base import Option, Protocol
from deteval.protocols.coco import (
    DILATION_OPTION,
    STREAM_BOXES,
    coco_replay_index,
    outcomes_of,
    stream_config,
    stream_matches,
    stream_part,
    tables_of,
)
from deteval.protocols.coco_matching import CocoMatches, MatchRules, match_pipeline, matches_record
from deteval.protocols.coco_params import all_area_index, dilation_ratio_of, keeping_tables
from deteval.protocols.lvis_summary import lvis_stats, per_class_rows, summary_lines
from deteval.protocols.replay import Replay, ReplayRecord, kept_replay, replay_refused
from deteval.protocols.streaming import StreamPart, StreamRows, StreamSpec
from deteval.result import CocoResult, EvalResult
from deteval.types import Detections, GroundTruth, IdTable, sorted_unique, take_rows
from deteval.vocabulary import IOU_TYPES

__all__ = [
    "LVIS", "LvisParams", "LvisProtocol", "LvisReplay", "LvisReplayStats", "make_params", "replay_of",
    "result_from_matches",
]  # fmt: skip

PRESET_KEYS = ("iou_thrs", "rec_thrs", "max_dets", "max_dets_per_cat", "area_ranges", "dilation_ratio")
FIXED_AP = {"max_dets": -1, "max_dets_per_cat": 10000}  # the lvis_challenge_2021 branch's Fixed AP
_NO_CUT = np.iinfo(np.int32).max  # per image and category: none (the cut is per image, at loading)


@dataclass(frozen=True)
class LvisParams:
    """lvis-api's ``Params`` and ``LVISResults``' cuts (``max_dets``; the 2021 branch's ``max_dets_per_cat``)."""

    iou_type: str
    iou_thrs: np.ndarray  # float64 (T,)
    rec_thrs: np.ndarray  # float64 (R,)
    max_dets: int  # results kept per image, across categories (-1: all)
    area_ranges: np.ndarray  # float64 (A, 2), inclusive bounds
    area_labels: tuple[str, ...]
    strict: bool = False
    max_dets_per_cat: int = -1  # results kept per category over the dataset (-1: all)
    keep_matches: bool = False  # the result keeps every detection's match (result.matches; deteval --matches)
    keep_per_image: bool = False  # the result keeps the per-image counts (result.per_image; deteval --per-image)
    dilation_ratio: float | None = None  # boundary only: the erosion depth over the mask's diagonal

    @property
    def max_dets_label(self) -> str:
        """The cut as the AR stats name it (``AR@300``; the 2021 branch's ``AR@10000/cat``, ``AR@300/im,10/cat``)."""
        if self.max_dets_per_cat < 0:
            return str(self.max_dets)
        if self.max_dets < 0:
            return f"{self.max_dets_per_cat}/cat"
        return f"{self.max_dets}/im,{self.max_dets_per_cat}/cat"

    def to_dict(self) -> dict:
        return {
            "iou_type": self.iou_type,
            "iou_thrs": self.iou_thrs.tolist(),
            "max_dets": self.max_dets,
            "max_dets_per_cat": self.max_dets_per_cat,
            "area_ranges": {k: v.tolist() for k, v in zip(self.area_labels, self.area_ranges)},
            **({"dilation_ratio": self.dilation_ratio} if self.dilation_ratio is not None else {}),
        }


def make_params(
    iou_type: str = "bbox",
    *,
    preset: presets.Preset | Mapping[str, Any] | None = None,
    strict: bool = False,
    fixed_ap: bool = False,
    dilation_ratio: float | None = None,
) -> LvisParams:
    """The built-in preset (``configs/lvis.toml``), then a user's ``preset`` (its keys: ``PRESET_KEYS``), then
    ``fixed_ap`` (the cuts of Fixed AP: 10,000 per category, none per image) and ``dilation_ratio`` (boundary)."""
    if iou_type not in LvisProtocol.iou_types:
        raise InputError("iou_type", None, f"the lvis protocol evaluates bbox, segm or boundary, not {iou_type!r}")

    def build(values: dict) -> LvisParams:
        md = checks.cut("max_dets", values["max_dets"])
        per_cat = checks.cut("max_dets_per_cat", values.get("max_dets_per_cat", -1))
        if md >= 0 and per_cat >= 0:  # the 2021 branch's category cut breaks ties in the order its image cut leaves
            checks.fail("max_dets_per_cat", "a cut per category needs max_dets = -1 (no cut per image)")
        labels, ranges = checks.area_ranges("area_ranges", values["area_ranges"], need="all")
        thrs = checks.unit_thresholds("iou_thrs", values["iou_thrs"])
        rec = checks.unit_thresholds("rec_thrs", values["rec_thrs"], "recall thresholds", ascending=True)
        ratio = dilation_ratio_of(iou_type, values.get("dilation_ratio"))
        return LvisParams(
            iou_type, thrs, rec, md, ranges, labels, strict=strict, max_dets_per_cat=per_cat, dilation_ratio=ratio
        )

    given: dict[str, Any] = dict(FIXED_AP) if fixed_ap else {}
    if dilation_ratio is not None:
        given["dilation_ratio"] = dilation_ratio
    return presets.resolve(presets.builtin("lvis")[iou_type], preset, given, PRESET_KEYS, build)


def select(dets: Detections, gt: LvisGroundTruth, params: LvisParams) -> tuple[Detections, GroundTruth, np.ndarray]:
    """The rows lvis-api evaluates (see :mod:`deteval.matching.federated`): the results cut per image and
    filtered by area and the federated lists, the ground truth filtered by area; and a mask of the kept
    results whose category is not exhaustively annotated in their image."""
    from deteval.matching.federated import in_pairs, pair_keys, positive_area, top_per_group

    fed = gt.federated
    n_cat, n_img = len(gt.categories), len(gt.images)
    gt = take_rows(gt, positive_area(gt.area))
    allowed = sorted_unique(np.concatenate([pair_keys(gt.image, gt.category, n_cat), fed.pair_keys("neg", n_cat)]))
    # the cut sees every result; the filters after it are per row, so one mask of the three
    keep = top_per_group(dets.image, dets.score, params.max_dets)
    keep &= top_per_group(dets.category, dets.score, params.max_dets_per_cat)  # one of the two is -1: all
    keep &= positive_area(dets.area)
    keep &= in_pairs(dets.image, dets.category, allowed, n_cat, n_img)
    dets = take_rows(dets, keep)
    return dets, gt, in_pairs(dets.image, dets.category, fed.pair_keys("nel", n_cat), n_cat, n_img)


# lvis-api's reading of COCO's matching: iscrowd not read (every ground truth ordinary), the ignore field
# honoured, and a match to annotation id 0 read as none (matches recorded by id)
RULES = MatchRules(crowd=False, honour_ignore=True, id0_unmatched=True, mask_area=False)


def match(dets: Detections, gt: LvisGroundTruth, params: LvisParams) -> CocoMatches:
    """Select (federated), group, compute IoU and match for every IoU threshold and area range."""
    if gt.box_format != "xywh" or dets.box_format != "xywh":
        raise InputError(dets.source, None, "the lvis protocol needs xywh boxes")
    if not isinstance(gt, LvisGroundTruth) or gt.federated is None:
        raise InputError(gt.source, None, "the lvis protocol needs an LVIS ground truth (deteval.io.lvis.load_lvis_gt)")
    if params.keep_matches and dets.file_row is None:  # the selection drops rows: each keeps its place in the file
        dets = dataclasses.replace(dets, file_row=np.arange(len(dets), dtype=np.int64))
    dets, gt, not_exhaustive = select(dets, gt, params)
    matched = match_pipeline(
        dets, gt, iou_type=params.iou_type, iou_thrs=params.iou_thrs, area_ranges=params.area_ranges, rules=RULES,
        dilation_ratio=params.dilation_ratio, ignored_if_unmatched=not_exhaustive, keep_gt=params.keep_matches,
        iou_area=all_area_index(params.area_labels) if params.keep_matches else None,
    )  # fmt: skip
    record = matches_record(matched, dets, len(gt.categories))  # nan_scores unset: the lvis result never reads it
    if params.keep_matches or params.keep_per_image:
        record = dataclasses.replace(record, tables=tables_of(matched, dets, gt, params, RULES))
    return record


def reduce_matches(matches: CocoMatches, gt: LvisGroundTruth, params: LvisParams) -> CocoResult:
    """Accumulate (COCO's kernel, no per-group cut) into lvis-api's arrays, kept with a max-dets axis of one:
    ``precision[..., 0]`` is ``LVISEval.eval["precision"]``, ``recall[..., 0]`` its ``recall``."""
    return result_from_matches(matches, gt.categories, gt.federated.frequency, params)


def result_from_matches(
    matches: CocoMatches, categories: IdTable, frequency: np.ndarray, params: LvisParams
) -> CocoResult:
    """:func:`reduce_matches` from the category table and each category's frequency (an index into
    ``FREQUENCIES``) alone: what the streaming Evaluator keeps instead of a ground truth."""
    from deteval.accumulation.accumulate import accumulate

    m, freq = matches, frequency
    precision, recall, scores = accumulate(
        m.det_category, m.det_image, m.det_rank, m.det_score, m.state, m.npig, np.array([_NO_CUT]), params.rec_thrs
    )
    md, labels = params.max_dets, params.area_labels
    p4, r3 = precision[..., 0], recall[..., 0]
    per_class = per_class_rows(p4, r3, freq, m.npig, m.ndet, categories, params.iou_thrs, labels, params.max_dets_label)
    match_rows, image_rows = m.tables if m.tables is not None else (None, None)
    return CocoResult(
        match_table=match_rows,
        image_table=image_rows,
        protocol="lvis",
        iou_type=params.iou_type,
        stats=lvis_stats(p4, r3, freq, params.iou_thrs, labels, params.max_dets_label),
        per_class=per_class,
        params=params.to_dict() | {"frequency": {f: int((freq == i).sum()) for i, f in enumerate(FREQUENCIES)}},
        outcomes=outcomes_of(m, categories, params.iou_thrs, labels),
        precision=precision,
        recall=recall,
        scores=scores,
        iou_thrs=params.iou_thrs,
        rec_thrs=params.rec_thrs,
        cat_ids=categories.ids,
        area_labels=np.array(labels),
        max_dets=np.array([md]),
    )


@dataclass(frozen=True)
class LvisReplay(ReplayRecord):
    """What re-accumulating a resample or a slice of the images needs (bootstrap, slices, compare): the
    matches, the evaluated ground truth's image, category and "counts as a positive" flag per area range,
    the image table's file order and each category's frequency. Kept on the result by
    :meth:`LvisProtocol.reduce` when the cuts are per image (a copy of an image keeps its matches); Fixed
    AP's cut per category over the dataset changes with the images drawn, so it keeps none."""

    matches: CocoMatches
    gt_image: np.ndarray  # int32 (G,)
    gt_category: np.ndarray  # int32 (G,)
    gt_counted: np.ndarray  # bool (G, A)
    image_ids: np.ndarray  # (I,), sorted
    file_order: np.ndarray  # int64 (I,)
    frequency: np.ndarray  # int8 (K,)
    params: LvisParams
    max_dets: tuple[int, ...] = (_NO_CUT,)  # the accumulation's cut per (image, category): none


def replay_of(matches: CocoMatches, gt: LvisGroundTruth, params: LvisParams) -> LvisReplay | None:
    """The :class:`LvisReplay` of an evaluation of ``gt`` (None under a cut per category: Fixed AP)."""
    from deteval.matching.federated import positive_area

    if params.max_dets_per_cat >= 0:
        return None
    keep = positive_area(gt.area)  # the ground truth select() evaluates
    area, ignore = gt.area[keep], gt.ignore[keep]
    lo, hi = params.area_ranges[:, 0], params.area_ranges[:, 1]
    counted = ~ignore[:, None] & ~((area[:, None] < lo) | (area[:, None] > hi))  # as positives_per_category
    images = gt.images
    return LvisReplay(
        matches=matches,
        gt_image=gt.image[keep],
        gt_category=gt.category[keep],
        gt_counted=counted,
        image_ids=images.ids,
        file_order=images.file_order(),
        frequency=gt.federated.frequency,
        params=params,
    )


class LvisReplayStats(Replay):
    """LVIS's replay: COCO's re-accumulation without a cut per (image, category), read as lvis-api's results."""

    def build_index(self):
        return coco_replay_index(self.record, self.record.max_dets)

    def replicate(self, index, draw: np.ndarray, by_draw: bool = True) -> list[float]:
        from deteval.accumulation.resample import as_pycocotools, replicate_arrays

        r, p = self.record, self.record.params
        precision, recall = as_pycocotools(*replicate_arrays(index, draw))  # the max-dets axis holds one entry
        stats = lvis_stats(precision[..., 0], recall[..., 0], r.frequency, p.iou_thrs, p.area_labels, p.max_dets_label)
        return list(stats.values())


class LvisProtocol(Protocol):
    """LVIS v0.5/v1 detection and instance segmentation, as lvis-api 0.5.3 evaluates them."""

    name = "lvis"
    title = "lvis protocol (lvis-api)"
    iou_types = ("bbox", "segm", "boundary")  # of deteval.vocabulary.IOU_TYPES
    preset_name = "lvis"
    options = (
        Option("fixed_ap", "--fixed-ap", "Fixed AP (lvis-api's lvis_challenge_2021 branch): 10,000 detections "
               "per category over the dataset instead of 300 per image", "switch"),
        DILATION_OPTION,
    )  # fmt: skip

    def make_params(
        self, iou_type: str, compat: bool, preset: Mapping[str, Any] | None, strict: bool, options: dict[str, Any]
    ) -> LvisParams:
        fixed_ap, ratio = bool(options.get("fixed_ap")), options.get("dilation_ratio")
        return make_params(iou_type, preset=preset, strict=strict, fixed_ap=fixed_ap, dilation_ratio=ratio)

    def load(self, preds: Any, gt: Any, params: LvisParams) -> tuple[Detections, GroundTruth]:
        loader_type = IOU_TYPES[params.iou_type].loader_type  # boundary reads segm's records
        return load_lvis_pair(preds, gt, iou_type=loader_type, strict=params.strict, max_dets=params.max_dets)

    def match(self, preds: Detections, gt: GroundTruth, params: LvisParams) -> CocoMatches:
        return match(preds, gt, params)

    def reduce(self, matches: CocoMatches, gt: GroundTruth, params: LvisParams) -> CocoResult:
        result = reduce_matches(matches, gt, params)
        result.replay = replay_of(matches, gt, params)
        return result

    def summarize(self, result: CocoResult, params: LvisParams) -> list[str]:
        return summary_lines(result.stats, params.iou_thrs, params.max_dets, params.max_dets_per_cat)

    def keeping_tables(self, params: LvisParams, matches: bool = False, per_image: bool = False) -> LvisParams:
        return keeping_tables(params, matches, per_image)

    # ---- streaming (deteval.evaluator, deteval.evaluator.dask): COCO's rows, the federated lists acting in the match

    stream_spec = StreamSpec(formats={"bbox": STREAM_BOXES, "segm": STREAM_BOXES}, federated=True,
                             whole_vocabulary=True)  # fmt: skip

    def stream_params(self, iou_type: str, compat: bool, options: dict[str, Any]) -> LvisParams:
        """lvis-api's parameters; of the Evaluator's options only ``max_dets``, one integer (the per-image cut)."""
        options = dict(options)
        cut = options.pop("max_dets", None)
        if options:
            name = next(iter(options))
            rule = f"{name} is an option of the coco protocol; the lvis protocol's parameters are lvis-api's"
            raise InputError(name, None, rule)
        if isinstance(cut, Sequence) and not isinstance(cut, str) and len(cut) == 1:
            cut = cut[0]
        if cut is not None and (isinstance(cut, bool) or not isinstance(cut, (int, np.integer)) or cut < 1):
            raise InputError("max_dets", None, f"the lvis protocol's max_dets is one positive integer, got {cut!r}")
        return make_params(iou_type, preset=None if cut is None else {"max_dets": int(cut)})

    def stream_config(self, params: LvisParams) -> tuple:
        return stream_config(params)

    def stream_shape(self, params: LvisParams) -> tuple[int, int, int, int]:
        return len(params.area_ranges), len(params.iou_thrs), len(params.area_ranges), 0

    def stream_match(self, preds: Detections, gt: GroundTruth, params: LvisParams, extra: Mapping) -> StreamPart:
        if "federated" not in extra:  # a loaded LVIS ground truth (deteval.evaluator.dask) carries its lists
            return stream_part(match(preds, gt, params), len(gt.categories))
        fields = {f: getattr(gt, f) for f in gt.__dataclass_fields__}
        lvis_gt = LvisGroundTruth(**fields, federated=extra["federated"])
        return stream_part(match(preds, lvis_gt, params), len(gt.categories))

    def stream_result(self, rows: StreamRows, categories: IdTable, params: LvisParams, extra: Mapping) -> CocoResult:
        return result_from_matches(stream_matches(rows), categories, extra["frequency"], params)

    def replay(self, result: EvalResult) -> LvisReplayStats:
        if result.params.get("max_dets_per_cat", -1) >= 0:
            raise replay_refused(result, "Fixed AP's cut per category over the dataset changes with the images drawn")
        return LvisReplayStats(kept_replay(result))


LVIS = LvisProtocol()
