"""The CrowdPose protocol: keypoints as xtcocotools 1.14.3 evaluates them (``iouType="keypoints_crowd"``).

The reference call is ``COCOeval(gt, dt, "keypoints_crowd", sigmas, use_area=False)`` with CrowdPose's
14 sigmas (``configs/crowdpose.toml``). It is COCO's keypoint evaluation (deteval's OKS, matching and
accumulation kernels) with these differences, each reproduced here:

- OKS and the area ranges read each ground truth's area as ``bbox[2] * bbox[3] * 0.53``, not its
  ``area`` (``use_area=False``); max dets 20; area ranges all, medium, large.
- A ground truth with ``num_keypoints == 0`` or ``iscrowd`` is ignored; an ``ignore`` field is
  overwritten, as in pycocotools.
- A detection whose keypoint scores (every third value) are all <= 0 is dropped before anything else,
  so it takes no place among the 20 kept per image.
- Annotation id 0 is an ordinary id (xtcocotools marks "no match" with -1); pycocotools, faster-coco-eval
  and deteval's ``coco`` protocol count a match to id 0 as a false positive.
- The stats: AP, AP50, AP75, AR, AR50, AR75 (area all, max dets 20, the mean of the valid entries), then
  AP_easy, AP_medium, AP_hard: each image's ``crowdIndex`` puts it in easy (< 0.2), medium (< 0.8) or
  hard; each bucket is evaluated alone and its AP is the mean of *all* of its precision entries at area
  index 0 (-1 for a category without ground truth included), rounded by numpy's ``round(x, 4)``.

``crowdIndex`` is read from the ground truth's image records (xtcocotools re-reads the file); an image
record without a numeric ``crowdIndex`` is an :class:`~deteval.errors.InputError` naming the file and
the record. The protocol has one mode, xtcocotools': ``compat=False`` is an error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval.errors import InputError
from deteval.io.coco import load_coco_pair
from deteval.io.coco_columns import area_unread
from deteval.io.json_source import is_path, keep_reads, read_json
from deteval.numeric import mean_valid
from deteval.protocols.base import Protocol
from deteval.protocols.coco import (
    STREAM_BOXES,
    CocoReplay,
    coco_replay_index,
    make_params,
    match_with,
    reduce_matches,
    replay_of,
    stream_config,
    stream_matches,
    stream_part,
)
from deteval.protocols.coco_matching import CocoMatches, MatchRules, ignore_flags
from deteval.protocols.coco_params import CocoParams
from deteval.protocols.replay import Replay, kept_replay
from deteval.protocols.streaming import StreamPart, StreamRows, StreamSpec
from deteval.result import CocoResult, EvalResult
from deteval.types import Detections, GroundTruth, IdTable

__all__ = [
    "CROWDPOSE", "CrowdPoseGroundTruth", "CrowdPoseProtocol", "CrowdPoseReplay", "CrowdPoseReplayStats",
    "crowd_buckets", "crowd_replay_of",
]  # fmt: skip

BUCKETS = ("easy", "medium", "hard")
BUCKET_BOUNDS = (0.2, 0.8)  # easy: crowdIndex < 0.2, medium: < 0.8, hard: the rest (xtcocotools' get_type_result)
GT_AREA_FACTOR = 0.53  # use_area=False: a ground truth's area is its box's w * h * 0.53


@dataclass(frozen=True)
class CrowdPoseGroundTruth(GroundTruth):
    """Ground truth with each image's CrowdPose bucket: ``bucket[i, b]`` is whether image ``i`` is in
    bucket ``b`` (easy, medium, hard); an image listed twice may be in two, as xtcocotools splits records."""

    bucket: np.ndarray | None = None  # bool (I, 3)


def crowd_buckets(data: Any, name: str, gt: GroundTruth) -> np.ndarray:
    """``bool (I, 3)``: the buckets of ``gt``'s images from the image records of ``data`` (the GT JSON)."""
    records = data.get("images") if isinstance(data, Mapping) else None
    if not isinstance(records, list):
        raise InputError(name, None, "a CrowdPose ground truth needs an 'images' list with each image's crowdIndex")
    out = np.zeros((len(gt.images), 3), bool)
    ids, index = [], []
    for i, rec in enumerate(records):
        ci = rec.get("crowdIndex") if isinstance(rec, Mapping) else None
        if isinstance(ci, bool) or not isinstance(ci, (int, float)) or ci != ci:  # ci != ci: NaN, which
            # xtcocotools would put among the hard images (both its comparisons fail): a damaged record
            where = f"images[{i}]" + (f" (id={rec.get('id')!r})" if isinstance(rec, Mapping) else "")
            got = "no crowdIndex" if ci is None else f"crowdIndex {ci!r}"
            raise InputError(name, where, f"a CrowdPose image needs a numeric crowdIndex (easy/medium/hard), got {got}")
        ids.append(rec.get("id"))
        # xtcocotools' comparisons, in its order
        index.append(0 if ci < BUCKET_BOUNDS[0] else 1 if ci < BUCKET_BOUNDS[1] else 2)
    pos, found = gt.images.lookup(np.array(ids, dtype=gt.images.ids.dtype if len(ids) else np.int64))
    out[pos[found], np.array(index, np.int64)[found]] = True
    return out


def _gt_area(gt: GroundTruth) -> np.ndarray:
    """xtcocotools' area with ``use_area=False``: ``bbox[2] * bbox[3] * 0.53``, left to right."""
    with np.errstate(over="ignore"):
        return gt.boxes[:, 2] * gt.boxes[:, 3] * GT_AREA_FACTOR


# xtcocotools' reading of COCO's matching: iscrowd read, the ignore field overwritten (ignore = iscrowd or
# no labelled keypoint), and annotation id 0 an ordinary id (it marks "no match" with -1)
RULES = MatchRules(crowd=True, honour_ignore=False, id0_unmatched=False, mask_area=False)


def _gt_ignore(gt: GroundTruth) -> np.ndarray:
    return ignore_flags(gt, "keypoints", RULES)


def _subset(m: CocoMatches, gt: GroundTruth, params: CocoParams, images: np.ndarray) -> CocoMatches:
    """The matches of the images where ``images`` is True (a bucket), with their ground truth counted anew."""
    from deteval.accumulation.accumulate import positives_per_category

    keep = images[m.det_image]
    g = images[gt.image]
    n_cat = len(m.npig)
    return CocoMatches(
        det_category=m.det_category[keep],
        det_image=m.det_image[keep],
        det_rank=m.det_rank[keep],
        det_score=m.det_score[keep],
        state=m.state[keep],
        npig=positives_per_category(gt.category[g], _gt_area(gt)[g], _gt_ignore(gt)[g], params.area_ranges, n_cat),
        ndet=m.ndet,
        nan_scores=m.nan_scores,
    )


def crowd_stats(precision: np.ndarray, recall: np.ndarray, params: CocoParams) -> dict[str, float]:
    """AP, AP50, AP75, AR, AR50, AR75 as xtcocotools' ``_summarize`` reads them (area all, max dets 20)."""
    a = [i for i, lbl in enumerate(params.area_labels) if lbl == "all"]
    md = [i for i, m in enumerate(params.max_dets) if m == 20]
    out = {}
    for kind, arr in (("AP", precision), ("AR", recall)):
        for suffix, iou in (("", None), ("50", 0.5), ("75", 0.75)):
            s = arr if iou is None else arr[np.where(iou == params.iou_thrs)[0]]
            s = s[:, :, :, a, md] if arr.ndim == 5 else s[:, :, a, md]
            out[kind + suffix] = mean_valid(s)
    return out


def bucket_ap(precision: np.ndarray) -> float:
    """A bucket's AP as xtcocotools' ``get_type_result``: ``round(np.mean(precision[:, :, :, 0, :]), 4)``."""
    return float(round(np.mean(np.ascontiguousarray(precision)[:, :, :, 0, :]), 4))


@dataclass(frozen=True, eq=False)
class CrowdPoseReplay(CocoReplay):
    """COCO's replay record (the ground truth's area and ignore flags as xtcocotools reads them) with each
    image's buckets: a copy of an image keeps its crowdIndex."""

    bucket: np.ndarray | None = None  # bool (I, 3)


def crowd_replay_of(matches: CocoMatches, gt: GroundTruth, params: CocoParams) -> CrowdPoseReplay:
    """The :class:`CrowdPoseReplay` of an evaluation of ``gt`` (loaded by :meth:`CrowdPoseProtocol.load`)."""
    # coco's record counts a positive by gt_ignored (compat, keypoints: crowd or no keypoints, as _gt_ignore)
    # and the area ranges, here on xtcocotools' area
    base = replay_of(matches, dataclasses.replace(gt, area=_gt_area(gt)), params)
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(CocoReplay)}
    return CrowdPoseReplay(**fields, bucket=getattr(gt, "bucket", None))


class CrowdPoseReplayStats(Replay):
    """CrowdPose's replay: COCO's re-accumulation (:mod:`deteval.accumulation.resample`) of the images drawn for the six
    stats, and of the drawn images of each bucket, in draw order, for its AP (as :meth:`CrowdPoseProtocol.reduce`
    evaluates each bucket alone)."""

    def build_index(self):
        params = self.record.params
        first_area = np.zeros((len(params.area_labels), len(params.max_dets)), np.bool_)
        first_area[0] = True  # a bucket's AP reads area index 0 only
        return coco_replay_index(self.record), first_area

    def replicate(self, index, draw: np.ndarray, by_draw: bool = True) -> list[float]:
        from deteval.accumulation.resample import as_pycocotools, replicate_arrays

        ranked, first_area = index
        params, bucket = self.record.params, self.record.bucket
        stats = crowd_stats(*as_pycocotools(*replicate_arrays(ranked, draw)), params)
        for b, label in enumerate(BUCKETS):
            precision, _ = as_pycocotools(*replicate_arrays(ranked, draw[bucket[draw, b]], first_area))
            stats[f"AP_{label}"] = bucket_ap(precision)
        return list(stats.values())


def _line(kind: str, iou: str, label: str, value: float, typed: bool = False) -> str:
    title, short = ("Average Precision", "(AP)") if kind == "AP" else ("Average Recall", "(AR)")
    if typed:  # the bucket lines: "type=" and a value without a sign column
        return f" {title:<18} {short} @[ IoU={iou:<9} | type={label:>6s} | maxDets={20:>3d} ] = {value:0.3f}"
    return f" {title:<18} {short} @[ IoU={iou:<9} | area={label:>6s} | maxDets={20:>3d} ] = {value: 0.3f}"


class CrowdPoseProtocol(Protocol):
    """CrowdPose keypoints, as xtcocotools 1.14.3 evaluates them (``keypoints_crowd``, ``use_area=False``)."""

    name = "crowdpose"
    title = "crowdpose protocol (xtcocotools keypoints_crowd)"
    iou_types = ("keypoints",)
    preset_name = "crowdpose"
    options = ()

    def make_params(
        self, iou_type: str, compat: bool, preset: Mapping[str, Any] | None, strict: bool, options: dict[str, Any]
    ) -> CocoParams:
        if not compat:
            raise InputError("compat", None, "the crowdpose protocol has one mode, xtcocotools': no fixed mode")
        return make_params(iou_type, preset=preset, compat=True, strict=strict, builtin="crowdpose", **options)

    def load(self, preds: Any, gt: Any, params: CocoParams) -> tuple[Detections, GroundTruth]:
        if isinstance(gt, CrowdPoseGroundTruth):
            with area_unread():
                dets, loaded = load_coco_pair(preds, gt, iou_type="keypoints", strict=params.strict)
            return dets, loaded
        if isinstance(gt, GroundTruth):
            rule = "the crowdpose protocol reads each image's crowdIndex: give the ground truth as a file or a dict"
            raise InputError(gt.source, None, rule)
        with keep_reads() as read, area_unread():  # its area is w*h*0.53 (_gt_area), never the file's
            dets, loaded = load_coco_pair(preds, gt, iou_type="keypoints", strict=params.strict)
        # the image records' crowdIndex, from the bytes the loader read (xtcocotools re-reads the file)
        data, name = read_json(gt, "gt", read.get(str(gt)) if is_path(gt) else None)
        fields = {f.name: getattr(loaded, f.name) for f in dataclasses.fields(GroundTruth)}
        return dets, CrowdPoseGroundTruth(**fields, bucket=crowd_buckets(data, name, loaded))

    def match(self, preds: Detections, gt: GroundTruth, params: CocoParams) -> CocoMatches:
        from deteval.types import take_rows

        # a detection whose keypoint scores are all <= 0 is dropped before the max-dets cut
        kept = take_rows(preds, (preds.keypoints[:, 2::3] > 0).any(axis=1)) if len(preds) else preds
        # xtcocotools' ground truth area (w*h*0.53) is what OKS and the area ranges read
        return match_with(kept, dataclasses.replace(gt, area=_gt_area(gt)), params, RULES)

    def reduce(self, matches: CocoMatches, gt: GroundTruth, params: CocoParams) -> CocoResult:
        bucket = getattr(gt, "bucket", None)
        if bucket is None:
            raise InputError(gt.source, None, "the crowdpose protocol needs the ground truth loaded by its load()")
        subsets = [_subset(matches, gt, params, bucket[:, b]) for b in range(len(BUCKETS))]
        result = _result(matches, subsets, gt.categories, params)
        return dataclasses.replace(result, replay=crowd_replay_of(matches, gt, params))

    # ---- streaming (deteval.evaluator, deteval.evaluator.dask): COCO's keypoint rows; each image's bucket, and the
    # positives of each bucket per category, kept beside them. A target carries its image's ``crowd_index``.

    stream_spec = StreamSpec(formats={"keypoints": STREAM_BOXES}, image_keys=("crowd_index",))

    def stream_params(self, iou_type: str, compat: bool, options: dict[str, Any]) -> CocoParams:
        if options:
            rule = f"not an option of protocol {self.name!r}, which has xtcocotools' parameters only"
            raise InputError(next(iter(options)), None, rule)
        return self.params(iou_type, compat=compat)

    def stream_config(self, params: CocoParams) -> tuple:
        return stream_config(params)

    def stream_shape(self, params: CocoParams) -> tuple[int, int, int, int]:
        n_area = len(params.area_ranges)
        return n_area, len(params.iou_thrs), n_area * (1 + len(BUCKETS)), len(BUCKETS)

    def stream_match(self, preds: Detections, gt: GroundTruth, params: CocoParams, extra: Mapping) -> StreamPart:
        from deteval.accumulation.accumulate import positives_per_category

        bucket = getattr(gt, "bucket", None)  # loaded (deteval.evaluator.dask), else from the targets' crowd_index
        if bucket is None:
            index = np.asarray(extra["crowd_index"], np.float64)
            bucket = np.zeros((len(index), len(BUCKETS)), bool)
            bucket[np.arange(len(index)), _bucket_index(index)] = True
        part = stream_part(self.match(preds, gt, params), len(gt.categories))
        n_cat = len(gt.categories)
        counts = [part.npig]
        for b in range(len(BUCKETS)):  # as _subset counts them
            g = bucket[:, b][gt.image]
            counts.append(
                positives_per_category(gt.category[g], _gt_area(gt)[g], _gt_ignore(gt)[g], params.area_ranges, n_cat)
            )
        npig = np.concatenate(counts, axis=1).astype(np.int64)
        return dataclasses.replace(part, npig=npig, image_values=bucket.astype(np.float64))

    def stream_result(self, rows: StreamRows, categories: IdTable, params: CocoParams, extra: Mapping) -> CocoResult:
        n_area = len(params.area_ranges)
        all_rows = dataclasses.replace(rows, npig=rows.npig[:, :n_area])
        m = stream_matches(all_rows)
        values = rows.image_values if rows.image_values is not None else np.zeros((0, len(BUCKETS)))
        subsets = []
        for b in range(len(BUCKETS)):
            keep = values[:, b][m.det_image] > 0
            subsets.append(
                dataclasses.replace(
                    m,
                    det_category=m.det_category[keep],
                    det_image=m.det_image[keep],
                    det_rank=m.det_rank[keep],
                    det_score=m.det_score[keep],
                    state=m.state[keep],
                    npig=rows.npig[:, n_area * (b + 1) : n_area * (b + 2)],
                )
            )
        result = _result(m, subsets, categories, params)
        result.summary_lines = self.summarize(result, params)
        return result

    def summarize(self, result: CocoResult, params: CocoParams) -> list[str]:
        iou_all = f"{params.iou_thrs[0]:0.2f}:{params.iou_thrs[-1]:0.2f}"
        s = result.stats
        lines = [
            _line(kind, iou_all if suffix == "" else f"{int(suffix) / 100:0.2f}", "all", s[kind + suffix])
            for kind in ("AP", "AR")
            for suffix in ("", "50", "75")
        ]
        lines += [_line("AP", iou_all, label, s[f"AP_{label}"], typed=True) for label in BUCKETS]
        return lines

    def replay(self, result: EvalResult) -> CrowdPoseReplayStats:
        return CrowdPoseReplayStats(kept_replay(result))


def _bucket_index(crowd_index: np.ndarray) -> np.ndarray:
    """Each image's bucket (0 easy, 1 medium, 2 hard) from its crowdIndex, as :func:`crowd_buckets` reads it."""
    return np.where(crowd_index < BUCKET_BOUNDS[0], 0, np.where(crowd_index < BUCKET_BOUNDS[1], 1, 2))


def _result(matches: CocoMatches, subsets: list[CocoMatches], categories: Any, params: CocoParams) -> CocoResult:
    """The result of the matches and of each bucket's (``subsets``, in BUCKETS' order)."""
    from deteval.accumulation.accumulate import accumulate

    result = reduce_matches(matches, categories, params)
    stats = crowd_stats(result.precision, result.recall, params)
    for m, label in zip(subsets, BUCKETS):
        precision, _, _ = accumulate(
            m.det_category, m.det_image, m.det_rank, m.det_score, m.state, m.npig,
            np.array(params.max_dets), params.rec_thrs,
        )  # fmt: skip
        stats[f"AP_{label}"] = bucket_ap(precision)
    return dataclasses.replace(result, protocol="crowdpose", stats=stats, extra_stats={})


CROWDPOSE = CrowdPoseProtocol()
