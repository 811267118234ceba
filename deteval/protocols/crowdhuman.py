"""CrowdHuman: AP, MR^-2 and the Jaccard index (JI), as CrowdDet's ``lib/evaluate`` computes them.

Inputs are ODGT files (:mod:`deteval.io.odgt`); ground-truth and detection boxes are clipped to their image
(x1 to [0, W-1], x2 to [0, W], the same for y), as the reference clips them.

AP and MR (``compute_APMR.py``, ``APMRToolkits``), one class:

* per image, :func:`deteval.matching.pedestrian.match_crowdhuman` (IoU ``> 0.5``; an unmatched detection
  covered ``> 0.5`` by the first ignore box is dropped);
* all detections by descending score (stable; images in the ground truth's first-appearance order);
  recall = ``tp / (tp + fn)``, precision = ``tp / (tp + fp)``; AP = the trapezoids from the first detection,
  summed left to right; MR at the literal points 0.0100 ... 1.000: the miss rate at the *first* index with
  FPPI ``>=`` the point (else the last), ``np.exp(np.log(score).mean())``.

JI (``compute_JI.py``): for score thresholds ``1e-1 * i``, i = 0..9, detections with a score strictly above;
per image ``k / (m + n - k + 1e-6)`` from :func:`deteval.matching.pedestrian.jaccard_counts`; the mean over
images with any (non-dropped) box, its sum ``np.sum`` in the ground truth's image order (the reference sums in
the order its worker processes return, so its last bits vary from run to run); JI = the largest mean.

Beyond the reference: an image whose ``gtboxes`` is empty, or one without a predictions line, is scored (the
reference crashes on both); with no detection at all AP is 0 and MR 1 (the reference: a NaN); with no
positives AP and MR are -1 (the reference: a division by zero).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from deteval.errors import InputError
from deteval.protocols import presets
from deteval.protocols.base import Option, Protocol
from deteval.protocols.replay import Replay, ReplayRecord, kept_replay
from deteval.protocols.streaming import StreamPart, StreamRows, StreamSpec
from deteval.result import EvalResult
from deteval.types import Detections, GroundTruth, IdTable

PRESET_KEYS = ("box", "iou_thr")
BOXES = ("fbox", "hbox")
MR_POINTS = (0.0100, 0.0178, 0.03160, 0.0562, 0.1000, 0.1778, 0.3162, 0.5623, 1.000)
JI_THRESHOLDS = tuple(1e-1 * i for i in range(10))  # the reference's floats: 0.30000000000000004 ...


@dataclass(frozen=True)
class CrowdHumanParams:
    protocol: str = "crowdhuman"
    iou_type: str = "bbox"
    box: str = "fbox"
    iou_thr: float = 0.5

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "mr_points": list(MR_POINTS), "ji_score_thresholds": list(JI_THRESHOLDS)}


def _checked(values: Mapping[str, Any]) -> CrowdHumanParams:
    box, thr = values.get("box"), values.get("iou_thr")
    if box not in BOXES:
        raise InputError("box", None, f"choose one of {', '.join(BOXES)}, not {box!r}")
    if isinstance(thr, bool) or not isinstance(thr, (int, float)) or not 0 < thr < 1:
        raise InputError("iou_thr", None, f"must be a number in (0, 1), got {thr!r}")
    return CrowdHumanParams(box=box, iou_thr=float(thr))


def _clip(boxes: np.ndarray, image: np.ndarray, height: np.ndarray, width: np.ndarray) -> np.ndarray:
    b = boxes.copy()
    w, h = width[image], height[image]
    b[:, 0] = np.minimum(np.maximum(b[:, 0], 0), w - 1)
    b[:, 1] = np.minimum(np.maximum(b[:, 1], 0), h - 1)
    b[:, 2] = np.maximum(np.minimum(b[:, 2], w), 0)
    b[:, 3] = np.maximum(np.minimum(b[:, 3], h), 0)
    return b


def ap_mr(outcome: np.ndarray, npos: int, n_images: int) -> tuple[float, float]:
    """``eval_AP`` and ``eval_MR`` of CrowdDet's Database on outcomes in descending score order."""
    out = outcome[outcome != -1]
    if npos == 0:
        return -1.0, -1.0
    if len(out) == 0:
        return 0.0, 1.0
    tp = np.cumsum(out == 1).astype(np.float64)
    fp = np.cumsum(out == 0).astype(np.float64)
    recall = tp / (tp + (npos - tp))
    precision = tp / (tp + fp)
    # Python's left-to-right float sum: cumsum is sequential
    area = (recall[1:] - recall[:-1]) * ((precision[:-1] + precision[1:]) / 2)
    ap = float(np.cumsum(area)[-1]) if len(area) else 0.0
    fppi = fp / n_images
    missrate = 1.0 - recall
    idx = np.searchsorted(fppi, np.array(MR_POINTS), side="left")  # the first index with fppi >= the point
    idx[idx == len(fppi)] = len(fppi) - 1
    with np.errstate(divide="ignore"):
        mr = float(np.exp(np.log(np.array(missrate[idx].tolist())).mean()))
    return ap, mr


def ji_of(ratio: np.ndarray, valid: np.ndarray) -> float:
    """The mean ratio over the images with any box (``np.sum`` in the given order), -1 where there are none."""
    img_num = int(valid.sum())
    return float(np.sum(ratio) / img_num) if img_num else -1.0


@dataclass(frozen=True, eq=False)
class CrowdHumanReplay(ReplayRecord):
    """What re-ranking a resample or a slice of the images needs: the detections' outcomes grouped by image
    (in the ground truth's file order; by descending score, stable, within one) with each place's offsets,
    each image's positives, and each image's JI ratio and validity at every score threshold."""

    outcome: np.ndarray  # int8 (D,)
    score: np.ndarray  # float64 (D,)
    offsets: np.ndarray  # int64 (I + 1,), by place in the file
    place: np.ndarray  # int64 (I,): each dense image's place in the file
    npos: np.ndarray  # int64 (I,)
    ratio: np.ndarray  # float64 (10, I)
    valid: np.ndarray  # bool (10, I)
    image_ids: np.ndarray
    file_order: np.ndarray


class CrowdHumanReplayStats(Replay):
    """AP, MR and JI of a draw of images, as evaluating the materialised dataset gives them: a bootstrap's
    images in draw order (the reference walks images in file order), a slice's in file order."""

    def build_index(self) -> CrowdHumanReplay:
        return self.record

    def replicate(self, index: CrowdHumanReplay, draw: np.ndarray, by_draw: bool = True) -> list[float]:
        draw = np.asarray(draw, np.int64)
        if not by_draw:
            draw = draw[np.argsort(index.place[draw], kind="stable")]
        p = index.place[draw]
        starts, counts = index.offsets[p], index.offsets[p + 1] - index.offsets[p]
        rows = np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(int(counts.sum()))
        order = np.argsort(-index.score[rows], kind="stable")
        ap, mr = ap_mr(index.outcome[rows][order], int(index.npos[draw].sum()), len(draw))
        ji = max(ji_of(index.ratio[t, draw], index.valid[t, draw]) for t in range(len(JI_THRESHOLDS)))
        return [ap, mr, ji]


class CrowdHumanProtocol(Protocol):
    """CrowdHuman AP / MR^-2 / JI (CrowdDet's evaluation)."""

    name = "crowdhuman"
    title = "crowdhuman protocol (CrowdHuman AP, MR^-2 and JI, as CrowdDet evaluates them)"
    iou_types = ("bbox",)
    options = (
        Option("box", "--box", "the ground truth's box: fbox (full body, default) or hbox (head)", choices=BOXES),
    )
    preset_name = "crowdhuman"

    def make_params(self, iou_type: str, compat: bool, preset: Mapping[str, Any] | None, strict: bool,
                    options: dict[str, Any]) -> CrowdHumanParams:
        return presets.resolve(presets.builtin(self.preset_name), preset, options, PRESET_KEYS, _checked)

    def load(self, preds: Any, gt: Any, params: CrowdHumanParams) -> tuple[Detections, GroundTruth]:
        from deteval.io.odgt import CrowdGroundTruth, load_odgt_dets, load_odgt_gt

        truth = gt if isinstance(gt, CrowdGroundTruth) else load_odgt_gt(gt, params.box)
        dets = preds if isinstance(preds, Detections) else load_odgt_dets(preds, truth)
        return dets, truth

    def match(self, preds: Detections, gt: GroundTruth, params: CrowdHumanParams) -> dict[str, Any]:
        from deteval.matching.pedestrian import jaccard_counts, match_crowdhuman

        tag = getattr(gt, "tag", None)
        if tag is None or gt.images.height is None or gt.images.width is None:
            raise InputError(gt.source, None, "CrowdHuman needs ODGT ground truth (tags, image sizes)")
        n_images = len(gt.images)
        rank = gt.images.file_order()  # dense indices in the file's order
        place = np.empty(n_images, np.int64)
        place[rank] = np.arange(n_images)
        # ground truth per image (file order), tag descending (stable); detections by descending score (stable)
        go = np.lexsort((-tag.astype(np.int64), place[gt.image]))
        do = np.lexsort((-preds.score, place[preds.image]))
        gb = _clip(gt.boxes[go], gt.image[go], gt.images.height, gt.images.width)
        db = _clip(preds.boxes[do], preds.image[do], gt.images.height, gt.images.width)
        gtag = tag[go]
        gt_start = np.searchsorted(place[gt.image[go]], np.arange(n_images + 1))
        dt_start = np.searchsorted(place[preds.image[do]], np.arange(n_images + 1))
        outcome = match_crowdhuman(gb, gtag, gt_start, db, dt_start, params.iou_thr)
        score = preds.score[do]
        order = np.argsort(-score, kind="stable")
        ji = [jaccard_counts(gb, gtag, gt_start, db, score, dt_start, t, params.iou_thr) for t in JI_THRESHOLDS]
        # per image (dense index), for replay: JI's per-image counts come in place order
        npos_image = np.bincount(gt.image[go][gtag != -1], minlength=n_images)
        return dict(outcome=outcome[order], npos=int((gtag != -1).sum()), n_images=n_images, ji=ji,
                    grouped_outcome=outcome, grouped_score=score, offsets=dt_start, place=place,
                    npos_image=npos_image, images=gt.images)

    def reduce(self, matches: dict[str, Any], gt: GroundTruth, params: CrowdHumanParams) -> EvalResult:
        ap, mr = ap_mr(matches["outcome"], matches["npos"], matches["n_images"])
        rows = []
        ratios, valids = [], []
        for t, (k, m, n) in zip(JI_THRESHOLDS, matches["ji"]):
            ratio = k / (m + n - k + 1e-6)  # per place in the file: the order the mean sums in
            valid = (n != 0) | (m != 0)
            ratios.append(ratio)
            valids.append(valid)
            rows.append(dict(score_thr=t, JI=ji_of(ratio, valid), valids=int(k.sum()), total=int(n.sum()),
                             gtn=int(m.sum())))
        ji = max(r["JI"] for r in rows)
        place = matches["place"]
        replay = CrowdHumanReplay(
            outcome=matches["grouped_outcome"], score=matches["grouped_score"], offsets=matches["offsets"],
            place=place, npos=matches["npos_image"], ratio=np.array(ratios)[:, place].reshape(len(ratios), -1),
            valid=np.array(valids)[:, place].reshape(len(valids), -1), image_ids=matches["images"].ids,
            file_order=matches["images"].file_order(),
        )
        return EvalResult(protocol=self.name, iou_type="bbox", stats={"AP": ap, "MR": mr, "JI": ji}, per_class=rows,
                          params=params.to_dict(), replay=replay)

    def replay(self, result: EvalResult) -> CrowdHumanReplayStats:
        return CrowdHumanReplayStats(kept_replay(result))

    def miss_rate_curves(self, result: EvalResult, max_points: int | None = None) -> dict[str, Any]:
        """The miss rate against FPPI (with recall and precision: AP's curve) of the ranked detections
        (deteval.accumulation.miss_rate), from the result's replay record; none (null) without positives."""
        from deteval.accumulation.miss_rate import curve

        rec = kept_replay(result)
        npos, n_images = int(rec.npos.sum()), len(rec.image_ids)
        order = np.argsort(-rec.score, kind="stable")  # match()'s ranking of the grouped rows
        outcome, score = rec.outcome[order], rec.score[order]
        keep = outcome != -1
        if npos == 0:
            return {"protocol": self.name, "miss_rate_curves": {"all": None}}
        out, score = outcome[keep], score[keep]
        tp = np.cumsum(out == 1).astype(np.float64)
        fp = np.cumsum(out == 0).astype(np.float64)
        recall = tp / (tp + (npos - tp))
        precision = tp / (tp + fp)
        fppi = fp / n_images
        read = np.searchsorted(fppi, np.array(MR_POINTS), side="left")
        read[read == len(fppi)] = len(fppi) - 1
        at = (1.0 - recall)[read] if len(fppi) else np.ones(len(MR_POINTS))
        _, mr = ap_mr(outcome, npos, n_images)
        c = curve(fppi, 1.0 - recall, score, read, np.array(MR_POINTS), at, mr, max_points, recall=recall,
                  precision=precision)
        return {"protocol": self.name, "miss_rate_curves": {"all": c}}

    # ---- streaming (deteval.evaluator)
    #
    # One class: labels are read (the Evaluator's category table) but play no part. A target carries per
    # box the reference's tag (1 person, 0 'background', -1 ignore region; a nonzero ``ignore`` flag is -1
    # too) and per image its ``height`` and ``width`` (the clip). Each batch is matched alone; kept per
    # detection: its image, score, rank among its image's detections by descending score (stable) and its
    # AP/MR outcome (2: dropped in an ignore region); per image its positives and JI counts (k, m, n at each
    # score threshold). The result ranks and sums them with images by ascending id: evaluate()'s numbers
    # on an ODGT file whose lines are in ascending ID order (evaluate() follows the file's order).

    stream_spec = StreamSpec(
        formats={"bbox": {"xywh": "xywh", "xyxy": "xyxy"}},
        image_keys=("height", "width"),
        target_flags=("ignore",),
        target_values=("tag",),
    )

    def stream_params(self, iou_type: str, compat: bool, options: dict[str, Any]) -> CrowdHumanParams:
        for name in options:
            if name != "iou_thr":  # box names an ODGT key: the Evaluator is given the boxes themselves
                raise InputError(name, None, f"not an option of protocol {self.name!r} in the Evaluator; its "
                                             "options are iou_thr")
        return self.params(iou_type, compat=compat, **options)

    def stream_shape(self, params: CrowdHumanParams) -> tuple[int, int, int, int]:
        return 1, 1, 1, 1 + 3 * len(JI_THRESHOLDS)

    def stream_match(
        self, preds: Detections, gt: GroundTruth, params: CrowdHumanParams, extra: Mapping[str, Any]
    ) -> StreamPart:
        from deteval.io.odgt import CrowdGroundTruth

        n_images, n_cat = len(gt.images), len(gt.categories)
        if getattr(gt, "tag", None) is None:  # a batch: the targets' tags, image sizes, boxes as x + w
            tag = np.asarray(extra["tag"], np.float64)
            if not np.isin(tag, (-1, 0, 1)).all():
                bad = tag[~np.isin(tag, (-1, 0, 1))][0]
                rule = f"a tag must be 1 (person), 0 (background) or -1 (ignore region), got {bad!r}"
                raise InputError("target", "tag", rule)
            tag = np.where(gt.ignore, -1, tag).astype(np.int8)
            images = IdTable(gt.images.ids, height=np.asarray(extra["height"], np.float64),
                             width=np.asarray(extra["width"], np.float64))
            boxes, dboxes = gt.boxes.copy(), preds.boxes.copy()
            if gt.box_format == "xywh":  # the reference's x + w, y + h
                boxes[:, 2:4] += boxes[:, :2]
                dboxes[:, 2:4] += dboxes[:, :2]
            gt = CrowdGroundTruth(image=gt.image, category=np.zeros(len(gt), np.int32), boxes=boxes, area=gt.area,
                                  crowd=gt.crowd, ignore=tag == -1, difficult=gt.difficult, ann_id=gt.ann_id,
                                  images=images, categories=gt.categories, box_format="xyxy", source=gt.source,
                                  tag=tag)
            preds = Detections(image=preds.image, category=preds.category, boxes=dboxes, score=preds.score,
                               area=preds.area, box_format="xyxy", source=preds.source)
        m = self.match(preds, gt, params)
        place, offsets = m["place"], m["offsets"]
        counts = np.diff(offsets)
        by_place = np.repeat(np.arange(n_images), counts)
        image = np.argsort(place)[by_place]  # the dense image of each grouped row
        rank = np.arange(len(by_place)) - offsets[by_place]
        outcome = m["grouped_outcome"]
        ji = np.concatenate([np.stack([k, mm, n], axis=1) for k, mm, n in m["ji"]], axis=1)  # by place
        npig = np.zeros((n_cat, 1), np.int64)
        if n_cat:
            npig[0, 0] = m["npos"]
        elif m["npos"]:
            raise InputError("target", None, "ground-truth boxes without labels")
        return StreamPart(
            det_image=image.astype(np.int32),
            det_category=np.zeros(len(image), np.int32),
            det_rank=rank.astype(np.int32),
            det_score=m["grouped_score"].astype(np.float64),
            det_state=np.where(outcome == -1, 2, outcome).astype(np.int8).reshape(-1, 1, 1),
            npig=npig,
            ndet=(np.arange(n_cat) == 0).astype(np.int64) * len(image),
            image_values=np.concatenate([m["npos_image"][:, None], ji[place]], axis=1).astype(np.float64),
        )

    def stream_result(
        self, rows: StreamRows, categories: IdTable, params: CrowdHumanParams, extra: Mapping[str, Any]
    ) -> EvalResult:
        n_images = len(rows.image_ids)
        order = np.lexsort((rows.det_rank, rows.det_image))  # images by ascending id, each by descending score
        state = rows.det_state[order, 0, 0]
        grouped_outcome = np.where(state == 2, -1, state).astype(np.int8)
        grouped_score = rows.det_score[order]
        by_score = np.argsort(-grouped_score, kind="stable")
        width = 1 + 3 * len(JI_THRESHOLDS)
        values = rows.image_values if rows.image_values is not None else np.zeros((0, width))
        ji = [tuple(values[:, 1 + 3 * t + j].astype(np.int64) for j in range(3)) for t in range(len(JI_THRESHOLDS))]
        images = IdTable(rows.image_ids)
        matches = dict(outcome=grouped_outcome[by_score], npos=int(rows.npig[:, 0].sum()), n_images=n_images, ji=ji,
                       grouped_outcome=grouped_outcome, grouped_score=grouped_score,
                       offsets=np.searchsorted(rows.det_image[order], np.arange(n_images + 1)),
                       place=np.arange(n_images, dtype=np.int64), npos_image=values[:, 0].astype(np.int64),
                       images=images)
        result = self.reduce(matches, None, params)
        result.summary_lines = self.summarize(result, params)
        return result

    def summarize(self, result: EvalResult, params: CrowdHumanParams) -> list[str]:
        lines = [f"score_thr:{r['score_thr']:.1f}, mean_ratio:{r['JI']:.4f}, valids:{r['valids']}, "
                 f"total:{r['total']}, gtn:{r['gtn']}" for r in result.per_class]
        s = result.stats
        lines.append(f"AP:{s['AP']:.4f}, MR:{s['MR']:.4f}, JI:{s['JI']:.4f}.")
        return lines


CROWDHUMAN = CrowdHumanProtocol()
