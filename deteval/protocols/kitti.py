"""KITTI 2D object detection: Car, Pedestrian and Cyclist AP at easy, moderate and hard, R11 and R40.

As OpenPCDet's ``kitti_object_eval_python`` (``eval.py``; ``get_official_eval_result`` on image-plane boxes,
metric 0) computes them; inputs are two ``label_2`` folders (:mod:`deteval.io.kitti`). Rules, each as the
reference's code has it:

* types compared lower-cased; for Car a ground-truth Van, for Pedestrian a Person_sitting, is ignored (it
  absorbs a detection without counting); ``DontCare`` (exactly that spelling) marks regions;
* a ground truth of the class is ignored at a difficulty when occluded > 0 / 1 / 2, truncated > 0.15 /
  0.3 / 0.5 or its height ``y2 - y1`` <= 40 / 25 / 25 px (easy / moderate / hard); a detection is ignored
  when ``|y2 - y1|`` < 40 / 25 / 25, whatever its type, and may still take a ground truth (which then is
  not missed);
* matching (:mod:`deteval.matching.kitti`): IoU without ``+1``, strictly above ``min_overlap`` (0.7 Car,
  0.5 Pedestrian and Cyclist); a free detection whose intersection over its own area with a DontCare
  region exceeds it is no false positive;
* up to 41 thresholds from the true-positive scores (:mod:`deteval.accumulation.kitti`), precision with a
  running maximum from the right; R11 and R40 in percent; a class without counted ground truth scores 0;
* AOS (orientation similarity) when the detections carry alpha: the first results file with objects has
  an alpha other than -10 on its first line.

``stats``: ``<Car|Pedestrian|Cyclist>/<easy|moderate|hard>/<R40|R11>``; AOS, where computed, in ``aos``
with the same keys. Bootstrap replays the whole evaluation on each draw of images (the thresholds depend
on every image's true positives, so a draw re-derives them: exact, at one evaluation's cost per replicate).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar

import numpy as np

from deteval.errors import InputError
from deteval.protocols import presets
from deteval.protocols.base import Option, Protocol, split_list
from deteval.protocols.replay import Replay, ReplayRecord, kept_replay
from deteval.result import EvalResult, jsonable

PRESET_KEYS = ("min_overlap",)
CLASSES = ("Car", "Pedestrian", "Cyclist")
DIFFICULTIES = ("easy", "moderate", "hard")
MIN_HEIGHT = (40, 25, 25)
MAX_OCCLUSION = (0, 1, 2)
MAX_TRUNCATION = (0.15, 0.3, 0.5)
# the ground-truth type a class ignores rather than misses (io.kitti's codes: 3 van, 4 person_sitting)
NEIGHBOUR = (3, 4, -1)
AOS_OFF = -10.0  # the alpha results files write when they have none
RECALL_SLOTS = np.arange(41) / 40  # the recall each envelope slot stands for (R40 reads slots 1..40)


@dataclass(frozen=True)
class KittiParams:
    protocol: str = "kitti"
    iou_type: str = "bbox"
    min_overlap: tuple[float, float, float] = (0.7, 0.5, 0.5)  # Car, Pedestrian, Cyclist
    strict: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "iou_type": self.iou_type,
            "min_overlap": dict(zip(CLASSES, self.min_overlap)),
            "min_height": list(MIN_HEIGHT),
            "max_occlusion": list(MAX_OCCLUSION),
            "max_truncation": list(MAX_TRUNCATION),
        }


def _overlaps(raw: list[str]) -> dict[str, float]:
    """``--min-overlap Car:0.5,Cyclist:0.6`` -> ``{"Car": 0.5, "Cyclist": 0.6}`` (the others as the preset has them)."""
    out = {}
    for item in split_list(raw):
        name, sep, value = item.partition(":")
        if not sep or name not in CLASSES:
            raise ValueError(f"give CLASS:VALUE with CLASS one of {', '.join(CLASSES)}, not {item!r}")
        try:
            out[name] = float(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a number") from None
    return out


def _checked(values: Mapping[str, Any], strict: bool) -> KittiParams:
    mo = values.get("min_overlap")
    if not isinstance(mo, Mapping) or set(mo) != set(CLASSES):
        raise InputError("min_overlap", None, f"must map each of {', '.join(CLASSES)} to a number, got {mo!r}")
    out = []
    for name in CLASSES:
        v = mo[name]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1:
            raise InputError("min_overlap", name, f"must be a number in [0, 1), got {v!r}")
        out.append(float(v))
    return KittiParams(min_overlap=tuple(out), strict=strict)


@dataclass
class KittiResult(EvalResult):
    """A KITTI result: the 41-slot envelopes per class and difficulty, and AOS where computed."""

    ARRAYS: ClassVar[tuple[str, ...]] = ("precision", "recall", "orientation", "thresholds", "npos")

    precision: np.ndarray = field(default_factory=lambda: np.zeros((3, 3, 41)))  # (class, difficulty, slot)
    recall: np.ndarray = field(default_factory=lambda: np.zeros((3, 3, 41)))
    orientation: np.ndarray = field(default_factory=lambda: np.zeros((3, 3, 41)))  # zeros without AOS
    thresholds: np.ndarray = field(default_factory=lambda: np.full((3, 3, 41), np.nan))  # NaN past the last
    npos: np.ndarray = field(default_factory=lambda: np.zeros((3, 3), np.int64))
    aos: dict[str, float] = field(default_factory=dict)  # empty without AOS

    def to_dict(self) -> dict[str, Any]:
        """The base's keys, with ``aos`` (when computed) and ``curves``: per ``<Class>/<difficulty>`` the 41-slot
        precision and recall envelopes (the PR curve R11 and R40 read), and the thresholds."""
        out = super().to_dict()
        if self.aos:
            out["aos"] = jsonable(self.aos)
        curves = {}
        for c, name in enumerate(CLASSES):
            for d, diff in enumerate(DIFFICULTIES):
                ts = self.thresholds[c, d]
                curves[f"{name}/{diff}"] = jsonable({
                    "precision": self.precision[c, d].tolist(), "recall": self.recall[c, d].tolist(),
                    "thresholds": ts[~np.isnan(ts)].tolist(),
                })  # fmt: skip
        out["curves"] = curves
        return out

    def threshold_curves(self) -> dict[str, Any]:
        """The 41-slot curves per ``<Class>/<difficulty>`` (what ``--curves`` writes and ``--plot`` draws):
        ``protocol``, ``recall`` (slot ``i`` at recall ``i / 40``, where R11 and R40 read the precision) and per
        curve ``AP`` (R40), ``AP_R11``, ``precision`` and ``recall_envelope`` (the result's envelopes; the
        recall envelope is each slot's highest recall from it on, as the reference keeps it), ``thresholds``
        (the scores, up to 41), ``npos``, and with AOS ``AOS`` (R40), ``AOS_R11`` and ``orientation``."""
        curves = {}
        for c, name in enumerate(CLASSES):
            for d, diff in enumerate(DIFFICULTIES):
                key, ts = f"{name}/{diff}", self.thresholds[c, d]
                curve = {
                    "AP": self.stats[f"{key}/R40"], "AP_R11": self.stats[f"{key}/R11"],
                    "precision": self.precision[c, d], "recall_envelope": self.recall[c, d],
                    "thresholds": ts[~np.isnan(ts)], "npos": int(self.npos[c, d]),
                }  # fmt: skip
                if self.aos:
                    curve |= {
                        "AOS": self.aos[f"{key}/R40"], "AOS_R11": self.aos[f"{key}/R11"],
                        "orientation": self.orientation[c, d],
                    }  # fmt: skip
                curves[key] = curve
        return {"protocol": self.protocol, "recall": RECALL_SLOTS, "curves": curves}


@dataclass(frozen=True, eq=False)
class KittiRecord(ReplayRecord):
    """What one evaluation computes once and each run (class x difficulty) and each replicate walks."""

    iou: np.ndarray
    iou_start: np.ndarray
    gt_start: np.ndarray
    dt_start: np.ndarray
    dt_score: np.ndarray
    gt_alpha: np.ndarray
    dt_alpha: np.ndarray
    ign_gt: tuple[np.ndarray, ...]  # per run (class-major), int8 (G,)
    ign_dt: tuple[np.ndarray, ...]  # per run, int8 (D,)
    cover: tuple[np.ndarray, ...]  # per class, bool (D,)
    min_overlap: tuple[float, float, float]
    aos: bool
    image_ids: np.ndarray
    file_order: np.ndarray


def _flags(dets, gt, params: KittiParams):
    """Per run (class-major), the reference's ``clean_data`` flags: ``(ign_gt, ign_dt, num_valid_gt)``."""
    g_h = gt.bbox[:, 3] - gt.bbox[:, 1]
    d_h = np.abs(dets.bbox[:, 3] - dets.bbox[:, 1])
    ign_gt, ign_dt = [], []
    for c in range(len(CLASSES)):
        own, near = gt.cls == c, gt.cls == NEIGHBOUR[c]
        for d in range(len(DIFFICULTIES)):
            hidden = (gt.occluded > MAX_OCCLUSION[d]) | (gt.truncated > MAX_TRUNCATION[d]) | (g_h <= MIN_HEIGHT[d])
            g = np.full(len(gt), -1, np.int8)
            g[near | (own & hidden)] = 1
            g[own & ~hidden] = 0
            low = d_h < MIN_HEIGHT[d]
            k = np.where(low, 1, np.where(dets.cls == c, 0, -1)).astype(np.int8)
            ign_gt.append(g)
            ign_dt.append(k)
    return tuple(ign_gt), tuple(ign_dt)


def _uses_aos(dets) -> bool:
    """The reference's test: the first results file with objects has alpha != -10 on its first line."""
    counts = np.diff(dets.start)
    first = np.flatnonzero(counts)
    return bool(len(first)) and bool(dets.alpha[dets.start[first[0]]] != AOS_OFF)


def _runs(rec: KittiRecord, images: np.ndarray, threads: bool = False) -> list[dict[str, Any]]:
    """Each run's thresholds, counts and envelopes over ``images`` (dense indices, in order); ``threads``:
    the nine runs on the thread pool (not from a replicate, which may itself run on it)."""
    tasks = [partial(_run, rec, images, c, d) for c in range(len(CLASSES)) for d in range(len(DIFFICULTIES))]
    if threads:
        from deteval.jit import run_tasks

        return run_tasks(tasks)
    return [task() for task in tasks]


def _run(rec: KittiRecord, images: np.ndarray, c: int, d: int) -> dict[str, Any]:
    """One class at one difficulty: both passes, then the envelopes."""
    from deteval.accumulation.kitti import envelope, thresholds
    from deteval.matching.kitti import count_at_thresholds, tp_scores

    thr = rec.min_overlap[c]
    r = c * len(DIFFICULTIES) + d
    ign_gt, ign_dt = rec.ign_gt[r], rec.ign_dt[r]
    npos = int(_per_image_valid(rec.gt_start, ign_gt)[images].sum())
    scores = tp_scores(images, rec.iou, rec.iou_start, rec.gt_start, rec.dt_start, ign_gt, ign_dt, rec.dt_score, thr)
    ts = thresholds(scores, npos)
    pr = count_at_thresholds(
        images, rec.iou, rec.iou_start, rec.gt_start, rec.dt_start, ign_gt, ign_dt, rec.dt_score, rec.cover[c],
        rec.gt_alpha, rec.dt_alpha, thr, ts, rec.aos,
    )  # fmt: skip
    tp, fp, fn, sim = pr.T
    return dict(
        npos=npos,
        thresholds=ts,
        precision=envelope(tp, tp + fp),
        recall=envelope(tp, tp + fn),
        orientation=envelope(sim, tp + fp) if rec.aos else np.zeros(41),
    )


def _per_image_valid(gt_start: np.ndarray, ign_gt: np.ndarray) -> np.ndarray:
    counted = np.concatenate([[0], np.cumsum(ign_gt == 0)])
    return counted[gt_start[1:]] - counted[gt_start[:-1]]


def _stats(runs: list[dict[str, Any]], key: str) -> dict[str, float]:
    from deteval.accumulation.kitti import ap_r11, ap_r40

    prec = np.stack([r[key] for r in runs]).reshape(len(CLASSES), len(DIFFICULTIES), -1)
    r11, r40 = ap_r11(prec), ap_r40(prec)
    out = {}
    for c, name in enumerate(CLASSES):
        for d, diff in enumerate(DIFFICULTIES):
            out[f"{name}/{diff}/R40"] = float(r40[c, d])
            out[f"{name}/{diff}/R11"] = float(r11[c, d])
    return out


class KittiReplay(Replay):
    """The stats of a draw of images: the whole evaluation of the materialised dataset (its thresholds
    re-derived from the draw's true positives), images in draw order."""

    def build_index(self) -> KittiRecord:
        return self.record

    def replicate(self, index: KittiRecord, draw: np.ndarray, by_draw: bool = True) -> list[float]:
        draw = np.asarray(draw, np.int64)
        if not by_draw:
            draw = np.sort(draw)
        return list(_stats(_runs(index, draw), "precision").values())


class KittiProtocol(Protocol):
    """KITTI 2D detection AP (OpenPCDet's ``kitti_object_eval_python``, image-plane boxes)."""

    name = "kitti"
    title = "kitti protocol (KITTI 2D detection: Car, Pedestrian, Cyclist AP, R11 and R40)"
    iou_types = ("bbox",)
    options = (
        Option(
            "min_overlap",
            "--min-overlap",
            "a match needs IoU strictly above this, per class "
            "(CLASS:VALUE, comma-separated; default Car:0.7,Pedestrian:0.5,Cyclist:0.5)",
            kind="list",
            convert=_overlaps,
            metavar="CLASS:IOU",
        ),
    )
    preset_name = "kitti"

    def make_params(
        self, iou_type: str, compat: bool, preset: Mapping[str, Any] | None, strict: bool, options: dict[str, Any]
    ) -> KittiParams:
        build = lambda values: _checked(values, strict)  # noqa: E731
        given = options.get("min_overlap")
        if isinstance(given, Mapping):  # some classes given: the others as the preset has them
            base = presets.merged(presets.builtin(self.preset_name), preset, PRESET_KEYS)["min_overlap"]
            if isinstance(base, Mapping):
                options = {**options, "min_overlap": {**base, **given}}
        return presets.resolve(presets.builtin(self.preset_name), preset, options, PRESET_KEYS, build)

    def load(self, preds: Any, gt: Any, params: KittiParams) -> tuple[Any, Any]:
        from deteval.io.kitti import load_kitti

        return load_kitti(preds, gt, strict=params.strict)

    def match(self, preds: Any, gt: Any, params: KittiParams) -> KittiRecord:
        from deteval.matching.kitti import dontcare_cover, pair_iou

        iou, iou_start = pair_iou(preds.bbox, preds.start, gt.bbox, gt.start)
        dc_rows = np.flatnonzero(gt.dontcare)
        dc_start = np.searchsorted(dc_rows, gt.start)
        covers: dict[float, np.ndarray] = {}
        for thr in params.min_overlap:
            if thr not in covers:
                covers[thr] = dontcare_cover(preds.bbox, preds.start, gt.bbox[dc_rows], dc_start, thr)
        ign_gt, ign_dt = _flags(preds, gt, params)
        return KittiRecord(
            iou=iou, iou_start=iou_start, gt_start=gt.start, dt_start=preds.start, dt_score=preds.score,
            gt_alpha=gt.alpha, dt_alpha=preds.alpha, ign_gt=ign_gt, ign_dt=ign_dt,
            cover=tuple(covers[t] for t in params.min_overlap), min_overlap=params.min_overlap,
            aos=_uses_aos(preds), image_ids=gt.image_ids, file_order=np.arange(len(gt.image_ids)),
        )  # fmt: skip

    def reduce(self, matches: KittiRecord, gt: Any, params: KittiParams) -> KittiResult:
        runs = _runs(matches, np.arange(len(matches.image_ids)), threads=True)
        stats = _stats(runs, "precision")
        aos = _stats(runs, "orientation") if matches.aos else {}
        shape = (len(CLASSES), len(DIFFICULTIES))
        ts = np.full((*shape, 41), np.nan)
        for i, r in enumerate(runs):
            ts[np.unravel_index(i, shape)][: len(r["thresholds"])] = r["thresholds"]
        rows = []
        for c, name in enumerate(CLASSES):
            for d, diff in enumerate(DIFFICULTIES):
                r = runs[c * len(DIFFICULTIES) + d]
                row = dict(
                    category=name,
                    difficulty=diff,
                    AP_R40=stats[f"{name}/{diff}/R40"],
                    AP_R11=stats[f"{name}/{diff}/R11"],
                )
                if aos:
                    row |= dict(AOS_R40=aos[f"{name}/{diff}/R40"], AOS_R11=aos[f"{name}/{diff}/R11"])
                row |= dict(npos=r["npos"], thresholds=len(r["thresholds"]))
                rows.append(row)
        return KittiResult(
            protocol=self.name, iou_type="bbox", stats=stats, per_class=rows, params=params.to_dict(),
            replay=matches, aos=aos,
            precision=np.stack([r["precision"] for r in runs]).reshape(*shape, 41),
            recall=np.stack([r["recall"] for r in runs]).reshape(*shape, 41),
            orientation=np.stack([r["orientation"] for r in runs]).reshape(*shape, 41),
            thresholds=ts, npos=np.array([r["npos"] for r in runs], np.int64).reshape(shape),
        )  # fmt: skip

    def replay(self, result: EvalResult) -> KittiReplay:
        return KittiReplay(kept_replay(result))

    def summarize(self, result: EvalResult, params: KittiParams) -> list[str]:
        lines = []
        aos = getattr(result, "aos", {})
        for c, name in enumerate(CLASSES):
            at = ", ".join([f"{params.min_overlap[c]:.2f}"] * 3)
            for tag, key in (("AP", "R11"), ("AP_R40", "R40")):
                lines.append(f"{name} {tag}@{at}:")
                vals = [result.stats[f"{name}/{d}/{key}"] for d in DIFFICULTIES]
                lines.append("bbox AP:" + ", ".join(f"{v:.4f}" for v in vals))
                if aos:
                    lines.append("aos  AP:" + ", ".join(f"{aos[f'{name}/{d}/{key}']:.2f}" for d in DIFFICULTIES))
        return lines


KITTI = KittiProtocol()
