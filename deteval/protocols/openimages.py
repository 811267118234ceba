"""Open Images challenge detection AP: TF Object Detection API's ``OpenImagesChallengeEvaluator``.

The rules, in the reference's terms (``object_detection_evaluation.py``, ``per_image_evaluation.py``,
``oid_challenge_evaluation_utils.py``, ``oid_hierarchical_labels_expansion.py``):

* loading (:mod:`deteval.io.openimages`): the images are those with a box or a label row; boxes and
  labels are expanded along the hierarchy (``OIDHierarchicalLabelsExpansion``) unless ``expand=False``;
  detections with ``XMin >= XMax`` or ``YMin >= YMax`` (``_remove_invalid_boxes``), on other images or of
  labels that are not classes are dropped;
* a class is evaluated on an image when the image has a label row for it (confidence 1 or 0) or a box
  of it (``_evaluatable_labels``); other detections there are ignored
  (``add_single_detected_image_info``);
* per image and class (:mod:`deteval.matching.openimages`, ``_compute_tp_fp_for_single_class``): normal
  boxes by IoU, each detection on its best box only; the rest by intersection over the detection's area
  on group-of boxes, absorbed; each group-of box that absorbed a positive score is one TP of weight
  ``group_of_weight`` at its highest score (``compute_match_ioa``);
* a class's positives are its normal boxes plus ``group_of_weight`` per group-of box
  (``_update_ground_truth_statistics``); AP is the all-point integral (``compute_precision_recall``,
  ``compute_average_precision``), 0 for a class with positives and no detection; classes without
  positives get none; mAP is the mean over the classes with positives (``np.nanmean``).

Tied scores: the reference sorts with numpy's unstable quicksort (``np.argsort(scores)[::-1]``), so
ties have no defined answer; deteval ranks them stably (input order in the matching; in the ranking,
detections before the group-of entries, each in input order).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from deteval.errors import InputError
from deteval.protocols import param_checks as checks
from deteval.protocols import presets
from deteval.protocols.base import Option, Protocol
from deteval.protocols.replay import Replay, ReplayRecord, kept_replay
from deteval.result import EvalResult
from deteval.text import printable
from deteval.types import Detections, GroundTruth, sorted_unique

PRESET_KEYS = ("iou_thr", "group_of_weight", "expand", "labels", "hierarchy", "class_names", "max_dets")
DENSE_KEYS = 1 << 27  # (image, class) pairs up to which match() looks them up in a table, not by a search
NOT_EVALUATED = 4  # a detection of a class not verified on its image: ignored (after the matching's FP..DROPPED)


@dataclass(frozen=True)
class OpenImagesParams:
    """An Open Images evaluation's parameters, checked."""

    iou_thr: float = 0.5
    group_of_weight: float = 1.0
    expand: bool = True
    labels: Any = None  # loading: image-level labels CSV
    hierarchy: Any = None  # loading: the hierarchy JSON
    class_names: Any = None  # loading: class descriptions CSV
    max_dets: int = 10000  # the reference's nms_max_output_boxes, per image and class
    protocol: str = "openimages"
    iou_type: str = "bbox"

    def to_dict(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "iou_threshold": self.iou_thr,
            "iou_test": ">=",
            "group_of_weight": self.group_of_weight,
            "expand": self.expand,
            "max_dets": self.max_dets,
            "integrator": "all_points",
            "reference": "TF Object Detection API OpenImagesChallengeEvaluator",
        }


def _checked(values: Mapping[str, Any]) -> OpenImagesParams:
    thr = checks.number_in("iou_thr", values["iou_thr"], 0.0, 1.0)
    if thr == 0.0:
        checks.fail("iou_thr", "iou_thr must be positive")
    max_dets, expand = checks.count("max_dets", values["max_dets"]), checks.flag("expand", values["expand"])
    return OpenImagesParams(
        iou_thr=thr,
        group_of_weight=checks.number_in("group_of_weight", values["group_of_weight"], 0.0, 1.0),
        expand=expand,
        labels=values.get("labels"),
        hierarchy=values.get("hierarchy"),
        class_names=values.get("class_names"),
        max_dets=max_dets,
    )


@dataclass(frozen=True)
class OpenImagesMatches:
    """Each detection's outcome (``deteval.matching.openimages`` codes, or ``NOT_EVALUATED``) and each ground-truth
    row's highest absorbed score."""

    outcome: np.ndarray  # int8 (D,)
    group_score: np.ndarray  # float64 (N,)
    category: np.ndarray  # int32 (D,)
    score: np.ndarray  # float64 (D,)
    image: np.ndarray | None = None  # int32 (D,): what a replay of the images needs


@dataclass(repr=False)
class OpenImagesResult(EvalResult):
    """AP per class (NaN: no positives) and the positive and detection counts."""

    ARRAYS: ClassVar[tuple[str, ...]] = ("ap", "npos", "ndet")

    ap: np.ndarray | None = None  # float64 (K,)
    npos: np.ndarray | None = None  # float64 (K,): normal boxes + group_of_weight per group-of box
    ndet: np.ndarray | None = None  # int64 (K,): detections evaluated (TP, FP or absorbed)


@dataclass(frozen=True)
class RankedEntries:
    """What the ranking holds: the detections that are a TP or an FP (in row order), then the group-of boxes
    that absorbed a positive score (in ground-truth row order), each a TP of weight ``group_of_weight`` at
    that score."""

    image: np.ndarray | None  # int64 (E,), None where the matches keep no detection images
    category: np.ndarray  # int64 (E,)
    score: np.ndarray  # float64 (E,)
    tp_weight: np.ndarray  # float64 (E,)
    fp: np.ndarray  # bool (E,)
    group: np.ndarray  # bool (E,): a group-of entry


def ranked_entries(m: OpenImagesMatches, gt: GroundTruth, w: float) -> RankedEntries:
    """The :class:`RankedEntries` of an evaluation (``w``: the group-of weight)."""
    from deteval.matching.openimages import FP, TP

    ranked = (m.outcome == TP) | (m.outcome == FP)
    won = gt.group_of & (m.group_score > 0) & (w > 0)  # group-of boxes that absorbed a positive score
    n_won = int(won.sum())
    return RankedEntries(
        image=None if m.image is None else np.concatenate([m.image[ranked], gt.image[won]]).astype(np.int64),
        category=np.concatenate([m.category[ranked], gt.category[won]]).astype(np.int64),
        score=np.concatenate([m.score[ranked], m.group_score[won]]),
        tp_weight=np.concatenate([(m.outcome[ranked] == TP).astype(np.float64), np.full(n_won, w)]),
        fp=np.concatenate([m.outcome[ranked] == FP, np.zeros(n_won, bool)]),
        group=np.concatenate([np.zeros(int(ranked.sum()), bool), np.ones(n_won, bool)]),
    )


def rank_entries(e: RankedEntries, n_cat: int) -> tuple[np.ndarray, np.ndarray]:
    """``(order, offsets)``: by class (stable counting sort), then by descending score (stable): detections
    first on ties, then group-of entries (as rank_by_category's lexsort, in linear passes)."""
    from deteval.matching.sorting import counting_sort, sort_slices_by_score_desc

    order = counting_sort(e.category, None, n_cat)
    offsets = np.zeros(n_cat + 1, np.int64)
    np.cumsum(np.bincount(e.category, minlength=n_cat), out=offsets[1:])
    sort_slices_by_score_desc(order, offsets, np.ascontiguousarray(e.score))
    return order, offsets


@dataclass(frozen=True, eq=False)
class OpenImagesReplay(ReplayRecord):
    """What re-ranking a resample or a slice of the images needs (bootstrap, slices, compare): the ranked
    entries, the ground truth's images, classes and group-of flags, the image table's file order and the
    group-of weight. Kept on the result by :meth:`OpenImagesProtocol.reduce`."""

    entries: RankedEntries
    gt_image: np.ndarray  # int32 (N,)
    gt_category: np.ndarray  # int32 (N,)
    group_of: np.ndarray  # bool (N,)
    image_ids: np.ndarray  # (I,), sorted
    file_order: np.ndarray  # int64 (I,)
    n_cat: int
    group_of_weight: float


def replay_of(entries: RankedEntries, gt: GroundTruth, params: OpenImagesParams) -> OpenImagesReplay | None:
    """The :class:`OpenImagesReplay` of an evaluation of ``gt`` ranking ``entries`` (None where they keep no
    images)."""
    if entries.image is None:
        return None
    return OpenImagesReplay(
        entries=entries,
        gt_image=gt.image,
        gt_category=gt.category,
        group_of=np.asarray(gt.group_of, bool),
        image_ids=gt.images.ids,
        file_order=gt.images.file_order(),
        n_cat=len(gt.categories),
        group_of_weight=params.group_of_weight,
    )


class OpenImagesReplayStats(Replay):
    """Open Images' replay: each class re-ranked over the images drawn, as :meth:`OpenImagesProtocol.reduce`
    ranks the materialised dataset, whose detections (then its ground truth) stand draw after draw, each
    image's rows in their original order; a slice's rows keep their order.

    The ranking's ties break by (detection before group-of entry, row), so a run of equal scores is split in
    its detections and its group-of entries, and :func:`deteval.accumulation.resample_voc.voc_replicate` re-orders each
    part's copies by (draw position, row). Its outcome row holds each entry's kind: 0 FP, 1 TP, 2 group-of.
    """

    def build_index(self):
        from deteval.accumulation.resample_voc import VocReplayIndex

        r, e = self.record, self.record.entries
        if np.isnan(e.score).any():  # the ranking's sort compares NaN inconsistently: no order a subset keeps
            rule = "bootstrap, compare and slices re-rank the matches of openimages results: a NaN score has no rank"
            raise InputError("result", None, rule)
        n, n_images = len(e.score), len(r.image_ids)
        order, offsets = rank_entries(e, r.n_cat)
        # each entry's place among its image's entries, in row order (detections, then group-of boxes)
        by_image = np.argsort(e.image, kind="stable")
        counts = np.bincount(e.image, minlength=n_images) if n else np.zeros(n_images, np.int64)
        key_rank = np.empty(n, np.int64)
        key_rank[by_image] = np.arange(n) - np.repeat(np.cumsum(counts) - counts, counts)
        s, c, g = e.score[order], e.category[order], e.group[order]
        same = (s[1:] == s[:-1]) & (c[1:] == c[:-1]) & (g[1:] == g[:-1])
        starts = np.flatnonzero(np.concatenate([[True], ~same])) if n else np.zeros(0, np.int64)
        ends = np.append(starts[1:], n) if n else starts
        kind = np.where(e.group, 2, np.where(e.fp, 0, 1)).astype(np.int8)
        return VocReplayIndex(
            outcome=np.ascontiguousarray(kind[order][None, :]),
            score=np.ascontiguousarray(s),
            image=np.ascontiguousarray(e.image[order]),
            key_rank=np.ascontiguousarray(key_rank[order]),
            tie_end=np.repeat(ends, ends - starts).astype(np.int64),
            cat_off=offsets,
            pos_image=np.zeros(0, np.int64),  # the positives are counted here, normal and group-of apart
            pos_category=np.zeros(0, np.int64),
            n_images=n_images,
            span=int(counts.max()) if n else 1,
        )

    def replicate(self, index, draw: np.ndarray, by_draw: bool = True) -> list[float]:
        from deteval.accumulation.integrators import all_points_weighted_segments
        from deteval.accumulation.resample_voc import voc_replicate

        r, w = self.record, self.record.group_of_weight
        kind, _, offsets, _ = voc_replicate(index, draw, by_draw)
        kind = kind[0]
        tp_weight = np.where(kind == 1, 1.0, np.where(kind == 2, w, 0.0))
        copies = np.bincount(np.asarray(draw, np.int64), minlength=len(r.image_ids))
        go = r.group_of

        def positives(rows: np.ndarray) -> np.ndarray:
            weights = copies[r.gt_image[rows]]
            return np.bincount(r.gt_category[rows], weights=weights, minlength=r.n_cat).astype(np.int64)

        npos = positives(~go) + w * positives(go)
        ap = all_points_weighted_segments(tp_weight, kind == 0, offsets, npos)
        return [float(np.nanmean(ap)) if (npos > 0).any() else -1.0]


class OpenImagesProtocol(Protocol):
    """Open Images challenge detection AP@0.5 per class and its mean."""

    name = preset_name = "openimages"
    title = "openimages protocol (Open Images challenge: group-of boxes, verified labels, class hierarchy)"
    iou_types = ("bbox",)
    options = (
        Option("labels", "--labels", "image-level labels CSV (ImageID,Source,LabelName,Confidence): the classes "
               "verified on each image", metavar="FILE"),
        Option("hierarchy", "--hierarchy", "class hierarchy JSON (bbox_labels_600_hierarchy.json): the classes, "
               "and the expansion of boxes and labels", metavar="FILE"),
        Option("class_names", "--class-names", "class descriptions CSV (LabelName,DisplayName)", metavar="FILE"),
        Option("expand", "--no-expand", "the ground truth is already expanded along the hierarchy", "switch",
               value=False),
        Option("group_of_weight", "--group-of-weight", "a detected group-of box's weight (default 1.0, the "
               "challenge's; 0: detections in group-of boxes are ignored)", convert=float, metavar="W"),
        Option("iou_thr", "--iou-thr", "IoU (and IoA) threshold, >= (default 0.5)", convert=float, metavar="T"),
    )  # fmt: skip

    def make_params(
        self, iou_type: str, compat: bool, preset: Mapping[str, Any] | None, strict: bool, options: dict[str, Any]
    ) -> OpenImagesParams:
        return presets.resolve(presets.builtin(self.preset_name), preset, options, PRESET_KEYS, _checked)

    def load(self, preds: Any, gt: Any, params: OpenImagesParams) -> tuple[Detections, GroundTruth]:
        from deteval.io.openimages import load_openimages

        return load_openimages(preds, gt, params.labels, params.hierarchy, params.class_names, params.expand)

    def match(self, preds: Detections, gt: GroundTruth, params: OpenImagesParams) -> OpenImagesMatches:
        from deteval.io.openimages import OpenImagesGroundTruth
        from deteval.matching.groups import group_by_image_category
        from deteval.matching.openimages import match_openimages
        from deteval.types import take_rows

        if not isinstance(gt, OpenImagesGroundTruth):
            raise InputError("gt", None, "the openimages protocol needs its own ground truth (load_openimages)")
        dt, n_cat = preds, len(gt.categories)
        if len(dt) and (dt.image.max() >= len(gt.images) or dt.category.max() >= len(gt.categories)):
            raise InputError(dt.source, None, "detections index images or categories outside the ground truth's tables")
        # the (image, class) pairs evaluated: a box or a label row of the class on the image
        keys = np.concatenate([gt.image.astype(np.int64) * n_cat + gt.category, gt.verified])
        dkey = dt.image.astype(np.int64) * n_cat + dt.category
        if len(gt.images) * n_cat <= DENSE_KEYS:  # a table of every (image, class): one pass
            table = np.zeros(len(gt.images) * n_cat, bool)
            table[keys] = True
            evaluated = np.flatnonzero(table[dkey])
        else:
            keys = sorted_unique(keys)
            pos = np.minimum(np.searchsorted(keys, dkey), max(len(keys) - 1, 0))
            evaluated = np.flatnonzero(keys[pos] == dkey) if len(keys) else np.zeros(0, np.int64)
        sub = take_rows(dt, evaluated)
        groups = group_by_image_category(gt, sub, use_cats=True, max_det=None)
        out, group_score = match_openimages(
            gt.boxes, gt.group_of, sub.boxes, sub.score, groups, params.iou_thr, params.max_dets
        )
        outcome = np.full(len(dt), NOT_EVALUATED, np.int8)
        outcome[evaluated] = out
        return OpenImagesMatches(outcome, group_score, dt.category, dt.score, dt.image)

    def reduce(self, matches: OpenImagesMatches, gt: GroundTruth, params: OpenImagesParams) -> OpenImagesResult:
        from deteval.accumulation.integrators import all_points_weighted_segments
        from deteval.matching.openimages import ABSORBED, FP, TP

        m, w, n_cat = matches, params.group_of_weight, len(gt.categories)
        go = gt.group_of
        e = ranked_entries(m, gt, w)
        order, offsets = rank_entries(e, n_cat)
        n_normal = np.bincount(gt.category[~go], minlength=n_cat)
        n_group = np.bincount(gt.category[go], minlength=n_cat)
        npos = n_normal + w * n_group
        ap = all_points_weighted_segments(e.tp_weight[order], e.fp[order], offsets, npos)
        evaluated = (m.outcome == TP) | (m.outcome == FP) | (m.outcome == ABSORBED)
        ndet = np.bincount(m.category[evaluated], minlength=n_cat).astype(np.int64)
        scored = npos > 0
        m_ap = float(np.nanmean(ap)) if scored.any() else -1.0
        names = getattr(gt, "display_names", None) or tuple(gt.categories.name_of(k) for k in range(n_cat))
        rows = [
            {
                "category_id": gt.categories.id_of(k),
                "name": gt.categories.name_of(k),
                "display_name": names[k],
                "AP": float(ap[k]) if scored[k] else None,
                "num_gt": int(n_normal[k] + n_group[k]),
                "num_group_of": int(n_group[k]),
                "num_det": int(ndet[k]),
            }
            for k in range(n_cat)
        ]
        return OpenImagesResult(
            protocol=params.protocol,
            iou_type=params.iou_type,
            stats={"mAP": m_ap},
            per_class=rows,
            params=params.to_dict(),
            ap=ap,
            npos=npos.astype(np.float64),
            ndet=ndet,
            replay=replay_of(e, gt, params),
        )

    def summarize(self, result: OpenImagesResult, params: OpenImagesParams) -> list[str]:
        scored = int(np.sum(result.npos > 0))
        head = (
            f"openimages: AP = all_points; IoU/IoA >= {params.iou_thr:g}; group-of weight {params.group_of_weight:g}; "
            f"hierarchy expansion {'on' if params.expand and params.hierarchy is not None else 'off'}"
        )
        lines = [head, f"classes with positives: {scored} of {len(result.per_class)}"]
        lines.append(f"mAP = {result.stats['mAP']:.4f}" if scored else "mAP = - (no class has positives)")
        return [printable(line) for line in lines]

    def replay(self, result: EvalResult) -> OpenImagesReplayStats:
        return OpenImagesReplayStats(kept_replay(result))


OPENIMAGES = OpenImagesProtocol()
