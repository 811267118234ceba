"""CityPersons: the log-average miss rate (MR^-2) per setup, as the dataset authors' ``eval_MR_multisetup.py``.

Rules (each as the reference's code has it):

* only category id 1 is scored; the images are every image id of the ground truth;
* setups on the annotation's ``height`` (not ``bbox[3]``) and ``vis_ratio``, bounds inclusive:
  Reasonable [50, 1e10] x [0.65, 1e10], Reasonable_small [50, 75] x [0.65, 1e10], Reasonable_occ=heavy
  [50, 1e10] x [0.2, 0.65], All [20, 1e10] x [0.2, 1e10]; ground truth outside is ignored, as is one
  whose ``ignore`` is 1;
* per image, detections by descending score (stable), the first ``max_dets`` kept, then those with
  ``bbox[3]`` in ``[lo / 1.25, hi * 1.25)``; matched by :func:`deteval.matching.pedestrian.match_caltech`;
* all images' kept, unignored detections by descending score (stable, images in id order); FPPI = FP /
  number of images; recall = TP / unignored ground truth; at each of the literal points 0.0100, 0.0178,
  0.0316, 0.0562, 0.1000, 0.1778, 0.3162, 0.5623, 1.0000 the recall at the last index with FPPI <= the
  point, where no such index (-1) reads the final recall; no detection left: recall 0 at every point;
* MR = ``np.exp(np.mean(np.log(1 - recall)))`` over the 9 points; -1 where the setup has no positives.

Beyond the reference: an empty results list, or images without any detection, are scored (the reference
crashes on the first); a repeated annotation id is an error (the reference would score its last record twice).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from deteval.errors import InputError
from deteval.protocols import presets
from deteval.protocols.base import Protocol
from deteval.protocols.replay import Replay, ReplayRecord, kept_replay
from deteval.protocols.streaming import StreamPart, StreamRows, StreamSpec
from deteval.result import EvalResult
from deteval.types import Detections, GroundTruth, IdTable

PRESET_KEYS = ("iou_thr", "max_dets", "exp_filter")
# the reference's Params: 1e5 ** 2 is its "no upper bound"
SETUPS: tuple[tuple[str, tuple[float, float], tuple[float, float]], ...] = (
    ("Reasonable", (50, 1e5**2), (0.65, 1e5**2)),
    ("Reasonable_small", (50, 75), (0.65, 1e5**2)),
    ("Reasonable_occ=heavy", (50, 1e5**2), (0.2, 0.65)),
    ("All", (20, 1e5**2), (0.2, 1e5**2)),
)
# the reference's literal points (not 10 ** np.linspace(-2, 0, 9))
FPPI_POINTS = np.array([0.0100, 0.0178, 0.0316, 0.0562, 0.1000, 0.1778, 0.3162, 0.5623, 1.0000])
PERSON = 1  # the category id scored


@dataclass(frozen=True)
class CityPersonsParams:
    protocol: str = "citypersons"
    iou_type: str = "bbox"
    iou_thr: float = 0.5
    max_dets: int = 1000
    exp_filter: float = 1.25

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["setups"] = {name: {"height": list(h), "visibility": list(v)} for name, h, v in SETUPS}
        out["fppi_points"] = FPPI_POINTS.tolist()
        return out


def _checked(values: Mapping[str, Any]) -> CityPersonsParams:
    thr, max_dets, exp = values.get("iou_thr"), values.get("max_dets"), values.get("exp_filter")
    if isinstance(thr, bool) or not isinstance(thr, (int, float)) or not 0 < thr <= 1:
        raise InputError("iou_thr", None, f"must be a number in (0, 1], got {thr!r}")
    if isinstance(max_dets, bool) or not isinstance(max_dets, int) or max_dets < 1:
        raise InputError("max_dets", None, f"must be a positive integer, got {max_dets!r}")
    if isinstance(exp, bool) or not isinstance(exp, (int, float)) or not exp >= 1:
        raise InputError("exp_filter", None, f"must be a number >= 1, got {exp!r}")
    return CityPersonsParams(iou_thr=float(thr), max_dets=max_dets, exp_filter=float(exp))


def miss_rate_points(outcome: np.ndarray, score: np.ndarray, image: np.ndarray, npos: int, n_images: int,
                     points: np.ndarray = FPPI_POINTS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Recall at each FPPI point, with the curve (fppi, recall): the reference's ``accumulate`` for one setup.

    ``outcome``/``score``/``image``: the kept detections, grouped by image in id order and by descending score
    within one (the reference's concatenation order, which its stable global sort keeps for ties).
    """
    order = np.argsort(-score, kind="mergesort")
    out = outcome[order]
    out = out[out != -1]
    tp = np.cumsum(out == 1).astype(np.float64)
    fp = np.cumsum(out == 0).astype(np.float64)
    fppi = fp / n_images
    recall = tp / npos
    q = np.zeros(len(points))
    if len(recall):  # the reference's IndexError on an empty list leaves every point 0
        q = recall[np.searchsorted(fppi, points, side="right") - 1]
    return q, fppi, recall


def log_average_miss_rate(recall_points: np.ndarray) -> float:
    """``exp(mean(log(1 - recall)))``, numpy's reduction as the reference's (a plain sum differs in the last bits)."""
    with np.errstate(divide="ignore"):  # recall 1 at a point: log 0 = -inf, MR 0
        return float(np.exp(np.mean(np.log(1 - np.asarray(recall_points, np.float64)))))


@dataclass(frozen=True, eq=False)
class CityPersonsReplay(ReplayRecord):
    """What re-ranking a resample or a slice of the images needs, per setup: the scored detections grouped by
    image (dense index order; by descending score, stable, within one), each image's offsets into them and
    its count of positives."""

    outcome: tuple[np.ndarray, ...]  # per setup, int8 (D,)
    score: tuple[np.ndarray, ...]  # per setup, float64 (D,)
    offsets: tuple[np.ndarray, ...]  # per setup, int64 (I + 1,)
    npos: tuple[np.ndarray, ...]  # per setup, int64 (I,)
    has_person: bool
    image_ids: np.ndarray
    file_order: np.ndarray


class CityPersonsReplayStats(Replay):
    """The four MRs of a draw of images, as evaluating the materialised dataset gives them: a bootstrap's
    images renumbered in draw order (the reference concatenates images by id), a slice's in id order; the
    FPPI's denominator the draw's length."""

    def build_index(self) -> CityPersonsReplay:
        return self.record

    def replicate(self, index: CityPersonsReplay, draw: np.ndarray, by_draw: bool = True) -> list[float]:
        draw = np.asarray(draw, np.int64)
        if not by_draw:
            draw = np.sort(draw)
        out = []
        for outcome, score, offsets, npos_img in zip(index.outcome, index.score, index.offsets, index.npos):
            npos = int(npos_img[draw].sum())
            if npos == 0 or not index.has_person:
                out.append(-1.0)
                continue
            starts, counts = offsets[draw], offsets[draw + 1] - offsets[draw]
            rows = np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(int(counts.sum()))
            q, _, _ = miss_rate_points(outcome[rows], score[rows], None, npos, len(draw))
            out.append(log_average_miss_rate(q))
        return out


class CityPersonsProtocol(Protocol):
    """CityPersons MR^-2 (``eval_MR_multisetup.py``): four setups, one number each."""

    name = "citypersons"
    title = "citypersons protocol (CityPersons log-average miss rate, MR^-2)"
    iou_types = ("bbox",)
    options = ()
    preset_name = "citypersons"

    def make_params(self, iou_type: str, compat: bool, preset: Mapping[str, Any] | None, strict: bool,
                    options: dict[str, Any]) -> CityPersonsParams:
        return presets.resolve(presets.builtin(self.preset_name), preset, options, PRESET_KEYS, _checked)

    def load(self, preds: Any, gt: Any, params: CityPersonsParams) -> tuple[Detections, GroundTruth]:
        from deteval.io.citypersons import load_citypersons

        dets, truth = load_citypersons(preds, gt)
        if dets.nan_scores:
            raise InputError(dets.source, None, "a score is NaN, which the reference's sort places arbitrarily")
        return dets, truth

    def match(self, preds: Detections, gt: GroundTruth, params: CityPersonsParams) -> list[dict[str, Any]]:
        from deteval.matching.pedestrian import match_caltech

        height = getattr(gt, "height", None)
        visibility = getattr(gt, "visibility", None)
        if height is None or visibility is None:
            raise InputError(gt.source, None, "CityPersons needs each annotation's height and vis_ratio")
        n_images = len(gt.images)
        cat, found = gt.categories.lookup(np.array([PERSON]))
        person = int(cat[0]) if found[0] else -1
        g = np.flatnonzero(gt.category == person)
        d = np.flatnonzero(preds.category == person)
        # detections: per image by descending score (stable), the first max_dets
        d = d[np.lexsort((-preds.score[d], preds.image[d]))]
        d_img = preds.image[d]
        first = np.searchsorted(d_img, d_img, side="left")
        d = d[np.arange(len(d)) - first < params.max_dets]
        d_height = preds.boxes[d, 3]
        out = []
        for label, (hlo, hhi), (vlo, vhi) in SETUPS:
            h, v = height[g], visibility[g]
            ignored = gt.ignore[g] | (h < hlo) | (h > hhi) | (v < vlo) | (v > vhi)
            order = np.lexsort((ignored, gt.image[g]))  # per image, unignored first (stable)
            gs, gi = g[order], ignored[order]
            keep = (d_height >= hlo / params.exp_filter) & (d_height < hhi * params.exp_filter)
            ds = d[keep]
            gt_start = np.searchsorted(gt.image[gs], np.arange(n_images + 1))
            dt_start = np.searchsorted(preds.image[ds], np.arange(n_images + 1))
            outcome = match_caltech(gt.boxes[gs], gi, gt.ann_id[gs] == 0, gt_start, preds.boxes[ds], dt_start,
                                    params.iou_thr)
            out.append(dict(setup=label, height=(hlo, hhi), visibility=(vlo, vhi), outcome=outcome,
                            score=preds.score[ds], image=preds.image[ds], npos=int((~gi).sum()),
                            has_person=person >= 0, n_images=n_images, dt_start=dt_start, rows=ds,
                            npos_image=np.bincount(gt.image[gs][~gi], minlength=n_images)))
        return out

    def reduce(self, matches: list[dict[str, Any]], gt: GroundTruth, params: CityPersonsParams) -> EvalResult:
        stats: dict[str, float] = {}
        rows = []
        for m in matches:
            npos = m["npos"]
            if npos == 0 or not m["has_person"]:
                mr, q = -1.0, None
            else:
                q, _, _ = miss_rate_points(m["outcome"], m["score"], m["image"], npos, m["n_images"])
                mr = log_average_miss_rate(q)
            stats[m["setup"]] = mr
            rows.append(dict(setup=m["setup"], height=list(m["height"]), visibility=list(m["visibility"]),
                             MR=mr, npos=npos, ndet=int((m["outcome"] != -1).sum()),
                             recall_at_fppi=None if q is None else q.tolist()))
        replay = CityPersonsReplay(
            outcome=tuple(m["outcome"] for m in matches), score=tuple(m["score"] for m in matches),
            offsets=tuple(m["dt_start"] for m in matches), npos=tuple(m["npos_image"] for m in matches),
            has_person=bool(matches[0]["has_person"]), image_ids=gt.images.ids, file_order=gt.images.file_order(),
        )
        return EvalResult(protocol=self.name, iou_type="bbox", stats=stats, per_class=rows, params=params.to_dict(),
                          replay=replay)

    def replay(self, result: EvalResult) -> CityPersonsReplayStats:
        return CityPersonsReplayStats(kept_replay(result))

    def miss_rate_curves(self, result: EvalResult, max_points: int | None = None) -> dict[str, Any]:
        """Per setup, the miss rate against FPPI of the ranked detections (deteval.accumulation.miss_rate),
        from the result's replay record; a setup without positives has none (null)."""
        from deteval.accumulation.miss_rate import curve

        rec = kept_replay(result)
        n_images = len(rec.image_ids)
        curves: dict[str, Any] = {}
        for (label, _, _), outcome, score, npos_img in zip(SETUPS, rec.outcome, rec.score, rec.npos):
            npos = int(npos_img.sum())
            if npos == 0 or not rec.has_person:
                curves[label] = None
                continue
            q, fppi, recall = miss_rate_points(outcome, score, None, npos, n_images)
            order = np.argsort(-score, kind="mergesort")
            ranked = score[order][outcome[order] != -1]
            read = np.searchsorted(fppi, FPPI_POINTS, side="right") - 1
            read = np.where(read < 0, len(fppi) - 1, read) if len(fppi) else np.full(len(FPPI_POINTS), -1)
            curves[label] = curve(fppi, 1 - recall, ranked, read, FPPI_POINTS, 1 - q, log_average_miss_rate(q),
                                  max_points)
        return {"protocol": self.name, "miss_rate_curves": curves}

    # ---- streaming (deteval.evaluator)
    #
    # An image's outcomes depend on its own rows only, so each batch is matched alone. Kept per person
    # detection: its image, score, its rank among its image's detections by descending score (stable: the
    # order the reference concatenates them in) and its outcome in each setup (2 where the setup drops it:
    # past max_dets, outside the height filter, or matched to ignored ground truth); per image, each
    # setup's positives (for bootstrap). The result ranks them as reduce() does, images by ascending id:
    # evaluate()'s numbers on the same images. Targets carry no annotation ids: the id-0 quirk never arises.

    stream_spec = StreamSpec(
        formats={"bbox": {"xywh": "xywh", "xyxy": "xywh", "cxcywh": "xywh"}},
        target_flags=("ignore",),
        target_values=("height", "vis_ratio"),
    )

    def stream_params(self, iou_type: str, compat: bool, options: dict[str, Any]) -> CityPersonsParams:
        for name in options:  # the preset's parameters only, as evaluate() takes them
            raise InputError(name, None, f"protocol {self.name!r} takes no options (its parameters are its preset's)")
        return self.params(iou_type, compat=compat)

    def stream_shape(self, params: CityPersonsParams) -> tuple[int, int, int, int]:
        return len(SETUPS), 1, len(SETUPS), len(SETUPS)

    def stream_match(
        self, preds: Detections, gt: GroundTruth, params: CityPersonsParams, extra: Mapping[str, Any]
    ) -> StreamPart:
        from dataclasses import fields

        from deteval.io.citypersons import PedestrianGroundTruth

        if getattr(gt, "height", None) is None:  # a batch: the targets' per-box numbers
            base = {f.name: getattr(gt, f.name) for f in fields(GroundTruth)}
            gt = PedestrianGroundTruth(**base, height=np.asarray(extra["height"], np.float64),
                                       visibility=np.asarray(extra["vis_ratio"], np.float64))
        matches = self.match(preds, gt, params)
        n_images, n_cat = len(gt.images), len(gt.categories)
        cat, found = gt.categories.lookup(np.array([PERSON]))
        d = np.flatnonzero(preds.category == (int(cat[0]) if found[0] else -1))
        d = d[np.lexsort((-preds.score[d], preds.image[d]))]  # per image by descending score, stable
        first = np.searchsorted(preds.image[d], preds.image[d], side="left")
        rank = np.empty(len(preds), np.int64)
        rank[d] = np.arange(len(d)) - first
        state = np.full((len(preds), len(SETUPS), 1), 2, np.int8)
        for s, m in enumerate(matches):
            state[m["rows"], s, 0] = np.where(m["outcome"] == -1, 2, m["outcome"])
        keep = np.flatnonzero((state != 2).any(axis=(1, 2)))  # a detection that counts in some setup
        npig = np.zeros((n_cat, len(SETUPS)), np.int64)
        if found[0]:
            npig[int(cat[0])] = [m["npos"] for m in matches]
        return StreamPart(
            det_image=preds.image[keep].astype(np.int32),
            det_category=preds.category[keep].astype(np.int32),
            det_rank=rank[keep].astype(np.int32),
            det_score=preds.score[keep].astype(np.float64),
            det_state=state[keep],
            npig=npig,
            ndet=np.bincount(preds.category[keep], minlength=n_cat).astype(np.int64),
            image_values=np.stack([m["npos_image"] for m in matches], axis=1).astype(np.float64).reshape(
                n_images, len(SETUPS)),
        )

    def stream_result(
        self, rows: StreamRows, categories: IdTable, params: CityPersonsParams, extra: Mapping[str, Any]
    ) -> EvalResult:
        n_images = len(rows.image_ids)
        cat, found = categories.lookup(np.array([PERSON]))
        person = int(cat[0]) if found[0] else -1
        order = np.lexsort((rows.det_rank, rows.det_image))  # the reference's concatenation order
        order = order[rows.det_category[order] == person]
        values = rows.image_values if rows.image_values is not None else np.zeros((n_images, len(SETUPS)))
        matches = []
        for s, (label, h, v) in enumerate(SETUPS):
            sel = order[rows.det_state[order, s, 0] != 2]
            image = rows.det_image[sel].astype(np.int64)
            matches.append(dict(
                setup=label, height=h, visibility=v, outcome=rows.det_state[sel, s, 0].astype(np.int8),
                score=rows.det_score[sel], image=image, npos=int(rows.npig[person, s]) if person >= 0 else 0,
                has_person=person >= 0, n_images=n_images, dt_start=np.searchsorted(image, np.arange(n_images + 1)),
                npos_image=values[:, s].astype(np.int64),
            ))  # fmt: skip
        images = IdTable(rows.image_ids)
        z = np.zeros(0, np.int32)
        b = np.zeros(0, bool)
        stub = GroundTruth(z, z, np.zeros((0, 4)), np.zeros(0), b, b, b, np.zeros(0, np.int64), images, categories)
        result = self.reduce(matches, stub, params)
        result.summary_lines = self.summarize(result, params)
        return result

    def summarize(self, result: EvalResult, params: CityPersonsParams) -> list[str]:
        lines = []
        for row in result.per_class:
            (hlo, hhi), (vlo, vhi) = row["height"], row["visibility"]
            mr = row["MR"]
            value = "   n/a" if mr < 0 else f"{mr * 100:6.2f}%"
            lines.append(f" Average Miss Rate  (MR) @ {row['setup']:<20} [ IoU={params.iou_thr:0.2f} | "
                         f"height=[{hlo:0.0f}:{hhi:0.0f}] | visibility=[{vlo:0.2f}:{vhi:0.2f}] ] = {value}")
        return lines


CITYPERSONS = CityPersonsProtocol()
