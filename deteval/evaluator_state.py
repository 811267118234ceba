"""The streaming evaluator's state: flat arrays that merge by concatenation, and their reduction.

An :class:`EvaluatorState` is what :class:`~deteval.evaluator.Evaluator` keeps after
matching a batch, what :mod:`deteval.distributed` gathers over ``torch.distributed`` and
what :mod:`deteval.dask` workers return. States merge by concatenation
(:func:`merge_states`): accumulation sorts rows by (category, image, rank), a key unique per
row, so the order in which shards arrive never changes a result. This module knows nothing
of the Evaluator class, so every layer that moves states imports it without a cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from deteval.errors import InputError
from deteval.protocols.coco import CocoMatches, CocoParams, result_from_matches
from deteval.protocols.lvis import LvisParams
from deteval.result import EvalResult
from deteval.types import IdTable, sorted_unique

__all__ = ["EvaluatorState", "merge_states", "result_from_state", "state_config", "state_from_matches"]


@dataclass(frozen=True)
class EvaluatorState:
    """Everything :meth:`Evaluator.compute` needs, as flat NumPy arrays; picklable.

    Image ids and labels are the user's own values (int64 or str), so states built
    anywhere (batches, processes, Dask workers) concatenate without renumbering.
    Memory: per kept detection ``4 + 8 + 4 + 8 + A*T`` bytes (image, label, rank, score,
    one int8 per area range and IoU threshold): 64 bytes with COCO's defaults (A=4, T=10);
    8 bytes per image; ``16 + 8*A`` bytes per (batch, category present in it).
    """

    config: tuple  # what must agree for states to merge (see Evaluator._config)
    id_mode: str | None  # "given", "auto", or None while there are no images
    image_ids: np.ndarray  # (I,) int64 or str: the images, in arrival order
    det_image: np.ndarray  # int32 (N,): index into image_ids
    det_label: np.ndarray  # (N,) int64 or str: the detection's label (category id)
    det_rank: np.ndarray  # int32 (N,): rank by score within (image, label)
    det_score: np.ndarray  # float64 (N,)
    det_state: np.ndarray  # int8 (N, A, T): FP 0, TP 1, ignored 2
    cat_label: np.ndarray  # (P,) int64 or str: a label seen, once per shard that saw it
    cat_npig: np.ndarray  # int64 (P, A): ground truth that counts, per area range
    cat_ndet: np.ndarray  # int64 (P,): detections before the max-dets cut

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return sum(getattr(self, f.name).nbytes for f in fields(self) if f.name not in ("config", "id_mode"))

    @property
    def num_images(self) -> int:
        return len(self.image_ids)

    @property
    def num_detections(self) -> int:
        """Detections kept (after the per-image, per-category max-dets cut)."""
        return len(self.det_score)

    @classmethod
    def empty(cls, config: tuple, n_area: int, n_thr: int) -> EvaluatorState:
        i64 = np.zeros(0, np.int64)
        return cls(
            config=config,
            id_mode=None,
            image_ids=i64,
            det_image=np.zeros(0, np.int32),
            det_label=i64,
            det_rank=np.zeros(0, np.int32),
            det_score=np.zeros(0, np.float64),
            det_state=np.zeros((0, n_area, n_thr), np.int8),
            cat_label=i64,
            cat_npig=np.zeros((0, n_area), np.int64),
            cat_ndet=i64,
        )


def _concat_ids(arrays: list[np.ndarray], what: str) -> np.ndarray:
    """Concatenate id arrays (int64 or str); empty arrays do not decide the kind."""
    full = [a for a in arrays if len(a)]
    if not full:
        return arrays[0] if arrays else np.zeros(0, np.int64)
    kinds = {a.dtype.kind for a in full}
    if len(kinds) > 1:
        raise InputError(what, None, "some states use integer ids and others strings: use one kind everywhere")
    return full[0] if len(full) == 1 else np.concatenate(full)


def merge_states(states: Sequence[EvaluatorState]) -> EvaluatorState:
    """One state holding every row of ``states`` (any order: results do not depend on it).

    Raises
    ------
    InputError
        States made with different parameters or categories, or one giving image ids
        and another assigning them automatically.
    """
    states = list(states)
    if not states:
        raise InputError("merge", None, "nothing to merge")
    first = states[0]
    for s in states[1:]:
        if s.config != first.config:
            raise InputError(
                "merge", None,
                "the states were made with different protocol parameters or categories: "
                f"{_describe(first.config)} vs {_describe(s.config)}",
            )  # fmt: skip
    modes = {s.id_mode for s in states} - {None}
    if len(modes) > 1:
        raise InputError(
            "merge", None,
            "one state has image ids given by the user and another has ids assigned automatically; "
            "automatic ids of different evaluators can name different images alike: give image_id everywhere",
        )  # fmt: skip
    if len(states) == 1:
        return first
    offsets = np.cumsum([0] + [s.num_images for s in states[:-1]])
    return EvaluatorState(
        config=first.config,
        id_mode=modes.pop() if modes else None,
        image_ids=_concat_ids([s.image_ids for s in states], "image_id"),
        det_image=np.concatenate([s.det_image + np.int32(o) for s, o in zip(states, offsets)]).astype(np.int32),
        det_label=_concat_ids([s.det_label for s in states], "labels"),
        det_rank=np.concatenate([s.det_rank for s in states]),
        det_score=np.concatenate([s.det_score for s in states]),
        det_state=np.concatenate([s.det_state for s in states]),
        cat_label=_concat_ids([s.cat_label for s in states], "labels"),
        cat_npig=np.concatenate([s.cat_npig for s in states]),
        cat_ndet=np.concatenate([s.cat_ndet for s in states]),
    )


def _describe(config: tuple) -> str:
    return ", ".join(f"{k}={v}" for k, v in config)


def state_config(
    params: CocoParams | LvisParams,
    categories: IdTable | None,
    protocol: str = "coco",
    frequency: np.ndarray | None = None,
) -> tuple:
    """The key that states must share to merge: protocol, parameters and categories (LVIS: and frequencies)."""
    shared = (
        ("protocol", protocol),
        ("iou_type", params.iou_type),
        ("iou_thrs", tuple(params.iou_thrs.tolist())),
        ("rec_thrs", tuple(params.rec_thrs.tolist())),
        ("max_dets", params.max_dets),
        ("area_ranges", tuple(zip(params.area_labels, map(tuple, params.area_ranges.tolist())))),
    )
    if isinstance(params, LvisParams):
        return (
            *shared,
            ("categories", tuple(categories.ids.tolist())),
            ("frequency", tuple(np.asarray(frequency).tolist())),
        )
    return (
        *shared,
        ("use_cats", params.use_cats),
        ("compat", params.compat),
        ("categories", None if categories is None else tuple(categories.ids.tolist())),
    )


def state_from_matches(
    matches: CocoMatches,
    image_ids: np.ndarray,
    category_ids: np.ndarray,
    config: tuple,
    id_mode: str | None,
) -> EvaluatorState:
    """An :class:`EvaluatorState` from one shard's matches.

    ``matches.det_image`` indexes ``image_ids`` (the shard's images, each listed once) and
    ``matches.det_category`` indexes ``category_ids`` (the shard's categories, ascending).
    """
    m = matches
    cats = np.asarray(category_ids)
    n_cat = len(cats)
    if m.npig.shape[0] == n_cat:  # per category
        cat_npig, cat_ndet = m.npig, m.ndet
        det_label = cats[m.det_category] if n_cat else np.zeros(0, np.int64)
    else:  # categories pooled: one row; which label carries it does not matter (compute sums them)
        cat_npig = np.zeros((n_cat, m.npig.shape[1]), np.int64)
        cat_ndet = np.zeros(n_cat, np.int64)
        if n_cat:
            cat_npig[0], cat_ndet[0] = m.npig[0], m.ndet[0]
        det_label = np.repeat(cats[:1], len(m.det_score)) if n_cat else np.zeros(0, np.int64)
    return EvaluatorState(
        config=config,
        id_mode=id_mode if len(image_ids) else None,
        image_ids=np.asarray(image_ids),
        det_image=np.asarray(m.det_image, np.int32),
        det_label=det_label,
        det_rank=np.asarray(m.det_rank, np.int32),
        det_score=np.asarray(m.det_score, np.float64),
        det_state=np.asarray(m.state, np.int8),
        cat_label=cats,
        cat_npig=np.asarray(cat_npig, np.int64),
        cat_ndet=np.asarray(cat_ndet, np.int64),
    )


def result_from_state(
    state: EvaluatorState,
    params: CocoParams | LvisParams,
    categories: IdTable | None = None,
    frequency: np.ndarray | None = None,
) -> EvalResult:
    """Rank and reduce a (merged) state: the numbers of :func:`deteval.evaluate`.

    Images are ordered by ascending id (``np.unique`` of every id seen), as evaluate()
    orders the ground truth's images. ``categories=None`` evaluates the sorted union of
    the labels seen in targets and predictions. With :class:`LvisParams`, ``categories`` and
    ``frequency`` (per category, an index into ``deteval.io.lvis.FREQUENCIES``) are required.

    Raises
    ------
    InputError
        An image id seen more than once, or a label outside ``categories``.
    """
    ids, inverse, counts = np.unique(state.image_ids, return_inverse=True, return_counts=True)
    if len(counts) and counts.max() > 1:
        dup = ids[int(np.argmax(counts > 1))]
        dup = dup.item() if hasattr(dup, "item") else dup
        rule = (
            f"this image was given {int(counts.max())} times; every image must be updated exactly once across "
            "batches, processes and merged evaluators (DistributedSampler pads the last batch by repeating "
            "images: set drop_last or skip the padded samples)"
        )
        raise InputError("image_id", repr(dup), rule)
    table = categories if categories is not None else IdTable(sorted_unique(state.cat_label))
    n_area = state.det_state.shape[1]
    lvis = isinstance(params, LvisParams)
    if lvis or params.use_cats:
        k = len(table)
        row_cat, found = table.lookup(state.cat_label)
        det_cat, det_found = table.lookup(state.det_label)
        if not (found.all() and det_found.all()):
            bad = state.cat_label[~found] if not found.all() else state.det_label[~det_found]
            raise InputError("labels", None, f"label {bad[0]!r} is not one of the categories {table.ids.tolist()}")
        npig = np.zeros((k, n_area), np.int64)
        ndet = np.zeros(k, np.int64)
        np.add.at(npig, row_cat, state.cat_npig)
        np.add.at(ndet, row_cat, state.cat_ndet)
    else:
        det_cat = np.zeros(len(state.det_score), np.int32)
        npig = state.cat_npig.sum(axis=0, keepdims=True).astype(np.int64).reshape(1, n_area)
        ndet = np.array([state.cat_ndet.sum()], np.int64)
    matches = CocoMatches(
        det_category=det_cat.astype(np.int32),
        det_image=inverse.reshape(-1)[state.det_image].astype(np.int32),
        det_rank=state.det_rank,
        det_score=state.det_score,
        state=state.det_state,
        npig=npig,
        ndet=ndet,
    )
    if lvis:
        from deteval.protocols.lvis import result_from_matches as lvis_result

        return lvis_result(matches, table, frequency, params)
    return result_from_matches(matches, table, params)
