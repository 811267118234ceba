"""PASCAL VOC protocols: ``voc07`` (11-point AP) and ``voc10`` (all-point AP).

One evaluation: VOC matching (:mod:`deteval.matching.voc`) at every IoU
threshold in one pass, then one ranking per class (descending score,
:func:`deteval.accumulation.accumulate.rank_by_category`) reduced by
an integrator from :mod:`deteval.accumulation.integrators`.

Defaults (``configs/voc07.toml``, ``configs/voc10.toml``) reproduce
py-faster-rcnn's ``voc_eval.py`` (and detectron2's VOC evaluator): IoU test
``>`` thr, the +1 pixel convention, the 11-point grid ``np.arange(0., 1.1, 0.1)``,
IoU 0.5, and their ranking: ``np.argsort(-confidence)`` of a class's detections in
file order, whose order of equal scores is that of numpy's introsort before numpy 1.25
(``ties="argsort"``, :mod:`deteval.matching.argsort_classic`; the same bits on every machine,
where newer numpy's argsort depends on the CPU). ``ties="item"`` ranks equal scores in row
order (a stable sort). A class's rows are those of its comp4 file in file order; per-image text
files give them image by image (files by name), each file's lines in order; COCO results, in list
order. Where they differ deliberately:

* precision is guarded (``tp / max(tp + fp, eps)``) as in detectron2, so a
  class whose top detection hits a difficult object gets no NaN;
* classes without positives (no non-difficult ground truth) get no AP; they
  are listed with ``no_positives: true`` and left out of the mean.

Input ``voc_eval.py`` scores though deteval would rather not (inverted boxes, ``nan``/``inf`` in
detection files, ``<difficult>`` other than 0/1) is scored with its arithmetic, with one warning per
kind; ``strict=True`` refuses it (:mod:`deteval.io.voc`, docs/protocols.md).

``iou_test="ge"`` with ``grid="matlab"`` (for voc07) gives the MATLAB devkit's
rules. Several IoU thresholds give per-threshold mAPs and their mean under
``"mAP"`` (detectron2 reports the mean over 0.50:0.95 as VOC "AP"). Several
integrators report the same matches under each definition: the first one is
the headline, the others are suffixed ``":<integrator>"``.

COCO boxes (``xywh``) are converted to corners as ``x2 = x + w``, ``y2 = y + h``;
the +1 convention then applies to them as to VOC boxes (``plus_one=False`` for
continuous coordinates). COCO ``iscrowd`` and ``ignore`` ground truth are treated
as VOC difficult: not counted as positives, and absorbing the detections whose
best match they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval.errors import InputError
from deteval.protocols import presets
from deteval.protocols.base import Option, Protocol, split_list
from deteval.protocols.replay import Replay, ReplayRecord, kept_replay
from deteval.protocols.streaming import StreamPart, StreamRows, StreamSpec
from deteval.protocols.voc_params import (
    PRESET_KEYS,
    VocParams,
    checked_params,
    iou_key,
    parse_iou_thresholds,
)
from deteval.result import EvalResult, Outcomes, VocResult
from deteval.text import display_width, pad, printable
from deteval.types import Detections, GroundTruth, IdTable
from deteval.vocabulary import FILE_BOX_FORMATS, INTEGRATORS, IOU_TESTS, TIE_POLICIES, VOC11_GRIDS


@dataclass(frozen=True)
class VocMatches:
    """Every detection's outcome at every IoU threshold (1 TP, 0 FP, -1 ignored), with the counts to rank them."""

    outcome: np.ndarray  # int8 (T, D)
    category: np.ndarray  # int32 (D,)
    image: np.ndarray  # int32 (D,)
    score: np.ndarray  # float64 (D,)
    npos: np.ndarray  # int64 (K,): ground truth that is not difficult
    ndet: np.ndarray  # int64 (K,)
    claim: np.ndarray | None = None  # int64 (T, D) under ties="argsort" (match_in_rank_order), else None


def _corners(boxes: np.ndarray, box_format: str) -> np.ndarray:
    if box_format == "xyxy":
        return np.ascontiguousarray(boxes, dtype=np.float64)
    x, y, w, h = boxes.T
    return np.ascontiguousarray(np.stack([x, y, x + w, y + h], axis=1), dtype=np.float64)


def match_in_rank_order(
    run: Any, dt: Detections, n_cat: int, params: VocParams
) -> tuple[np.ndarray, np.ndarray | None]:
    """``(outcome (T, D), claim)`` of ``run(dt)`` (:func:`deteval.matching.voc.match_voc`'s four arrays), each
    image's detections of a class visited in the class's ranking.

    The matching visits an (image, class) group's detections by descending score, ties in row order. Under
    ``ties="argsort"`` the reference visits them in its ranking of the class (``np.argsort(-confidence)``),
    where equal scores of one image need not keep row order: ``run`` is given the rows in that ranking, so
    that row order is the ranking's, and the arrays are put back in the rows' order. ``claim`` (int64 (T, D),
    under ``"argsort"`` only, else None): the ground-truth row each detection claims at each threshold (its
    best one, passing the IoU test, not difficult), -1 for none: of a claim's detections the first ranked is
    the TP, which lets a resample re-rank equal scores (:mod:`deteval.accumulation.resample_voc`).
    """
    if params.ties != "argsort":
        return run(dt)[0], None
    from deteval.accumulation.accumulate import rank_by_category
    from deteval.types import take_rows

    order, _ = rank_by_category(dt.category, dt.score, n_cat, params.ties)
    ranked = run(take_rows(dt, order))
    outcome, best_gt, best_iou = np.empty_like(ranked[0]), np.empty_like(ranked[2]), np.empty_like(ranked[3])
    outcome[:, order], best_gt[order], best_iou[order] = ranked[0], ranked[2], ranked[3]
    thrs = np.asarray(params.iou_thrs, np.float64)[:, None]
    passes = best_iou >= thrs if params.iou_test == "ge" else best_iou > thrs
    claim = np.where(passes & (outcome != -1) & (best_gt >= 0), best_gt, -1).astype(np.int64)
    return outcome, claim


def voc_matches(
    matched: tuple[np.ndarray, np.ndarray | None], gt: GroundTruth, dt: Detections, difficult: np.ndarray
) -> VocMatches:
    """:class:`VocMatches` of :func:`match_in_rank_order`'s ``(outcome, claim)``: positives are the ground truth
    not ``difficult``."""
    n_cat = len(gt.categories)
    outcome, claim = matched
    return VocMatches(
        outcome=outcome,
        claim=claim,
        category=dt.category,
        image=dt.image,
        score=dt.score,
        npos=np.bincount(gt.category[~difficult], minlength=n_cat).astype(np.int64),
        ndet=np.bincount(dt.category, minlength=n_cat).astype(np.int64),
    )


class VocProtocol(Protocol):
    """PASCAL VOC detection AP, as py-faster-rcnn's ``voc_eval.py`` computes it; one instance per year rule."""

    iou_types = ("bbox",)  # of deteval.vocabulary.IOU_TYPES
    options = (
        Option("iou_thrs", "--iou-thrs", "IoU threshold(s): 0.5 (default), 0.5,0.75, 0.5:0.95 (detectron2's ten)",
               "list", lambda v: parse_iou_thresholds(split_list(v)), metavar="T", aliases=("--iou",)),
        Option("integrator", "--integrator",
               f"AP integrator(s) from {', '.join(INTEGRATORS)}; the first is the headline "
               "(default: voc11 for voc07, all_points for voc10)", "list", split_list, choices=INTEGRATORS,
               metavar="NAME"),
        Option("iou_test", "--iou-test", "gt: IoU > t (voc_eval.py, detectron2; default); ge: IoU >= t (MATLAB devkit)",
               choices=IOU_TESTS),
        Option("plus_one", "--no-plus-one", "continuous IoU, without VOC's +1 pixel convention", "switch",
               value=False),
        Option("ties", "--ties", "argsort: equal scores as np.argsort(-score) under numpy < 1.25, voc_eval.py's "
               "order (default); item: stable order; group: tie blocks as scikit-learn", choices=TIE_POLICIES),
        Option("grid", "--voc11-grid", "11-point grid: numpy np.arange(0,1.1,0.1) (default) or matlab 0:0.1:1",
               choices=VOC11_GRIDS),
        Option("names", "--names", "class names file: one per line, indices in file order", metavar="FILE"),
        Option("image_set", "--image-set", "image ids to evaluate (VOC ImageSets/Main list)", metavar="FILE"),
        Option("box_format", "--box-format", "boxes of per-image text files (default xyxy)", choices=FILE_BOX_FORMATS),
    )  # fmt: skip

    def __init__(self, name: str, title: str) -> None:
        self.name = self.preset_name = name
        self.title = title

    renamed_options = {"iou": "iou_thrs"}

    def scored(self, npos: np.ndarray) -> np.ndarray:
        """bool (K,): the classes that get an AP and count in the mean; VOC's: those with positives."""
        return npos > 0

    def make_params(
        self, iou_type: str, compat: bool, preset: Mapping[str, Any] | None, strict: bool, options: dict[str, Any]
    ) -> VocParams:
        build = lambda values: checked_params(self.name, values, compat, strict)  # noqa: E731
        return presets.resolve(presets.builtin(self.preset_name), preset, options, PRESET_KEYS, build)

    def load(self, preds: Any, gt: Any, params: VocParams) -> tuple[Detections, GroundTruth]:
        # VOC's file readers are imported when VOC loads: the CLI reads every protocol's options at start
        from deteval.io.voc_inputs import load_voc_inputs

        return load_voc_inputs(
            preds, gt, names=params.names, image_set=params.image_set, box_format=params.box_format,
            strict=params.strict,
        )  # fmt: skip

    def match(self, preds: Detections, gt: GroundTruth, params: VocParams) -> VocMatches:
        from deteval.matching.groups import group_by_image_category
        from deteval.matching.voc import match_voc

        dt = preds
        if len(dt) and (dt.image.max() >= len(gt.images) or dt.category.max() >= len(gt.categories)):
            raise InputError(dt.source, None, "detections index images or categories outside the ground truth's tables")
        if params.plus_one:
            _warn_if_normalised(gt, dt)
        difficult = gt.difficult | gt.crowd | gt.ignore

        def run(dt: Detections) -> tuple[np.ndarray, ...]:
            groups = group_by_image_category(gt, dt, use_cats=True, max_det=None)
            return match_voc(
                _corners(gt.boxes, gt.box_format), difficult, _corners(dt.boxes, dt.box_format), groups,
                list(params.iou_thrs), iou_test=params.iou_test, plus_one=params.plus_one,
            )  # fmt: skip

        return voc_matches(match_in_rank_order(run, dt, len(gt.categories), params), gt, dt, difficult)

    def reduce(self, matches: VocMatches, gt: GroundTruth, params: VocParams) -> VocResult:
        from deteval.accumulation import integrators as integ
        from deteval.accumulation.accumulate import rank_by_category

        m, thrs, names_i = matches, params.iou_thrs, params.integrators
        n_cat = len(gt.categories)
        valid = self.scored(m.npos)
        order, offsets = rank_by_category(m.category, m.score, n_cat, params.ties)
        scores = np.ascontiguousarray(m.score[order])
        ap = np.empty((len(thrs), n_cat, len(names_i)))
        for t in range(len(thrs)):
            o = m.outcome[t, order]
            ap[t] = integ.average_precision_segments(
                o == 1, o == 0, offsets, m.npos, list(names_i), ties=params.ties, scores=scores, grid=params.grid
            )
        ap[:, valid & (m.npos == 0)] = 0.0  # a scored class without positives (DOTA): AP 0
        m_ap = class_means(ap, valid)
        rank = np.empty(len(m.score), np.int64)
        rank[order] = np.arange(len(m.score)) - np.repeat(offsets[:-1], np.diff(offsets))
        result = VocResult(
            protocol=params.protocol,
            iou_type=params.iou_type,
            stats=_stats(m_ap, valid, params),
            per_class=_per_class(ap, valid, m, gt, params),
            params=params.to_dict(),
            outcomes=Outcomes(
                category=m.category,
                image=m.image,
                score=m.score,
                # VOC's -1 (matched a difficult box) is the shared "ignored" state 2
                state=np.where(m.outcome == -1, 2, m.outcome).astype(np.int8).T[:, None, :].copy(),
                npos=m.npos[:, None],
                iou_thrs=np.array(thrs),
                area_labels=("all",),
                category_ids=gt.categories.ids,
                category_names=tuple(gt.categories.name_of(k) for k in range(n_cat)),
            ),
            ap=ap,
            mAP=m_ap,
            iou_thrs=np.array(thrs),
            npos=m.npos,
            ndet=m.ndet,
            outcome=m.outcome,
            rank=rank,
        )
        result.replay = replay_of(m, gt, params)
        return result

    def summarize(self, result: VocResult, params: VocParams) -> list[str]:
        thrs, names_i, ap, m_ap = params.iou_thrs, params.integrators, result.ap, result.mAP
        valid = self.scored(result.npos)
        head = (
            f"{params.protocol}: AP = {', '.join(names_i)}; IoU {'>' if params.iou_test == 'gt' else '>='} "
            f"{', '.join(f'{t:g}' for t in thrs)}; {'+1 pixel' if params.plus_one else 'no +1'}; ties: {params.ties}"
        )
        cols = [(t, i) for i in range(len(names_i)) for t in range(len(thrs))]
        labels = [f"AP{iou_key(thrs[t])}" + ("" if i == 0 else f":{names_i[i]}") for t, i in cols]
        names = [printable(r["name"]) for r in result.per_class]  # a newline in a name would break the table
        width = max([len("class")] + [display_width(n) for n in names])  # CJK and emoji take 2 columns
        widths = [max(8, len(c)) for c in labels]  # a column as wide as its header ("AP50:non_interpolated")
        lines = [
            head,
            f"{'class':<{width}}  {'npos':>5}  {'ndet':>5}  " + "  ".join(f"{c:>{w}}" for c, w in zip(labels, widths)),
        ]
        for k, r in enumerate(result.per_class):
            vals = "  ".join(
                f"{ap[t, k, i]:{w}.4f}" if valid[k] else f"{'-':>{w}}" for (t, i), w in zip(cols, widths)
            )
            note = "  (no positives)" if not valid[k] else ""
            lines.append(f"{pad(names[k], width)}  {r['npos']:>5}  {r['ndet']:>5}  {vals}{note}")
        vals = "  ".join(
            f"{m_ap[t, i]:{w}.4f}" if m_ap[t, i] >= 0 else f"{'-':>{w}}" for (t, i), w in zip(cols, widths)
        )
        lines.append(f"{'mAP':<{width}}  {'':>5}  {'':>5}  {vals}")
        if len(thrs) > 1:
            for i, name in enumerate(names_i):
                mean = result.stats["mAP" + ("" if i == 0 else ":" + name)]
                lines.append(f"mAP (mean over IoU thresholds, {name}) = {mean:.4f}")
        return lines

    def replay(self, result: EvalResult) -> VocReplayStats:
        return VocReplayStats(kept_replay(result), self)

    # ---- streaming (deteval.evaluator, deteval.evaluator.dask)
    #
    # A detection's outcome depends on its image's rows only, so each batch is matched alone; what is kept is
    # per detection its image, class, score, outcome at each threshold and its row among its image's rows.
    # The result ranks them as reduce() does (every tie policy), over the rows of a dataset that lists the
    # detections image by image, images ascending by id, each image's rows in the order given: that of
    # evaluate() on such a dataset, whatever the batches, their order and the shards merged. Under
    # ties="argsort" that ranking orders an image's equal scores by every row of the class, which no batch
    # knows: each detection also keeps, per threshold, the ground truth it claims (its index among its
    # image's, in two more state columns), and the result gives each claim's TP to the first ranked.

    stream_spec = StreamSpec(
        formats={"bbox": {"xyxy": "xyxy", "xywh": "xywh", "cxcywh": "xywh"}},
        target_flags=("iscrowd", "ignore", "difficult"),
    )
    loading_options: tuple[str, ...] = ("names", "image_set", "box_format", "classes")  # read by load() only

    def stream_params(self, iou_type: str, compat: bool, options: dict[str, Any]) -> VocParams:
        known = [o.name for o in self.options if o.name not in self.loading_options]
        for name in options:
            if name not in known:
                rule = f"not an option of protocol {self.name!r} in the Evaluator; its options are {', '.join(known)}"
                raise InputError(name, None, rule)
        return self.params(iou_type, compat=compat, **options)

    def stream_outcome_columns(self, config: tuple) -> int | None:
        # under ties="argsort" the columns past the first are the claim's bytes (stream_shape)
        return 1 if ("ties", repr("argsort")) in config else None

    def stream_shape(self, params: VocParams) -> tuple[int, int, int, int]:
        # state columns: the outcome; under ties="argsort" the claim's two bytes besides
        return (3 if params.ties == "argsort" else 1), len(params.iou_thrs), 1, 0

    def stream_match(self, preds: Detections, gt: GroundTruth, params: VocParams, extra: Mapping) -> StreamPart:
        m = self.match(preds, gt, params)
        order = np.argsort(preds.image, kind="stable")  # the row of each detection among its image's rows
        first = np.searchsorted(preds.image[order], preds.image[order])
        rank = np.empty(len(preds), np.int32)
        rank[order] = np.arange(len(preds)) - first
        state = np.where(m.outcome == -1, 2, m.outcome).astype(np.int8).T[:, None, :]
        if m.claim is not None:
            state = np.concatenate([state, _claim_bytes(m.claim, gt)], axis=1)
        return StreamPart(
            det_image=np.asarray(m.image, np.int32),
            det_category=np.asarray(m.category, np.int32),
            det_rank=rank,
            det_score=np.asarray(m.score, np.float64),
            det_state=state,
            npig=m.npos[:, None].astype(np.int64),
            ndet=m.ndet.astype(np.int64),
        )

    def stream_result(self, rows: StreamRows, categories: IdTable, params: VocParams, extra: Mapping) -> VocResult:
        order = np.lexsort((rows.det_rank, rows.det_image))  # the dataset's rows: image by image, each as given
        state = rows.det_state[order, 0, :].T
        m = VocMatches(
            outcome=np.where(state == 2, -1, state).astype(np.int8),
            category=rows.det_category[order],
            image=rows.det_image[order],
            score=rows.det_score[order],
            npos=rows.npig[:, 0].copy(),
            ndet=rows.ndet,
        )
        if params.ties == "argsort" and len(order):
            from deteval.accumulation.accumulate import rank_by_category
            from deteval.matching.voc import first_claims_win

            claim = _claims_of_bytes(rows.det_state[order, 1:, :])
            ranked, _ = rank_by_category(m.category, m.score, len(categories), params.ties)
            position = np.empty(len(ranked), np.int64)
            position[ranked] = np.arange(len(ranked))
            first_claims_win(m.outcome, claim, m.image.astype(np.int64), position)
        result = self.reduce(m, _no_rows(IdTable(rows.image_ids), categories), params)
        result.replay = None  # the positives' rows are not kept: no bootstrap of a streamed result
        result.summary_lines = self.summarize(result, params)
        return result


def _claim_bytes(claim: np.ndarray, gt: GroundTruth) -> np.ndarray:
    """int8 (D, 2, T): each claim (T, D) as the index of its ground truth among its image's, plus 1 (0: none),
    in two bytes."""
    by_image = np.argsort(gt.image, kind="stable")
    counts = np.bincount(gt.image, minlength=len(gt.images)) if len(gt) else np.zeros(len(gt.images), np.int64)
    local = np.empty(len(gt), np.int64)
    local[by_image] = np.arange(len(gt)) - np.repeat(np.cumsum(counts) - counts, counts)
    if len(gt) and local.max() >= 65535:
        raise InputError("target", None, "an image holds 65,535 ground-truth boxes or more: too many to stream")
    code = np.where(claim >= 0, local[np.maximum(claim, 0)] + 1, 0).astype(np.uint16).T  # (D, T)
    return np.stack([(code & 255).astype(np.uint8), (code >> 8).astype(np.uint8)], axis=1).view(np.int8)


def _claims_of_bytes(state: np.ndarray) -> np.ndarray:
    """int64 (T, D) claims from :func:`_claim_bytes`' columns (D, 2, T): -1 none, else an index in the image."""
    b = state.view(np.uint8).astype(np.int64)
    return (b[:, 0, :] | (b[:, 1, :] << 8)).T - 1


def _no_rows(images: IdTable, categories: IdTable) -> GroundTruth:
    """A ground truth of no rows over ``images`` and ``categories``: the tables reduce() reads."""
    z = np.zeros(0, np.int32)
    b = np.zeros(0, bool)
    return GroundTruth(z, z, np.zeros((0, 4)), np.zeros(0), b, b, b, np.zeros(0, np.int64), images, categories)


def _warn_if_normalised(gt: GroundTruth, dt: Detections) -> None:
    """Warn when every coordinate lies in [0, 1]: normalised boxes, which the +1 pixel rule swamps.

    With +1 a box [0.1, 0.1, 0.3, 0.3] is 1.2 pixels wide, so any two such boxes overlap by most of
    their area and the scores mean little. Pixel boxes all inside [0, 1] do not exist in practice,
    so the test has no false alarms worth the name; an empty ground truth says nothing.
    """
    if len(gt) == 0:
        return
    if all(np.all((b >= 0) & (b <= 1)) for b in (gt.boxes, dt.boxes) if len(b)):
        from deteval.errors import warn

        warn(
            f"{gt.source}, {dt.source}: every box coordinate lies in [0, 1] (normalised coordinates?) but VOC's "
            "+1 pixel rule is on, which adds 1 to every width and height; pass plus_one=False (--no-plus-one) "
            "for normalised or continuous coordinates"
        )


@dataclass(frozen=True)
class VocReplay(ReplayRecord):
    """What re-ranking a resample or a slice of the images needs (bootstrap, slices, compare): the
    matches, the positives' images and classes, the image table's file order (sorted ids when the loader
    keeps none) and the parameters. Kept on the result (``EvalResult.replay``) by :meth:`VocProtocol.reduce`."""

    matches: VocMatches
    pos_image: np.ndarray  # int32 (P,): the ground truth counted as positives (not difficult)
    pos_category: np.ndarray  # int32 (P,)
    image_ids: np.ndarray  # (I,), sorted
    file_order: np.ndarray  # int64 (I,)
    n_cat: int
    params: VocParams


def replay_of(matches: VocMatches, gt: GroundTruth, params: VocParams) -> VocReplay:
    """The :class:`VocReplay` of an evaluation of ``gt`` (positives: not difficult, crowd or ignored)."""
    positive = ~(gt.difficult | gt.crowd | gt.ignore)
    images = gt.images
    return VocReplay(
        matches=matches,
        pos_image=gt.image[positive],
        pos_category=gt.category[positive],
        image_ids=images.ids,
        file_order=images.file_order(),
        n_cat=len(gt.categories),
        params=params,
    )


class VocReplayStats(Replay):
    """The VOC family's replay: each class re-ranked over the images drawn (:mod:`deteval.accumulation.resample_voc`),
    reduced by the protocol's integrators and scoring (``VocProtocol.scored``) as :meth:`VocProtocol.reduce`."""

    def __init__(self, record: VocReplay, protocol: VocProtocol) -> None:
        super().__init__(record)
        self.protocol = protocol

    def build_index(self):
        from deteval.accumulation.resample_voc import build_voc_index

        r = self.record
        m = r.matches
        args = (m.category, m.image, m.score, m.outcome, r.pos_image, r.pos_category, r.n_cat, len(r.image_ids))
        if r.params.ties == "argsort":
            return build_voc_index(*args, ties="argsort", claim=m.claim)
        return build_voc_index(*args)

    def replicate(self, index, draw: np.ndarray, by_draw: bool = True) -> list[float]:
        from deteval.accumulation import integrators as integ
        from deteval.accumulation.resample_voc import voc_replicate

        p = self.record.params
        outcome, scores, offsets, npos = voc_replicate(index, draw, by_draw)
        ap = np.empty((len(p.iou_thrs), len(npos), len(p.integrators)))
        for t in range(len(p.iou_thrs)):
            o = outcome[t]
            ap[t] = integ.average_precision_segments(
                o == 1, o == 0, offsets, npos, list(p.integrators), ties=p.ties, scores=scores, grid=p.grid
            )
        valid = self.protocol.scored(npos)
        ap[:, valid & (npos == 0)] = 0.0  # a scored class without positives (DOTA): AP 0, as reduce
        return list(stats_of_ap(ap, valid, p).values())


def class_means(ap: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """mAP (T, I): the mean of ``ap`` (T, K, I) over the ``valid`` classes, -1 where none is."""
    n_t, _, n_i = ap.shape
    return np.array([[np.mean(ap[t, valid, i]) if valid.any() else -1.0 for i in range(n_i)] for t in range(n_t)])


def stats_of_ap(ap: np.ndarray, valid: np.ndarray, params: VocParams) -> dict[str, float]:
    """The stats of per-class AP (T, K, I) with ``valid`` (K,) the classes scored: what :meth:`VocProtocol.reduce`
    reports, for a resample's AP (deteval.analysis.intervals)."""
    return _stats(class_means(ap, valid), valid, params)


def _suffix(i: int, name: str) -> str:
    return "" if i == 0 else f":{name}"


def _stats(m_ap: np.ndarray, valid: np.ndarray, params: VocParams) -> dict[str, float]:
    stats: dict[str, float] = {}
    for i, name in enumerate(params.integrators):
        stats["mAP" + _suffix(i, name)] = float(np.mean(m_ap[:, i])) if valid.any() else -1.0
        if len(params.iou_thrs) > 1:
            for t, thr in enumerate(params.iou_thrs):
                stats[f"mAP{iou_key(thr)}{_suffix(i, name)}"] = float(m_ap[t, i])
    return stats


def _per_class(ap: np.ndarray, valid: np.ndarray, m: VocMatches, gt: GroundTruth, params: VocParams) -> list[dict]:
    rows = []
    for k in range(len(gt.categories)):
        row: dict[str, Any] = {"category_id": gt.categories.id_of(k), "name": gt.categories.name_of(k)}
        for i, name in enumerate(params.integrators):
            row["AP" + _suffix(i, name)] = float(np.mean(ap[:, k, i])) if valid[k] else None
            if len(params.iou_thrs) > 1:
                for t, thr in enumerate(params.iou_thrs):
                    row[f"AP{iou_key(thr)}{_suffix(i, name)}"] = float(ap[t, k, i]) if valid[k] else None
        row.update(npos=int(m.npos[k]), ndet=int(m.ndet[k]), no_positives=not bool(valid[k]))
        rows.append(row)
    return rows


VOC07 = VocProtocol("voc07", "voc07 protocol (VOC2007 11-point AP)")
VOC10 = VocProtocol("voc10", "voc10 protocol (VOC2010+ all-point AP)")
