"""Streaming evaluation for training loops: ``Evaluator.update()`` per batch, ``compute()`` once.

Streaming is a capability of the protocol, found through the registry
(:func:`deteval.protocols.get`): its :class:`~deteval.protocols.streaming.StreamSpec` says what a batch
carries, ``stream_match()`` matches a batch in :meth:`Evaluator.update` (the protocol's own
``match()``) and what is kept is flat arrays (:class:`EvaluatorState`), one row per detection kept.
:meth:`Evaluator.compute` only ranks and reduces, with the protocol's ``stream_result()``, after
mapping the user's image ids to one id-sorted order: the numbers are those of
:func:`deteval.evaluate` on the same boxes, bit for bit, whatever the batch order, the batch sizes,
the number of processes or of machines. A protocol without streaming refuses with one error.

States merge by concatenation (:func:`merge_states`, :meth:`Evaluator.merge`): the result ranks rows
by a key unique per row (COCO: category, image, rank; VOC: image, row in the image), so the order in
which shards arrive never changes a result. :mod:`deteval.evaluator.distributed` gathers them over
``torch.distributed``; :mod:`deteval.evaluator.dask` shards a dataset over Dask workers.

This module holds the Evaluator class; the state and its merging live in
:mod:`deteval.evaluator.state` (re-exported here), the parsing of batches in
:mod:`deteval.evaluator.inputs`.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from deteval import protocols
from deteval.errors import InputError
from deteval.evaluator.inputs import (
    TENSOR_BOX_FORMATS,
    Batch,
    as_list,
    category_table,
    first_bad,
    parse_batch,
    with_keypoints,
    with_masks,
)
from deteval.evaluator.state import (
    EvaluatorState,
    check_state,
    merge_states,
    result_from_state,
    state_config,
    state_from_matches,
)
from deteval.protocols.base import Protocol
from deteval.protocols.streaming import StreamPart, StreamSpec
from deteval.result import EvalResult
from deteval.types import Detections, GroundTruth, IdTable, has_duplicates, take_rows

__all__ = [
    "TENSOR_BOX_FORMATS",
    "Evaluator",
    "EvaluatorState",
    "merge_states",
    "result_from_state",
    "state_from_matches",
]


def _match_with_threads(
    protocol: Protocol, dets: Detections, gt: GroundTruth, params: Any, extra: dict, threads: int | None
) -> StreamPart:
    """The protocol's ``stream_match()`` with its kernels on ``threads`` threads (the calling thread's setting only)."""
    from deteval.jit import using_threads

    with using_threads(threads):
        return protocol.stream_match(dets, gt, params, extra)


def _streamed() -> list[str]:
    """The registered protocols with streaming evaluation (read on the error paths only: it imports them all)."""
    return [name for name in protocols.available() if protocols.get(name).stream_spec is not None]


def _spec_of(name: str) -> StreamSpec:
    return protocols.get(name).stream_spec


def _listed(values: Sequence, quote: bool = True) -> str:
    """``'a', 'b' and 'c'``."""
    items = [repr(v) if quote else str(v) for v in values]
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _dist_rank_world() -> tuple[int, int]:
    """(rank, world size) of torch.distributed when it is imported and initialised, else (0, 1)."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return int(dist.get_rank()), int(dist.get_world_size())
    return 0, 1


# --------------------------------------------------------------------------------------
# the evaluator


PICKLE_VERSION = 1  # the layout of a pickled Evaluator; a pickle of another is refused


def _cut_with_unknown(dets: Detections, unknown: np.ndarray, max_dets: int, b: Batch, call: int) -> Detections:
    """The predictions of known categories that lvis-api's ``LVISResults`` cut keeps when the ``unknown`` ones
    count in their image's ``max_dets`` (the highest scores, ties in the order given), with one warning."""
    from deteval.errors import warn
    from deteval.matching.federated import top_per_group

    keep = top_per_group(dets.image, dets.score, max_dets) & ~unknown
    labels = sorted({str(v) for v in b.dt_labels[unknown].tolist()})
    warn(
        f"preds: update {call}: skipped {int(unknown.sum())} predictions whose label is not one of the categories "
        f"({', '.join(labels[:10])}{' ...' if len(labels) > 10 else ''}), after they took their place in their "
        "image's cut, as lvis-api does"
    )
    return take_rows(dets, keep)


class Evaluator:
    """Evaluate detections batch by batch, in a training loop, over processes or machines.

    The inputs follow torchmetrics' ``MeanAveragePrecision``: per batch a list of
    prediction dicts (``boxes`` (n, 4), ``scores`` (n,), ``labels`` (n,)) and a list of
    target dicts (``boxes`` (m, 4), ``labels`` (m,); optional ``iscrowd`` (m,),
    ``area`` (m,), ``ignore`` (m,), ``image_id``), one dict per image, as NumPy arrays,
    lists or torch tensors on any device. Labels are integers or strings; float labels are
    read as integers when every value is a whole number (``2.0``), an error otherwise.
    ``compute().to_torchmetrics()`` gives the result under torchmetrics' key names.

    ``compute()`` gives the numbers of :func:`deteval.evaluate` on the same boxes, bit for
    bit, whatever the order and size of the batches; ``merge()`` and ``sync()`` combine
    evaluators (of other processes) with the same guarantee.

    Parameters
    ----------
    protocol : "coco" (default), "lvis", "voc07", "voc10", "dota" or "crowdpose"
        Any registered protocol with streaming evaluation; others are an error naming the protocol.

        ``"voc07"``, ``"voc10"``: PASCAL VOC's AP; a target may add ``difficult`` (m,) besides ``iscrowd`` and
        ``ignore`` (all three are VOC's difficult). Boxes "xyxy" (default) and "xywh" are read as given (the
        numbers of ``evaluate()`` on containers of the same boxes), "cxcywh" becomes xywh. Score ties rank (by
        ``ties``: "argsort", the default, or "item") as in a dataset listing its detections image by image,
        images ascending by id, each image's rows in the order given: ``evaluate()`` on such a dataset gives
        the same result.
        Their options (``iou_thrs``, ``integrator``, ``iou_test``, ``plus_one``, ``ties``, ``grid``) are
        keywords (``**options``). ``"dota"``: the same, on quadrilaterals, ``box_format`` "poly" (n, 8); a
        self-intersecting one is an error (the DOTA reader warns).

        ``"crowdpose"``: keypoints as xtcocotools evaluates them (``iou_type="keypoints"``); predictions carry
        ``keypoints`` (n, 3K) or (n, K, 3) (their box and area: the keypoints' extent, as ``loadRes`` reads
        keypoint results without ``bbox``), targets ``boxes``, ``keypoints``, optional ``num_keypoints`` (default
        the keypoints with visibility > 0) and ``iscrowd``, and the image's ``crowd_index`` (a number).

        ``"lvis"``: LVIS's federated evaluation, the numbers of ``deteval.evaluate(..., protocol="lvis")``
        (lvis-api 0.5.3). It needs each category's frequency: ``categories`` as the LVIS file's category
        records (``[{"id": 1, "frequency": "r", "name": ...}, ...]``; ``name`` optional), or ids / an
        id -> name mapping with ``frequencies``. A target may add ``neg_category_ids`` and
        ``not_exhaustive_category_ids`` (the image's LVIS lists, as lists, arrays or tensors of ids;
        missing: empty) and its ``area`` (LVIS's GT area; default the box's, or with masks the mask's);
        ``iscrowd`` is not read. Each image's 300 best results across categories are kept, ties in the
        order of its prediction dict (``max_dets``, one integer, changes the 300, as ``LVISResults``'
        ``max_dets`` does). The other COCO options below (``iou_thrs``, ``rec_thrs``, ``area_ranges``,
        ``use_cats``, ``compat``) do not apply; Fixed AP (a cut per category over the dataset) is not
        offered here.
    iou_type : "bbox", "segm", "obb" or "keypoints" (what the protocol streams)
        ``"obb"``: oriented boxes, hotcoco's ``obb`` IoU type (``deteval.evaluate(..., iou_type="obb")``), for
        rotated detectors (mmrotate); ``boxes`` as ``box_format`` "xywha" or "poly" below. Coco protocol only.
    box_format : "xyxy" (default, as torchmetrics), "xywh" or "cxcywh"; with iou_type "obb", "xywha" (default) or
        "poly"
        How ``boxes`` are given (the protocol lists its formats; the first is the default). COCO computes
        IoU on xywh: xyxy becomes xywh by one
        subtraction (``w = x2 - x1``), cxcywh by ``x = cx - w/2``; either may differ in the
        last bit from an xywh box stored in a JSON file. Give xywh to reproduce a COCO file's
        numbers exactly.

        ``"xywha"``: (n, 5) rows ``cx, cy, w, h, angle``, the angle in radians, corners the centre plus
        ``(+-w/2, +-h/2)`` turned by ``[[cos a, -sin a], [sin a, cos a]]`` (mmrotate's rotated boxes; hotcoco's
        ``obb``). Used as given: the result is that of ``deteval.evaluate`` on COCO records carrying the same
        values as ``"obb"`` (and a target's ``area``, when given, as ``area``), bit for bit. A GT's area is its
        ``area`` if given, else ``w*h``; a detection's ``w*h``. A negative ``w`` or ``h`` is an error.

        ``"poly"``: (n, 8) rows ``x1 y1 x2 y2 x3 y3 x4 y4``, a quadrilateral's vertices in order, either
        orientation, convex or not (mmrotate's ``qbox``). Evaluated as the polygons given, never refitted to
        rectangles: the IoU is the exact area of intersection (the quadrilateral kernel of
        :mod:`deteval.geometry.quads`) over ``|A1| + |A2| - intersection`` with shoelace areas ``|A|``, against
        a crowd GT over the detection's ``|A|``, 0 when that is not positive; a GT's area is its ``area`` if
        given, else ``|A|``, a detection's ``|A|``; everything else is xywha's rule. For the corners of an
        xywha box the intersection is computed alike, but the areas are shoelace sums rather than ``w*h``:
        the IoUs agree to rounding (a few 1e-15 relative), not bit for bit. A self-intersecting
        quadrilateral (two opposite edges cross) is an error.
    categories : sequence of ids, or mapping id -> name, optional
        The categories evaluated, as the ground truth's ``categories`` list does for
        :func:`deteval.evaluate`; a label outside them is an error. By default, the sorted
        union of the labels seen in targets and predictions.
    compat : bool, default True
        Reproduce pycocotools' quirks (see README, "Compat and fixed modes"). Annotations are
        numbered from 1 here, so pycocotools' "annotation id 0" quirk never applies.
    iou_thrs, area_ranges, max_dets, use_cats
        As for :func:`deteval.evaluate` with the coco protocol.
    rec_thrs : sequence of float, optional
        The recall thresholds of the precision curve (default pycocotools' ``np.linspace(0, 1, 101)``),
        ascending in [0, 1]. torchmetrics' defaults are float32 grids, which move some numbers: see
        :meth:`deteval.result.CocoResult.to_torchmetrics` to reproduce them.
    rank, world_size : int, optional
        For images without ``image_id`` only: the n-th such image this evaluator sees gets
        id ``n * world_size + rank``. By default read from ``torch.distributed`` when it is
        initialised at the first such image, else 0 and 1. With a ``DistributedSampler``
        that does not shuffle, these are the dataset indices.
    frequencies : mapping id -> "r", "c" or "f", optional
        The lvis protocol's category frequencies (rare, common, frequent), when ``categories`` is
        not given as LVIS records; alone, its keys are the categories.
    **options
        The protocol's other options (VOC's ``integrator``, ``plus_one`` ...), as :func:`deteval.evaluate`
        takes them; an option the protocol does not have is an error.
    num_threads : int or None, default 1
        Threads for the matching kernels in :meth:`update` (:func:`deteval.jit.using_threads`).
        One is fastest for a batch: handing work to threads costs more than a batch's matching,
        all the more when data-loader workers keep the cores busy. None uses the default
        (``NUMBA_NUM_THREADS`` if set, else the usable CPUs), which :meth:`compute` always uses.

    Examples
    --------
    >>> ev = Evaluator(box_format="xyxy")  # doctest: +SKIP
    >>> for images, targets in loader:  # doctest: +SKIP
    ...     ev.update(model(images), targets)
    >>> ev.compute().stats["AP"]  # doctest: +SKIP
    """

    def __init__(
        self,
        protocol: str = "coco",
        iou_type: str | None = None,
        box_format: str | None = None,
        categories: Sequence | Mapping | None = None,
        compat: bool = True,
        *,
        iou_thrs: Sequence[float] | None = None,
        rec_thrs: Sequence[float] | None = None,
        area_ranges: Mapping[str, Sequence[float]] | None = None,
        max_dets: Sequence[int] | None = None,
        use_cats: bool = True,
        rank: int | None = None,
        world_size: int | None = None,
        num_threads: int | None = 1,
        frequencies: Mapping[int, str] | None = None,
        **options: Any,
    ) -> None:
        try:
            proto = protocols.get(protocol)
        except InputError:
            rule = f"the Evaluator supports the protocols {_listed(_streamed())}, not {protocol!r}"
            raise InputError("protocol", None, rule) from None
        spec = proto.streaming()  # an InputError naming the protocol where it has none
        iou_type = proto.default_iou_type if iou_type is None else iou_type
        if iou_type not in spec.iou_types:
            rule = f"with protocol {protocol!r} the Evaluator evaluates {_listed(spec.iou_types)}, not {iou_type!r}"
            others = [n for n in _streamed() if iou_type in _spec_of(n).iou_types]
            rule += (
                f"; the {_listed(others, quote=False)} protocol evaluates it" if others
                else "; for other iou types use deteval.evaluate() or deteval.dask.evaluate_shards()"
            )  # fmt: skip
            raise InputError("iou_type", None, rule)
        formats = tuple(spec.formats[iou_type])
        box_format = formats[0] if box_format is None else box_format
        if box_format not in formats:
            rule = f"unknown box_format {box_format!r}; choose from {formats} (iou_type {iou_type!r})"
            raise InputError("box_format", None, rule)
        if (rank is None) != (world_size is None):
            raise InputError("rank", None, "give both rank and world_size, or neither")
        if world_size is not None and not (0 <= rank < world_size):
            raise InputError("rank", None, f"rank must be in [0, world_size), got rank={rank}, world_size={world_size}")
        if num_threads is not None and (isinstance(num_threads, bool) or int(num_threads) < 1):
            raise InputError(
                "num_threads", None, f"num_threads must be a positive integer or None, got {num_threads!r}"
            )
        self.protocol = protocol
        self.box_format = box_format
        self.num_threads = None if num_threads is None else int(num_threads)
        self.frequency = None
        given = {"iou_thrs": iou_thrs, "rec_thrs": rec_thrs, "area_ranges": area_ranges, "max_dets": max_dets}
        given = {k: v for k, v in given.items() if v is not None} | ({} if use_cats else {"use_cats": False})
        self.params = proto.stream_params(iou_type, compat, given | options)
        if spec.federated:
            from deteval.evaluator.lvis import lvis_categories

            self.categories, self.frequency = lvis_categories(categories, frequencies)
        else:
            if frequencies is not None:
                readers = _listed([n for n in _streamed() if _spec_of(n).federated], quote=False)
                raise InputError("frequencies", None, f"frequencies are read by the {readers} protocol only")
            self.categories = category_table(categories)
        self._config = state_config(self.params, self.categories, protocol, self.frequency)
        self._rank_world = None if rank is None else (int(rank), int(world_size))
        self.reset()

    # ---- state

    def reset(self) -> None:
        """Forget every update, merge and sync."""
        self._chunks: list[EvaluatorState] = []
        self._synced: EvaluatorState | None = None
        self._result: EvalResult | None = None
        self._auto_next = 0
        self._auto_rank_world: tuple[int, int] | None = self._rank_world
        self._id_mode: str | None = None
        self._id_kind: str | None = None
        self._label_kind: str | None = None
        self._calls = 0

    def state(self) -> EvaluatorState:
        """This evaluator's own state (its updates and what was merged into it), compacted.

        It excludes what :meth:`sync` gathered from other processes.
        """
        if not self._chunks:
            n_area, n_thr, n_count, _ = protocols.get(self.protocol).stream_shape(self.params)
            return EvaluatorState.empty(self._config, n_area, n_thr, n_count)
        if len(self._chunks) > 1:
            self._chunks = [merge_states(self._chunks)]
        return self._chunks[0]

    def __getstate__(self) -> dict:
        self.state()  # pickle one compact state
        d = dict(self.__dict__)
        d["_result"] = None
        d["_pickle_version"] = PICKLE_VERSION
        return d

    def __setstate__(self, d: dict) -> None:
        """Unpickling checks what it is given before anything is computed from it: the version, the
        parameters and every state (:func:`~deteval.evaluator.state.check_state`)."""
        if not isinstance(d, dict):
            raise InputError("unpickle", None, f"not an Evaluator's pickled state ({type(d).__name__})")
        d = dict(d)
        version = d.pop("_pickle_version", PICKLE_VERSION)  # pickles made before the version was kept: 1
        if version != PICKLE_VERSION:
            raise InputError("unpickle", None, f"an Evaluator pickled by format {version!r}, this is {PICKLE_VERSION}")
        chunks = d.get("_chunks")
        if not isinstance(chunks, list) or "_config" not in d or "params" not in d:
            raise InputError("unpickle", None, "not an Evaluator's pickled state (no chunks, config or params)")
        for k, chunk in enumerate(chunks):
            check_state(chunk, f"unpickle: state {k}")
            if chunk.config != d["_config"]:
                raise InputError("unpickle", f"state {k}", "made with other parameters than the evaluator's")
        if d.get("_synced") is not None:
            check_state(d["_synced"], "unpickle: synced state")
        self.__dict__.update(d)

    @property
    def nbytes(self) -> int:
        """Bytes held by this evaluator's own state."""
        return sum(c.nbytes for c in self._chunks)

    @property
    def num_images(self) -> int:
        return sum(c.num_images for c in self._chunks)

    def __repr__(self) -> str:
        return (
            f"Evaluator(protocol={self.protocol!r}, iou_type={self.params.iou_type!r}, box_format={self.box_format!r}, "
            f"images={self.num_images}, detections={sum(c.num_detections for c in self._chunks)})"
        )

    # ---- the three calls of a training loop

    def update(self, preds: Sequence[Mapping], target: Sequence[Mapping]) -> None:
        """Match one batch: ``preds`` and ``target`` hold one dict per image, in the same order.

        Raises
        ------
        InputError
            Lists of different lengths, a missing key, boxes not of shape (n, 4) (obb: (n, 5) or (n, 8)), arrays of
            different lengths within an image, NaN or infinite values, a negative width or
            height, labels outside ``categories`` (with the lvis protocol, target labels only: a prediction's
            takes its place in its image's cut, as in lvis-api, and is then dropped with a warning), an
            image id given twice in the batch, or
            images with and without ``image_id`` in one evaluator; with the lvis protocol, a
            ``neg_category_ids`` or ``not_exhaustive_category_ids`` that is not a flat list of
            integer ids or names an id outside ``categories``.
        """
        self._calls += 1
        preds, target = as_list(preds, "preds"), as_list(target, "target")
        if len(preds) != len(target):
            rule = f"{len(preds)} predictions for {len(target)} targets: give one dict per image in both lists"
            raise InputError("preds", f"update {self._calls}", rule)
        if not preds:
            return
        proto = protocols.get(self.protocol)
        spec = proto.streaming()
        iou_type = self.params.iou_type
        container = spec.formats[iou_type][self.box_format]  # how the protocol's containers hold the boxes
        if iou_type == "segm":
            preds, target, dt_masks, gt_masks, area_given = with_masks(preds, target, self.box_format, self._calls)
        if iou_type == "keypoints":
            preds, target, dt_kp, dt_kp_area, gt_kp, gt_nkp = with_keypoints(
                preds, target, self.box_format, self._calls
            )
        as_given = container not in ("xywh", "obb")
        b = parse_batch(
            preds, target, self.box_format, self._calls, as_given=as_given, flags=spec.target_flags,
            image_keys=spec.image_keys, box_keys=spec.target_values,
        )  # fmt: skip
        image_ids, id_mode, auto_next = self._assign_ids(b.image_ids)
        labels = np.concatenate([b.gt_labels, b.dt_labels])
        label_kind = "U" if labels.dtype.kind == "U" else ("i" if len(labels) else self._label_kind)
        # lvis: a prediction of a category outside the vocabulary takes its place in its image's cut, as in
        # lvis-api's LVISResults, and is then dropped (below); other protocols refuse it
        unknown = self._check_labels(b, label_kind, spec.federated)
        if spec.whole_vocabulary:  # every category: the federated lists index the whole table
            cats = self.categories
            cat_values, inverse = cats.ids, cats.lookup(labels)[0].astype(np.int32)
        else:
            cat_values, inverse = np.unique(labels, return_inverse=True)
            inverse = inverse.reshape(-1).astype(np.int32)
            cats = IdTable(cat_values)
        n_gt, n_img = len(b.gt_labels), len(image_ids)
        images = IdTable(np.arange(n_img, dtype=np.int64))
        gt = GroundTruth(
            image=b.gt_image,
            category=inverse[:n_gt],
            boxes=np.ascontiguousarray(b.gt_boxes),
            area=b.gt_area,
            crowd=b.gt_crowd,
            ignore=b.gt_ignore,
            difficult=b.gt_difficult if b.gt_difficult is not None else np.zeros(n_gt, bool),
            ann_id=np.arange(1, n_gt + 1, dtype=np.int64),
            images=images,
            categories=cats,
            box_format="xywh" if container == "obb" else container,
            source="target",
        )
        dets = Detections(
            image=b.dt_image,
            category=inverse[n_gt:],
            boxes=np.ascontiguousarray(b.dt_boxes),
            score=b.dt_scores,
            area=b.dt_area,
            box_format=gt.box_format,
            source="preds",
        )
        if container == "obb":  # the oriented boxes as given; the xywh boxes play no part
            gt = dataclasses.replace(gt, boxes=np.zeros((n_gt, 4)), obb=gt.boxes)
            dets = dataclasses.replace(dets, boxes=np.zeros((len(dets), 4)), obb=dets.boxes)
        if iou_type == "segm":  # masks and their areas; boxes play no part in mask IoU
            area = np.where(area_given, gt.area, gt_masks.area)
            gt = dataclasses.replace(gt, area=area, masks=gt_masks)
            dets = dataclasses.replace(dets, area=dt_masks.area, masks=dt_masks, mask_area=dt_masks.area)
        if iou_type == "keypoints":  # a prediction's box and area: its keypoints' extent
            gt = dataclasses.replace(gt, keypoints=gt_kp, num_keypoints=gt_nkp)
            dets = dataclasses.replace(dets, area=dt_kp_area, keypoints=dt_kp)
        if unknown is not None:
            dets = _cut_with_unknown(dets, unknown, self.params.max_dets, b, self._calls)
        extra: dict[str, Any] = {}
        if spec.federated:
            from deteval.evaluator.lvis import federated_of_batch

            extra["federated"] = federated_of_batch(target, b.image_ids, cats, self.frequency, self._calls)
        for j, key in enumerate(spec.image_keys):  # per image of the batch
            extra[key] = b.image_values[:, j]
        for j, key in enumerate(spec.target_values):  # per target box of the batch
            extra[key] = b.gt_values[:, j]
        part = _match_with_threads(proto, dets, gt, self.params, extra, self.num_threads)
        chunk = state_from_matches(part, image_ids, cat_values, self._config, id_mode)
        if spec.whole_vocabulary:  # keep the rows of the categories present, not one per category of the vocabulary
            used = chunk.cat_npig.any(axis=1) | (chunk.cat_ndet > 0)
            kept = {k: getattr(chunk, k)[used] for k in ("cat_label", "cat_npig", "cat_ndet")}
            chunk = dataclasses.replace(chunk, **kept)
        self._chunks.append(chunk)
        # committed only now: a batch that raised leaves the evaluator as it was
        self._id_mode, self._auto_next, self._label_kind = id_mode, auto_next, label_kind
        self._id_kind = image_ids.dtype.kind
        self._synced = None
        self._result = None

    def compute(self) -> EvalResult:
        """Rank and reduce what was updated, merged and synced; the result of :func:`deteval.evaluate`.

        Cheap to call again: the result is kept until the next update, merge, sync or reset.

        Before any :meth:`update` (or after empty batches only) the result is valid and empty, as
        pycocotools scores a ground truth with no annotations or no categories: every stat -1, and
        one per-class row per given category (none without ``categories``). Not an error: a rank
        of a distributed loop may see no data.
        """
        if self._result is None:
            state = self._synced if self._synced is not None else self.state()
            self._result = result_from_state(state, self.params, self.categories, self.frequency)
        return self._result

    # ---- combining evaluators

    def merge(self, *others: Evaluator | EvaluatorState) -> Evaluator:
        """Add the states of ``others`` (evaluators or states) to this one; returns ``self``.

        Merging is associative and commutative: any grouping and order of merges gives the
        same result. An evaluator's own state is taken (not what it gathered by :meth:`sync`).
        """
        states = [o.state() if isinstance(o, Evaluator) else o for o in others]
        for o, s in zip(others, states):
            if not isinstance(s, EvaluatorState):
                raise InputError("merge", None, f"expected an Evaluator or an EvaluatorState, got {type(o).__name__}")
        merged = merge_states([self.state(), *states])
        self._chunks = [merged]
        if merged.id_mode is not None:
            self._id_mode = merged.id_mode
            self._id_kind = merged.image_ids.dtype.kind
        if len(merged.cat_label):
            self._label_kind = "U" if merged.cat_label.dtype.kind == "U" else "i"
        self._synced = None
        self._result = None
        return self

    def sync(self, group: Any = None) -> Evaluator:
        """Gather the states of every rank of ``torch.distributed`` (see :func:`deteval.evaluator.distributed.sync`)."""
        from deteval.evaluator.distributed import sync

        sync(self, group=group)
        return self

    def adopt_state(self, state: EvaluatorState) -> None:
        """Compute from ``state`` (every rank's merged state, as :func:`deteval.evaluator.distributed.sync` gathers it).

        The evaluator's own state is kept apart: a later :meth:`update`, :meth:`merge` or
        :meth:`reset` drops the adopted one, so a second sync never counts a rank twice.
        """
        check_state(state, "sync")
        if state.config != self._config:
            rule = "the state was made with other protocol parameters or categories than this evaluator's"
            raise InputError("sync", None, rule)
        self._synced = state
        self._result = None

    # ---- helpers

    def _assign_ids(self, ids: list) -> tuple[np.ndarray, str, int]:
        """The batch's image ids, its id mode and the next automatic id number (not yet committed)."""
        given = [i is not None for i in ids]
        mode = "given" if all(given) else ("auto" if not any(given) else None)
        if mode is None:
            rule = "some images have an image_id and others do not: give it for all images or for none"
            raise InputError("image_id", f"update {self._calls}", rule)
        if self._id_mode is not None and mode != self._id_mode:
            rule = (
                "earlier images had an image_id given and these do not (or the reverse): "
                "give it for all images or for none"
            )
            raise InputError("image_id", f"update {self._calls}", rule)
        auto_next = self._auto_next
        if mode == "auto":
            if self._auto_rank_world is None:
                self._auto_rank_world = _dist_rank_world()
            rank, world = self._auto_rank_world
            out = (np.arange(auto_next, auto_next + len(ids), dtype=np.int64) * world) + rank
            auto_next += len(ids)
        else:
            kinds = {type(i) for i in ids}
            if len(kinds) > 1:
                raise InputError("image_id", f"update {self._calls}", "image ids mix integers and strings")
            out = np.array(ids, dtype=np.int64 if kinds == {int} else str)
            if has_duplicates(out):
                seen: set = set()
                dup = next(i for i in ids if i in seen or seen.add(i))
                raise InputError("image_id", f"update {self._calls}", f"image_id {dup!r} appears twice in this batch")
            if self._id_kind is not None and self._id_kind != out.dtype.kind:
                raise InputError("image_id", f"update {self._calls}", "image ids mix integers and strings")
        return out, mode, auto_next

    def _check_labels(self, b: Batch, kind: str | None, unknown_preds: bool = False) -> np.ndarray | None:
        """Refuse labels outside ``categories``; with ``unknown_preds``, return the mask of the predictions'
        instead (None when there is none)."""
        if self._label_kind is not None and kind != self._label_kind:
            raise InputError("labels", f"update {self._calls}", "labels mix integers and strings across updates")
        if self.categories is None:
            return None
        unknown = None
        for name, labels, rows in (("preds", b.dt_labels, b.dt_image), ("target", b.gt_labels, b.gt_image)):
            if not len(labels):
                continue
            _, found = self.categories.lookup(labels)
            if unknown_preds and name == "preds":
                unknown = None if found.all() else ~found
                continue
            if not found.all():
                row, img = first_bad(~found, rows)
                rec = f"update {self._calls}, {name}[{img}]"
                if b.image_ids[img] is not None:
                    rec += f" (image_id={b.image_ids[img]!r})"
                rule = f"label {labels[row].item()!r} is not one of the categories {self.categories.ids.tolist()}"
                raise InputError(name, rec, rule)
        return unknown
