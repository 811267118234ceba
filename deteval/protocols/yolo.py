"""ultralytics 8.4.190's detection metrics (``yolo val``'s P, R, mAP50, mAP50-95), reproduced.

Inputs: YOLO label and prediction folders (:mod:`deteval.io.yolo`; ``image_sizes`` gives pixels, else the
normalised boxes are compared), or containers (boxes of any format, class indices as categories).
"The same boxes" as ultralytics: the float64 corners :mod:`deteval.io.yolo` computes, rounded to float32 by
the IoU as ``box_iou``'s ``.float()`` does, and the confidences rounded to float32 (the tensors' dtype).

* IoU: ``box_iou`` in float32 (:mod:`deteval.geometry.float32_boxes`); thresholds ``torch.linspace(0.5,
  0.95, 10)`` in float32 (:data:`IOU_THRS`), compared with ``>=``;
* matching: 8.4's ``match_predictions`` (:mod:`deteval.matching.yolo`), per threshold, predictions in
  descending confidence per image;
* every prediction counts (no max_det); predictions of classes without labels are ignored; predictions on
  images without labels are false positives; a labelled class without predictions scores 0 and counts;
* AP, P, R: ``ap_per_class`` (:mod:`deteval.accumulation.yolo_ap`); stats ``P``, ``R``, ``mAP50``, ``mAP50-95``
  are ``DetMetrics.mean_results()``, one per-class row per class with labels (``class_result(i)``).

Ranking: ultralytics sorts with ``np.argsort(-conf)`` (numpy's default sort, not stable: equal confidences
come out in an order that depends on numpy and the CPU); deteval ranks equal confidences in input order (by
image stem, then line), so results with tied confidences in a class may differ from ultralytics' in the last
digits, as ultralytics' own may differ between machines.

``compare_coco`` (``--compare-coco``) also evaluates the same files as pycocotools would on their COCO
conversion (the coco protocol; needs ``image_sizes``) and prints both, with what separates them.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from deteval.errors import InputError
from deteval.protocols import presets
from deteval.protocols.base import Option, Protocol
from deteval.protocols.replay import Replay, ReplayRecord, kept_replay
from deteval.protocols.streaming import StreamPart, StreamRows, StreamSpec
from deteval.result import EvalResult, Outcomes
from deteval.text import display_width, pad, printable
from deteval.types import Detections, GroundTruth, IdTable

PRESET_KEYS = ("image_sizes", "names", "compare_coco")
# torch.linspace(0.5, 0.95, 10) in float32: equal to numpy's float64 grid rounded to float32 (the parity test checks)
IOU_THRS = np.linspace(0.5, 0.95, 10).astype(np.float32)
# ground truth loaded from YOLO folders -> what was read (deteval.io.yolo.YoloSet), for compare_coco
_SOURCES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class YoloParams:
    """The YOLO protocol's parameters: what loading reads, and whether to add COCO's figures."""

    image_sizes: Any = None  # loading: {"<stem>": [width, height]} file or mapping; None: normalised boxes
    names: Any = None  # loading: names file, data.yaml, or list
    compare_coco: bool = False
    compat: bool = True
    iou_type: str = "bbox"
    protocol: str = "yolo"

    def to_dict(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "reference": "ultralytics 8.4.190 DetMetrics (match_predictions, ap_per_class)",
            "iou_thresholds": [float(t) for t in IOU_THRS],
            "iou": "box_iou in float32, eps 1e-7",
            "boxes": "pixels (image_sizes)" if self.image_sizes is not None else "normalised",
            "ties": "equal confidences in input order (ultralytics: np.argsort(-conf))",
        }


@dataclass(eq=False)
class YoloResult(EvalResult):
    """ultralytics' figures: ``stats`` (mean_results), ``per_class`` (class_result rows), and the arrays."""

    ARRAYS: ClassVar[tuple[str, ...]] = ("ap", "p", "r", "f1", "classes", "p_curve", "r_curve", "f1_curve")

    ap: np.ndarray = field(default=None, repr=False)  # float64 (C, 10)
    p: np.ndarray = field(default=None, repr=False)  # float64 (C,)
    r: np.ndarray = field(default=None, repr=False)
    f1: np.ndarray = field(default=None, repr=False)
    classes: np.ndarray = field(default=None, repr=False)  # int64 (C,), class indices with labels
    p_curve: np.ndarray = field(default=None, repr=False)  # float64 (C, 1000)
    r_curve: np.ndarray = field(default=None, repr=False)
    f1_curve: np.ndarray = field(default=None, repr=False)
    coco: EvalResult | None = field(default=None, repr=False)  # compare_coco: the coco protocol's result

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if self.coco is not None:
            out["coco"] = {"stats": dict(self.coco.stats)}
        return out


def _checked(values: Mapping[str, Any], compat: bool) -> YoloParams:
    sizes, names = values.get("image_sizes"), values.get("names")
    return YoloParams(
        image_sizes=None if sizes in (None, "") else sizes,
        names=None if names in (None, "") else names,
        compare_coco=bool(values.get("compare_coco", False)),
        compat=bool(compat),
    )


class YoloProtocol(Protocol):
    """ultralytics' ``DetMetrics`` on YOLO folders or containers."""

    name = "yolo"
    title = "yolo protocol (ultralytics 8.4.190 detection metrics: P, R, mAP50, mAP50-95)"
    iou_types = ("bbox",)
    preset_name = "yolo"
    options = (
        Option("image_sizes", "--image-sizes", 'YOLO folders: {"<stem>": [width, height]} JSON or the images\' '
               "folder, to compare boxes in pixels (default: normalised)", metavar="SIZES"),
        Option("names", "--names", "class names file: one per line, indices in file order", metavar="FILE"),
        Option("compare_coco", "--compare-coco", "also COCO's figures on the same files (needs --image-sizes), "
               "side by side", "switch", value=True),
    )  # fmt: skip

    def make_params(
        self, iou_type: str, compat: bool, preset: Mapping[str, Any] | None, strict: bool, options: dict[str, Any]
    ) -> YoloParams:
        build = lambda values: _checked(values, compat)  # noqa: E731
        params = presets.resolve(presets.builtin(self.preset_name), preset, options, PRESET_KEYS, build)
        if params.compare_coco and params.image_sizes is None:
            raise InputError("compare_coco", None, "COCO's area ranges are in pixels: give image_sizes (--image-sizes)")
        return params

    def load(self, preds: Any, gt: Any, params: YoloParams) -> tuple[Detections, GroundTruth]:
        if isinstance(gt, GroundTruth):
            if isinstance(preds, Detections):
                return preds, gt
            from deteval.io.yolo import is_yolo_folder, load_yolo_preds

            if gt.box_format != "xyxy" or gt.images.ids.dtype.kind not in "US" or not is_yolo_folder(preds):
                raise InputError("preds", None, "with the ground truth as a container, give the detections as one too")
            return load_yolo_preds(preds, gt), gt  # another model's folder on labels loaded already (compare)
        from deteval.io.yolo import is_yolo_folder, read_yolo, yolo_containers

        if not is_yolo_folder(gt):
            raise InputError(str(gt), None, "the yolo protocol reads a YOLO label folder (or containers)")
        ys = read_yolo(preds, gt, params.image_sizes, params.names)
        dets, truth = yolo_containers(ys)
        if params.compare_coco:
            _SOURCES[truth] = ys  # COCO's boxes are computed from the files' numbers, not from the corners
        return dets, truth

    def match(self, preds: Detections, gt: GroundTruth, params: YoloParams) -> dict[str, Any]:
        from deteval.matching.groups import group_by_image_category
        from deteval.matching.yolo import match_yolo

        dt = preds
        if len(dt) and (dt.image.max() >= len(gt.images) or dt.category.max() >= len(gt.categories)):
            raise InputError(dt.source, None, "detections index images or categories outside the ground truth's tables")
        conf32 = dt.score.astype(np.float32)
        # groups rank by the float32 confidences (held as float64, exactly): their ties are ultralytics'
        ranked = dataclasses.replace(dt, score=conf32.astype(np.float64))
        groups = group_by_image_category(gt, ranked, use_cats=True, max_det=None)
        correct = match_yolo(_corners(gt), _corners(dt), groups, IOU_THRS)
        npos = np.bincount(gt.category, minlength=len(gt.categories)).astype(np.int64)
        return {"correct": correct, "conf": conf32, "category": dt.category, "image": dt.image, "npos": npos}

    def reduce(self, matches: dict[str, Any], gt: GroundTruth, params: YoloParams) -> YoloResult:
        from deteval.accumulation.yolo_ap import mean_results, yolo_ap_per_class

        cats = gt.categories
        npos = matches["npos"]
        target = np.repeat(np.arange(len(cats)), npos)  # each label's class (dense indices keep the ids' order)
        res = yolo_ap_per_class(matches["correct"], matches["conf"], matches["category"], target)
        ap_mean = res.ap.mean(1)  # Metric.ap: the row means as ultralytics takes them
        per_class = [
            {"category_id": cats.id_of(int(k)), "name": cats.name_of(int(k)), "P": float(res.p[i]),
             "R": float(res.r[i]), "AP50": float(res.ap[i, 0]), "AP50-95": float(ap_mean[i]),
             "labels": int(res.n_labels[i])}
            for i, k in enumerate(res.classes)
        ]  # fmt: skip
        n_cat = len(cats)
        outcomes = Outcomes(
            category=np.asarray(matches["category"], np.int32),
            image=np.asarray(matches["image"], np.int32),
            score=matches["conf"].astype(np.float64),
            state=matches["correct"].astype(np.int8)[:, None, :],
            npos=npos[:, None],
            iou_thrs=np.linspace(0.5, 0.95, 10),  # the thresholds' names for --at-iou (matching used IOU_THRS)
            area_labels=("all",),
            category_ids=cats.ids,
            category_names=tuple(cats.name_of(k) for k in range(n_cat)),
        )
        result = YoloResult(
            protocol="yolo", iou_type="bbox", stats=mean_results(res), per_class=per_class, params=params.to_dict(),
            outcomes=outcomes, ap=res.ap, p=res.p, r=res.r, f1=res.f1, classes=res.classes,
            p_curve=res.p_curve, r_curve=res.r_curve, f1_curve=res.f1_curve,
        )  # fmt: skip
        if len(gt) == int(npos.sum()):  # the labels' rows are at hand (not a streamed result): replay
            result.replay = YoloReplay(
                correct=matches["correct"], conf=matches["conf"], category=np.asarray(matches["category"], np.int64),
                image=np.asarray(matches["image"], np.int64), label_image=gt.image.astype(np.int64),
                label_category=gt.category.astype(np.int64), image_ids=gt.images.ids,
                file_order=gt.images.file_order(), n_cat=n_cat,
            )  # fmt: skip
        return result

    def replay(self, result: EvalResult) -> YoloReplayStats:
        return YoloReplayStats(kept_replay(result))

    def evaluate_loaded(self, preds: Detections, gt: GroundTruth, params: YoloParams) -> EvalResult:
        result = self.reduce(self.match(preds, gt, params), gt, params)
        if params.compare_coco:
            result.coco = _coco_of(preds, gt)
        result.summary_lines = self.summarize(result, params)
        return result

    # ---- streaming (deteval.evaluator, deteval.evaluator.dask): a prediction's row depends on its image only;
    # the result ranks rows image by image (images ascending by id), each image's rows as given, as evaluate()
    # ranks the predictions of a folder (stems sorted, lines in file order)

    stream_spec = StreamSpec(formats={"bbox": {"xyxy": "xyxy", "xywh": "xywh", "cxcywh": "xywh"}}, target_flags=())

    def stream_params(self, iou_type: str, compat: bool, options: dict[str, Any]) -> YoloParams:
        for name in options:
            raise InputError(name, None, "the yolo protocol's Evaluator takes no options (boxes and class indices)")
        return self.params(iou_type, compat=compat)

    def stream_shape(self, params: YoloParams) -> tuple[int, int, int, int]:
        return 1, len(IOU_THRS), 1, 0

    def stream_match(self, preds: Detections, gt: GroundTruth, params: YoloParams, extra: Mapping) -> StreamPart:
        m = self.match(preds, gt, params)
        order = np.argsort(preds.image, kind="stable")  # the row of each prediction among its image's rows
        first = np.searchsorted(preds.image[order], preds.image[order])
        rank = np.empty(len(preds), np.int32)
        rank[order] = np.arange(len(preds)) - first
        return StreamPart(
            det_image=np.asarray(preds.image, np.int32),
            det_category=np.asarray(preds.category, np.int32),
            det_rank=rank,
            det_score=preds.score.astype(np.float64),
            det_state=m["correct"].astype(np.int8)[:, None, :],
            npig=m["npos"][:, None],
            ndet=np.bincount(preds.category, minlength=len(gt.categories)).astype(np.int64),
        )

    def stream_result(self, rows: StreamRows, categories: IdTable, params: YoloParams, extra: Mapping) -> YoloResult:
        order = np.lexsort((rows.det_rank, rows.det_image))
        matches = {
            "correct": rows.det_state[order, 0, :] == 1,
            "conf": rows.det_score[order].astype(np.float32),
            "category": rows.det_category[order],
            "image": rows.det_image[order],
            "npos": rows.npig[:, 0].copy(),
        }
        z, b = np.zeros(0, np.int32), np.zeros(0, bool)
        gt = GroundTruth(z, z, np.zeros((0, 4)), np.zeros(0), b, b, b, np.zeros(0, np.int64), IdTable(rows.image_ids),
                         categories)  # fmt: skip
        result = self.reduce(matches, gt, params)
        result.summary_lines = self.summarize(result, params)
        return result

    def summarize(self, result: YoloResult, params: YoloParams) -> list[str]:
        s = result.stats
        lines = [
            "yolo: ultralytics 8.4.190 metrics; IoU 0.50:0.95 (float32), P and R at the best smoothed mean F1",
            f"{'class':<20}  {'labels':>7}  {'P':>7}  {'R':>7}  {'mAP50':>7}  {'mAP50-95':>8}",
            f"{'all':<20}  {sum(r['labels'] for r in result.per_class):>7}  {s['P']:7.3f}  {s['R']:7.3f}  "
            f"{s['mAP50']:7.3f}  {s['mAP50-95']:8.3f}",
        ]
        width = max([20] + [display_width(printable(r["name"])) for r in result.per_class])
        lines[1] = lines[1].replace(f"{'class':<20}", f"{'class':<{width}}")
        lines[2] = lines[2].replace(f"{'all':<20}", f"{'all':<{width}}")
        for r in result.per_class:
            lines.append(
                f"{pad(printable(r['name']), width)}  {r['labels']:>7}  {r['P']:7.3f}  {r['R']:7.3f}  "
                f"{r['AP50']:7.3f}  {r['AP50-95']:8.3f}"
            )
        if result.coco is not None:
            lines += side_by_side(result, result.coco)
        return lines


@dataclass(frozen=True)
class YoloReplay(ReplayRecord):
    """What re-ranking a resample or slice of the images needs: every prediction's row of the matching, and
    the labels' images and classes. Kept on the result by :meth:`YoloProtocol.reduce`."""

    correct: np.ndarray  # bool (N, T)
    conf: np.ndarray  # float32 (N,)
    category: np.ndarray  # int64 (N,)
    image: np.ndarray  # int64 (N,)
    label_image: np.ndarray  # int64 (L,)
    label_category: np.ndarray  # int64 (L,)
    image_ids: np.ndarray
    file_order: np.ndarray
    n_cat: int


def _by_image(image: np.ndarray, n_images: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows grouped by image, each image's in row order; offsets (I + 1,))."""
    order = np.argsort(image, kind="stable")
    offsets = np.zeros(n_images + 1, np.int64)
    np.cumsum(np.bincount(image, minlength=n_images), out=offsets[1:])
    return order, offsets


def _rows_of(grouped: tuple[np.ndarray, np.ndarray], images: np.ndarray) -> np.ndarray:
    """The rows of ``images``, image after image (repeats repeated), each image's in row order."""
    order, offsets = grouped
    start, count = offsets[images], offsets[images + 1] - offsets[images]
    if not count.sum():
        return np.zeros(0, np.int64)
    first = np.repeat(np.cumsum(count) - count, count)
    return order[np.repeat(start, count) + np.arange(int(count.sum())) - first]


class YoloReplayStats(Replay):
    """The yolo protocol's replay: a list of images' predictions and labels, ranked and reduced as
    :meth:`YoloProtocol.reduce` ranks a dataset listing those images (a prediction's row depends on its
    image only). A replicate's rows stand draw after draw; a slice's keep their original order."""

    def build_index(self):
        r = self.record
        n = len(r.image_ids)
        return _by_image(r.image, n), _by_image(r.label_image, n)

    def replicate(self, index, draw: np.ndarray, by_draw: bool = True) -> list[float]:
        from deteval.accumulation.yolo_ap import mean_results, yolo_ap_per_class

        r = self.record
        images = np.asarray(draw, np.int64) if by_draw else np.unique(draw)
        rows = _rows_of(index[0], images)
        if not by_draw:
            rows = np.sort(rows)
        labels = _rows_of(index[1], images)
        res = yolo_ap_per_class(r.correct[rows], r.conf[rows], r.category[rows], r.label_category[labels])
        return list(mean_results(res).values())


def _corners(rows: GroundTruth | Detections) -> np.ndarray:
    b = np.asarray(rows.boxes, np.float64).reshape(-1, 4)
    if rows.box_format == "xyxy":
        return b
    if rows.box_format == "xywh":
        return np.stack([b[:, 0], b[:, 1], b[:, 0] + b[:, 2], b[:, 1] + b[:, 3]], axis=1)
    raise InputError(rows.source, None, f"the yolo protocol compares boxes (xyxy or xywh), not {rows.box_format!r}")


def _coco_of(preds: Detections, gt: GroundTruth) -> EvalResult:
    """The coco protocol on the same inputs: the files' COCO conversion (:func:`deteval.io.yolo.coco_records`)
    where they were read from YOLO folders, else the containers' boxes as ``[x1, y1, x2 - x1, y2 - y1]``."""
    from deteval import protocols

    coco = protocols.get("coco")
    source = _SOURCES.get(gt)
    if source is not None:
        from deteval.io.yolo import coco_records

        return coco.evaluate(*coco_records(source))
    if gt.images.width is None and gt.box_format == "xyxy" and len(gt) and float(np.max(gt.boxes)) <= 1.0:
        raise InputError("compare_coco", None, "COCO's area ranges are in pixels: give pixel boxes (or image_sizes)")
    xywh = lambda b: np.stack([b[:, 0], b[:, 1], b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], axis=1)  # noqa: E731
    g = _corners(gt)
    d = _corners(preds)
    gt_c = dataclasses.replace(gt, boxes=xywh(g), box_format="xywh")
    dt_c = dataclasses.replace(preds, boxes=xywh(d), box_format="xywh", area=(d[:, 2] - d[:, 0]) * (d[:, 3] - d[:, 1]))
    return coco.evaluate(dt_c, gt_c)


def side_by_side(result: YoloResult, coco: EvalResult) -> list[str]:
    """Both protocols' headline figures, and what separates them on these files."""
    s, c = result.stats, coco.stats
    nan = float("nan")
    per_image = np.bincount(result.outcomes.image) if result.outcomes is not None and len(result.outcomes.image) else []
    over = [int(n) for n in per_image if n > 100]
    cut = (
        f"{len(over)} images have more than 100 predictions: COCO drops {sum(over) - 100 * len(over)} of them"
        if over else "no image has more than 100 predictions here"
    )  # fmt: skip
    return [
        "",
        f"{'':<24}{'ultralytics':>12}{'COCO':>12}",
        f"{'mAP50-95 / AP':<24}{s['mAP50-95']:12.4f}{c.get('AP', nan):12.4f}",
        f"{'mAP50 / AP50':<24}{s['mAP50']:12.4f}{c.get('AP50', nan):12.4f}",
        "what separates them on these files:",
        "  AP: ultralytics integrates precision at 101 recall points by the trapezoid rule (np.trapezoid, from",
        "      recall sentinels 0 and 1); COCO averages precision at the same 101 points (a step sum / 101);",
        f"  detections: ultralytics counts every prediction; COCO keeps the 100 best per image ({cut});",
        "  ultralytics has no crowd or ignore regions and no area ranges; COCO's AP small/medium/large here:",
        f"      {c.get('APs', nan):.4f} / {c.get('APm', nan):.4f} / {c.get('APl', nan):.4f} (-1: no labels there);",
        "  ultralytics computes IoU in float32 (+1e-7 in the union) and ranks float32 confidences; COCO in float64;",
        "  ultralytics' P and R are read at the confidence of the best smoothed mean F1; COCO reports no P.",
    ]


YOLO = YoloProtocol()
