"""WIDER FACE validation AP on the easy, medium and hard subsets, as the widely used Python port of the
official evaluation computes it (wondervictor/WiderFace-Evaluation ``evaluation.py`` with its Cython
``box_overlaps``). Inputs: :mod:`deteval.io.widerface`; matching and counts: :mod:`deteval.matching.widerface`.

* Scores are normalised once over every prediction file read (also files of images the ground truth lacks):
  ``(s - min) / (max - min)`` with the running max starting at 0 and the min at 1 (``score_norm="port"``).
  ``score_norm="matlab"`` starts them as the official MATLAB tool's ``norm_score.m`` does, at
  ``realmin('single')`` and ``realmax('single')``: the two differ only when every score is above 1 or every
  score below 0. That is the one MATLAB difference offered; the MATLAB tool also reads files by the ground
  truth's file names, reads the count line and skips missing files, which this protocol does not reproduce.
* 1,000 thresholds ``1 - (t + 1) / 1000``; per image, each threshold takes the predictions up to the last whose
  normalised score is ``>=`` it, in file order. Images without faces or without predictions add nothing, but
  their keep lists still count as faces.
* Per subset, precision ``found / proposals`` and recall ``found / faces`` at each threshold, and AP with VOC's
  all-point envelope (``voc_ap``), as numpy computes it (a threshold no prediction reaches gives a NaN
  precision, which the envelope carries only over recall 0).

``stats`` = ``{"easy", "medium", "hard"}`` as fractions. Bootstrap, compare and slices re-normalise each list
of images' scores over its own images' prediction files plus the files of images the ground truth lacks (they
belong to the prediction folder, not to an image), as evaluating that materialised dataset does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import numpy as np

from deteval.errors import InputError, warn
from deteval.io.widerface import SUBSETS
from deteval.protocols import presets
from deteval.protocols.base import Option, Protocol
from deteval.protocols.replay import Replay, ReplayRecord, kept_replay
from deteval.result import EvalResult

PRESET_KEYS = ("iou_thr", "score_norm")
THRESH_NUM = 1000
THRESHOLDS = np.array([1 - (t + 1) / THRESH_NUM for t in range(THRESH_NUM)])  # the script's Python floats
# where the running max and min of the scores start
NORM_STARTS = {"port": (0.0, 1.0), "matlab": (float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max))}


@dataclass(frozen=True)
class WiderFaceParams:
    protocol: str = "widerface"
    iou_type: str = "bbox"
    iou_thr: float = 0.5
    score_norm: str = "port"
    strict: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("strict")
        return {**d, "thresholds": THRESH_NUM, "subsets": list(SUBSETS)}


def _checked(values: Mapping[str, Any], strict: bool) -> WiderFaceParams:
    thr, norm = values.get("iou_thr"), values.get("score_norm")
    if isinstance(thr, bool) or not isinstance(thr, (int, float)) or not 0 < thr <= 1:
        raise InputError("iou_thr", None, f"must be a number in (0, 1], got {thr!r}")
    if norm not in NORM_STARTS:
        raise InputError("score_norm", None, f"choose one of {', '.join(NORM_STARTS)}, not {norm!r}")
    return WiderFaceParams(iou_thr=float(thr), score_norm=norm, strict=bool(strict))


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"not a number: {text!r}") from None


@dataclass(eq=False)
class WiderFaceResult(EvalResult):
    """AP per subset (``stats``), a row per subset (``per_class``) and the 1,000-threshold curves."""

    ARRAYS: ClassVar[tuple[str, ...]] = ("thresholds", "precision", "recall", "proposals", "found")

    thresholds: np.ndarray = field(default=None, repr=False)  # float64 (T,), falling
    precision: np.ndarray = field(default=None, repr=False)  # float64 (S, T); NaN where nothing is proposed
    recall: np.ndarray = field(default=None, repr=False)  # float64 (S, T)
    proposals: np.ndarray = field(default=None, repr=False)  # int64 (S, T)
    found: np.ndarray = field(default=None, repr=False)  # int64 (S, T)

    def threshold_curves(self) -> dict[str, Any]:
        """The precision-recall curve of each subset at the 1,000 thresholds (what ``--curves`` writes and
        ``--plot`` draws): ``protocol``, ``thresholds`` and per subset ``AP``, ``precision``, ``recall``."""
        return {
            "protocol": self.protocol,
            "thresholds": self.thresholds,
            "curves": {
                s: {"AP": self.stats[s], "precision": self.precision[k], "recall": self.recall[k]}
                for k, s in enumerate(SUBSETS)
            },
        }


def normalise(scores: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``(s - min) / (max - min)`` elementwise, as the script computes it."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (scores - lo) / (hi - lo)


def score_range(mins: np.ndarray, maxs: np.ndarray, start: tuple[float, float]) -> tuple[float, float]:
    """The running min and max over per-file minima and maxima from ``start`` (NaN-free inputs: any order)."""
    hi = max(float(maxs.max()), start[0]) if len(maxs) else start[0]
    lo = min(float(mins.min()), start[1]) if len(mins) else start[1]
    return lo, hi


def voc_ap_curve(found: np.ndarray, proposals: np.ndarray, faces: int) -> tuple[float, np.ndarray, np.ndarray]:
    """``(ap, precision, recall)`` of one subset's summed counts, with the script's numpy operations."""
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = found.astype(np.float64) / proposals.astype(np.float64)
        recall = found.astype(np.float64) / np.float64(faces)
    mrec = np.concatenate(([0.0], recall, [1.0]))
    mpre = np.concatenate(([0.0], precision, [0.0]))
    mpre = np.maximum.accumulate(mpre[::-1])[::-1]  # the right-to-left envelope; NaN spreads left as in its loop
    step = np.where(mrec[1:] != mrec[:-1])[0]
    ap = float(np.sum((mrec[step + 1] - mrec[step]) * mpre[step + 1]))
    return ap, precision, recall


@dataclass(frozen=True, eq=False)
class WiderReplay(ReplayRecord):
    """Matches a list of images is re-counted from: raw scores grouped by image, each subset's found and
    proposal per prediction, the images scored (faces and predictions), the keep-list lengths, per image
    score minima and maxima, and those of the files outside the ground truth."""

    score: np.ndarray  # float64 (P,)
    offsets: np.ndarray  # int64 (I + 1,), ground-truth order
    found: np.ndarray  # int64 (S, P)
    proposal: np.ndarray  # uint8 (S, P)
    scored: np.ndarray  # bool (I,)
    keep_counts: np.ndarray  # int64 (S, I)
    image_min: np.ndarray  # float64 (I,), NaN without predictions
    image_max: np.ndarray
    outside: tuple[float, float] | None  # (min, max) of the files outside the ground truth
    start: tuple[float, float]
    place: np.ndarray  # int64 (I,): each dense (sorted-id) index's place in the ground truth
    image_ids: np.ndarray  # str (I,): "event/image", sorted
    file_order: np.ndarray  # int64 (I,): the dense index of each image in the ground truth's order


def _counts(rec: WiderReplay, images: np.ndarray) -> tuple[list[float], list]:
    """AP per subset of the ground-truth images ``images`` (places, repeats allowed)."""
    from deteval.matching.widerface import threshold_counts

    has = ~np.isnan(rec.image_min[images])
    mins = rec.image_min[images][has]
    maxs = rec.image_max[images][has]
    if rec.outside is not None:
        mins, maxs = np.append(mins, rec.outside[0]), np.append(maxs, rec.outside[1])
    lo, hi = score_range(mins, maxs, rec.start)
    score = normalise(rec.score, lo, hi)
    scored = images[rec.scored[images]]
    counts = threshold_counts(score, rec.offsets, scored, THRESHOLDS, rec.found, rec.proposal)
    faces = rec.keep_counts[:, images].sum(axis=1)
    out = [voc_ap_curve(counts[s, :, 1], counts[s, :, 0], int(faces[s])) for s in range(len(SUBSETS))]
    return [o[0] for o in out], [(o, counts[s], int(faces[s]), (lo, hi)) for s, o in enumerate(out)]


class WiderReplayStats(Replay):
    """AP per subset of a list of images, as evaluating that materialised dataset gives it (sums: the
    images' order does not matter)."""

    def build_index(self) -> WiderReplay:
        return self.record

    def replicate(self, index: WiderReplay, draw: np.ndarray, by_draw: bool = True) -> list[float]:
        return _counts(index, index.place[np.asarray(draw, np.int64)])[0]


class WiderFaceProtocol(Protocol):
    """WIDER FACE validation AP (easy / medium / hard), as ``evaluation.py`` of WiderFace-Evaluation."""

    name = "widerface"
    title = "widerface protocol (WIDER FACE val AP on easy, medium, hard, as WiderFace-Evaluation computes it)"
    iou_types = ("bbox",)
    options = (
        Option(
            "iou_thr",
            "--wider-iou",
            "a match needs IoU (+1 pixel widths) >= this (default 0.5)",
            convert=_float,
            metavar="IOU",
        ),
        Option(
            "score_norm",
            "--score-norm",
            "where the score normalisation's running max/min start: port "
            "(0 and 1, default) or matlab (the official MATLAB tool: realmin/realmax('single'))",
            choices=tuple(NORM_STARTS),
        ),
    )
    preset_name = "widerface"

    def make_params(
        self, iou_type: str, compat: bool, preset: Mapping[str, Any] | None, strict: bool, options: dict[str, Any]
    ) -> WiderFaceParams:
        return presets.resolve(
            presets.builtin(self.preset_name), preset, options, PRESET_KEYS, lambda v: _checked(v, strict)
        )

    def load(self, preds: Any, gt: Any, params: WiderFaceParams) -> tuple[Any, Any]:
        from deteval.io.widerface import WiderGroundTruth, WiderPredictions, load_widerface_gt, load_widerface_preds

        truth = gt if isinstance(gt, WiderGroundTruth) else load_widerface_gt(gt, params.strict)
        dets = preds if isinstance(preds, WiderPredictions) else load_widerface_preds(preds, truth, params.strict)
        if len(dets.offsets) != len(truth) + 1:
            raise InputError(dets.source, None, "predictions grouped for another ground truth")
        return dets, truth

    def match(self, preds: Any, gt: Any, params: WiderFaceParams) -> dict[str, Any]:
        from deteval.matching.widerface import ZeroUnion, best_faces, subset_progress

        n_faces = np.diff(gt.box_offsets)
        n_preds = np.diff(preds.offsets)
        scored = (n_faces > 0) & (n_preds > 0)
        bad = gt.bad_keep & scored
        if bad.any():
            s, i = (int(v[0]) for v in np.nonzero(bad))
            raise InputError(
                gt.source,
                f"wider_{SUBSETS[s]}_val.mat, {gt.image_label(i)}",
                "a keep-list number outside the image's faces (the script stops there)",
            )
        try:
            best, best_iou = best_faces(preds.rows, preds.offsets, gt.boxes, gt.box_offsets)
        except ZeroUnion as exc:
            raise InputError(
                preds.source,
                gt.image_label(exc.image),
                "a prediction and a face with a union of 0 (the script divides by it)",
            ) from None
        found = np.zeros((len(SUBSETS), len(preds)), np.int64)
        proposal = np.zeros((len(SUBSETS), len(preds)), np.uint8)
        for s in range(len(SUBSETS)):
            found[s], proposal[s] = subset_progress(
                best, best_iou, preds.offsets, gt.box_offsets, gt.keep[s], params.iou_thr
            )
        scores = preds.rows[:, 4]
        image_min = np.full(len(gt), np.nan)
        image_max = np.full(len(gt), np.nan)
        has = n_preds > 0
        if has.any():
            starts = preds.offsets[:-1][has]
            image_min[has] = np.minimum.reduceat(scores, starts)
            image_max[has] = np.maximum.reduceat(scores, starts)
        out = preds.outside_scores
        outside = (float(out.min()), float(out.max())) if len(out) else None
        labels = np.array([gt.image_label(i) for i in range(len(gt))], dtype=object).astype(str)
        place = np.argsort(labels, kind="stable")
        file_order = np.empty(len(gt), np.int64)
        file_order[place] = np.arange(len(gt))
        return dict(
            record=WiderReplay(
                score=np.ascontiguousarray(scores),
                offsets=preds.offsets,
                found=found,
                proposal=proposal,
                scored=scored,
                keep_counts=gt.keep_counts,
                image_min=image_min,
                image_max=image_max,
                outside=outside,
                start=NORM_STARTS[params.score_norm],
                place=place,
                image_ids=labels[place],
                file_order=file_order,
            ),
            n_preds=int(len(preds)),
        )

    def reduce(self, matches: dict[str, Any], gt: Any, params: WiderFaceParams) -> WiderFaceResult:
        rec: WiderReplay = matches["record"]
        aps, parts = _counts(rec, np.arange(len(rec.scored), dtype=np.int64))
        lo, hi = parts[0][3]
        if matches["n_preds"] and not hi - lo > 0:
            warn(
                f"widerface: every score normalises to NaN or infinity (min {lo!r}, max {hi!r}): the script's "
                "division by max - min; no prediction reaches a threshold"
            )
        rows, precision, recall, proposals, found = [], [], [], [], []
        for s, subset in enumerate(SUBSETS):
            (ap, prec, rc), counts, faces, _ = parts[s]
            rows.append(
                dict(
                    category_id=subset,
                    name=subset,
                    AP=ap,
                    faces=faces,
                    proposals=int(counts[-1, 0]),
                    found=int(counts[-1, 1]),
                )
            )
            precision.append(prec)
            recall.append(rc)
            proposals.append(counts[:, 0])
            found.append(counts[:, 1])
        return WiderFaceResult(
            protocol=self.name,
            iou_type="bbox",
            stats=dict(zip(SUBSETS, aps)),
            per_class=rows,
            params={**params.to_dict(), "score_min": lo, "score_max": hi},
            replay=rec,
            thresholds=THRESHOLDS.copy(),
            precision=np.array(precision),
            recall=np.array(recall),
            proposals=np.array(proposals),
            found=np.array(found),
        )

    def replay(self, result: EvalResult) -> WiderReplayStats:
        return WiderReplayStats(kept_replay(result))

    def summarize(self, result: EvalResult, params: WiderFaceParams) -> list[str]:
        s = result.stats
        return [
            "==================== Results ====================",
            f"Easy   Val AP: {s['easy']}",
            f"Medium Val AP: {s['medium']}",
            f"Hard   Val AP: {s['hard']}",
            "=================================================",
        ]


WIDERFACE = WiderFaceProtocol()
