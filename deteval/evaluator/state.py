"""The streaming evaluator's state: flat arrays that merge by concatenation, and their reduction.

An :class:`EvaluatorState` is what :class:`~deteval.evaluator.Evaluator` keeps after
matching a batch, what :mod:`deteval.evaluator.distributed` gathers over ``torch.distributed`` and
what :mod:`deteval.evaluator.dask` workers return. States merge by concatenation
(:func:`merge_states`): accumulation sorts rows by (category, image, rank), a key unique per
row, so the order in which shards arrive never changes a result. This module knows nothing
of the Evaluator class, so every layer that moves states imports it without a cycle, and nothing of
a particular protocol: the protocol named in the state's config matches shards into parts
(:meth:`~deteval.protocols.base.Protocol.stream_match`) and reduces the merged rows
(:meth:`~deteval.protocols.base.Protocol.stream_result`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from deteval import protocols
from deteval.errors import InputError
from deteval.protocols.streaming import StreamPart, StreamRows
from deteval.result import EvalResult
from deteval.types import IdTable, sorted_unique

__all__ = [
    "EvaluatorState",
    "check_state",
    "merge_states",
    "protocol_of",
    "result_from_state",
    "state_config",
    "state_from_matches",
]


@dataclass(frozen=True)
class EvaluatorState:
    """Everything :meth:`Evaluator.compute` needs, as flat NumPy arrays; picklable.

    Image ids and labels are the user's own values (int64 or str), so states built
    anywhere (batches, processes, Dask workers) concatenate without renumbering.
    Memory: per kept detection ``4 + 8 + 4 + 8 + A*T`` bytes (image, label, rank, score,
    one int8 per area range and IoU threshold): 64 bytes with COCO's defaults (A=4, T=10);
    8 bytes per image (and 8 per image value); ``16 + 8*C`` bytes per (batch, category present in it).
    The columns are the protocol's (:class:`~deteval.protocols.streaming.StreamPart`).
    """

    config: tuple  # what must agree for states to merge (see Evaluator._config)
    id_mode: str | None  # "given", "auto", or None while there are no images
    image_ids: np.ndarray  # (I,) int64 or str: the images, in arrival order
    det_image: np.ndarray  # int32 (N,): index into image_ids
    det_label: np.ndarray  # (N,) int64 or str: the detection's label (category id)
    det_rank: np.ndarray  # int32 (N,): the protocol's order within the image (COCO: rank by score per label)
    det_score: np.ndarray  # float64 (N,)
    det_state: np.ndarray  # int8 (N, A, T): FP 0, TP 1, ignored 2
    cat_label: np.ndarray  # (P,) int64 or str: a label seen, once per shard that saw it
    cat_npig: np.ndarray  # int64 (P, C): the protocol's counts (COCO: ground truth that counts, per area range)
    cat_ndet: np.ndarray  # int64 (P,): detections before the max-dets cut
    image_values: np.ndarray | None = None  # float64 (I, F): per image, numbers the protocol reads (or None)

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        values = (getattr(self, f.name) for f in fields(self) if f.name not in ("config", "id_mode"))
        return sum(v.nbytes for v in values if v is not None)

    @property
    def num_images(self) -> int:
        return len(self.image_ids)

    @property
    def num_detections(self) -> int:
        """Detections kept (after the per-image, per-category max-dets cut)."""
        return len(self.det_score)

    @classmethod
    def empty(cls, config: tuple, n_area: int, n_thr: int, n_count: int | None = None) -> EvaluatorState:
        """No rows; ``n_count`` count columns (default ``n_area``)."""
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
            cat_npig=np.zeros((0, n_area if n_count is None else n_count), np.int64),
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


_KINDS = {  # field: (dtype kinds allowed, dimensions)
    "image_ids": ("iuU", 1), "det_image": ("iu", 1), "det_label": ("iuU", 1), "det_rank": ("iu", 1),
    "det_score": ("f", 1), "det_state": ("i", 3), "cat_label": ("iuU", 1), "cat_npig": ("iu", 2),
    "cat_ndet": ("iu", 1),
}  # fmt: skip


def check_state(state: Any, what: str = "state") -> EvaluatorState:
    """``state`` checked before any arithmetic: an :class:`EvaluatorState` whose arrays have the kinds,
    dimensions and lengths of one, image indices within its images and outcomes 0, 1 or 2;
    :class:`InputError` naming the first field that is not (a state damaged, or from another version)."""
    if not isinstance(state, EvaluatorState):
        raise InputError(what, None, f"expected an EvaluatorState, got {type(state).__name__}")
    if not isinstance(state.config, tuple) or state.id_mode not in (None, "given", "auto"):
        raise InputError(what, None, "config or id_mode is not an Evaluator's: a damaged state")
    for name, (kinds, ndim) in _KINDS.items():
        v = getattr(state, name)
        if not isinstance(v, np.ndarray) or v.dtype.kind not in kinds or v.ndim != ndim:
            got = f"{v.dtype}, {v.ndim}-d" if isinstance(v, np.ndarray) else type(v).__name__
            raise InputError(what, name, f"must be a {ndim}-d array of kind {kinds!r}, got {got}")
    n, p, i = len(state.det_score), len(state.cat_label), len(state.image_ids)
    for name in ("det_image", "det_label", "det_rank", "det_state"):
        if len(getattr(state, name)) != n:
            raise InputError(what, name, f"has {len(getattr(state, name))} rows, det_score {n}")
    for name in ("cat_npig", "cat_ndet"):
        if len(getattr(state, name)) != p:
            raise InputError(what, name, f"has {len(getattr(state, name))} rows, cat_label {p}")
    if n and (state.det_image.min() < 0 or state.det_image.max() >= i):
        raise InputError(what, "det_image", f"indexes images outside 0..{i - 1}")
    outcomes = _outcome_columns(state.config)
    if n and not np.isin(state.det_state[:, :outcomes], (0, 1, 2)).all():
        raise InputError(what, "det_state", "holds outcomes other than 0 (FP), 1 (TP) and 2 (ignored)")
    values = state.image_values
    if values is not None and (not isinstance(values, np.ndarray) or values.ndim != 2 or len(values) != i):
        raise InputError(what, "image_values", f"must be a 2-d array with a row per image ({i})")
    return state


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
    states = [check_state(s, f"merge: state {k}") for k, s in enumerate(states)]
    first = states[0]
    for k, s in enumerate(states[1:], 1):
        if s.config != first.config:
            raise InputError(
                "merge", None,
                "the states were made with different protocol parameters or categories: "
                f"{_describe(first.config)} vs {_describe(s.config)}",
            )  # fmt: skip
        if s.det_state.shape[1:] != first.det_state.shape[1:] or s.cat_npig.shape[1:] != first.cat_npig.shape[1:]:
            raise InputError(
                f"merge: state {k}", "det_state",
                f"outcomes of shape {s.det_state.shape[1:]}, not {first.det_state.shape[1:]} as the first state's",
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
        image_values=_concat_values(states),
    )


def _concat_values(states: list[EvaluatorState]) -> np.ndarray | None:
    """The image values of ``states`` in image order; None where no state has any (an empty state has none)."""
    width = next((s.image_values.shape[1] for s in states if s.image_values is not None), None)
    if width is None:
        return None
    parts = [s.image_values if s.image_values is not None else np.zeros((s.num_images, width)) for s in states]
    return np.concatenate(parts).astype(np.float64, copy=False)


def _describe(config: tuple) -> str:
    return ", ".join(f"{k}={v}" for k, v in config)


def _outcome_columns(config: tuple) -> int | None:
    """The leading ``det_state`` columns of outcomes, as the state's protocol lays them (None: all)."""
    try:
        return protocols.get(protocol_of(config)).stream_outcome_columns(config)
    except (InputError, LookupError, TypeError):  # a damaged config: every column is checked as outcomes
        return None


def state_config(
    params: Any,
    categories: IdTable | None,
    protocol: str = "coco",
    frequency: np.ndarray | None = None,
) -> tuple:
    """The key that states must share to merge: protocol, parameters and categories (and frequencies, if any)."""
    out = (
        ("protocol", protocol),
        *protocols.get(protocol).stream_config(params),
        ("categories", None if categories is None else tuple(categories.ids.tolist())),
    )
    return out if frequency is None else (*out, ("frequency", tuple(np.asarray(frequency).tolist())))


def protocol_of(config: tuple) -> str:
    """The protocol's name in a state's config."""
    return config[0][1]  # state_config puts it first


def state_from_matches(
    part: StreamPart,
    image_ids: np.ndarray,
    category_ids: np.ndarray,
    config: tuple,
    id_mode: str | None,
) -> EvaluatorState:
    """An :class:`EvaluatorState` from one shard's part (the protocol's ``stream_match``).

    ``part.det_image`` indexes ``image_ids`` (the shard's images, each listed once) and
    ``part.det_category`` indexes ``category_ids`` (the shard's categories, ascending).
    """
    cats = np.asarray(category_ids)
    return EvaluatorState(
        config=config,
        id_mode=id_mode if len(image_ids) else None,
        image_ids=np.asarray(image_ids),
        det_image=np.asarray(part.det_image, np.int32),
        det_label=cats[part.det_category] if len(cats) else np.zeros(0, np.int64),
        det_rank=np.asarray(part.det_rank, np.int32),
        det_score=np.asarray(part.det_score, np.float64),
        det_state=np.asarray(part.det_state, np.int8),
        cat_label=cats,
        cat_npig=np.asarray(part.npig, np.int64),
        cat_ndet=np.asarray(part.ndet, np.int64),
        image_values=part.image_values,
    )


def result_from_state(
    state: EvaluatorState,
    params: Any,
    categories: IdTable | None = None,
    frequency: np.ndarray | None = None,
) -> EvalResult:
    """Rank and reduce a (merged) state: the numbers of :func:`deteval.evaluate`, by the state's protocol.

    Images are ordered by ascending id (``np.unique`` of every id seen), as evaluate()
    orders the ground truth's images. ``categories=None`` evaluates the sorted union of
    the labels seen in targets and predictions. A federated protocol (LVIS) needs ``categories``
    and ``frequency`` (per category, an index into ``deteval.io.lvis.FREQUENCIES``).

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
    row_cat, found = table.lookup(state.cat_label)
    det_cat, det_found = table.lookup(state.det_label)
    if not (found.all() and det_found.all()):
        bad = state.cat_label[~found] if not found.all() else state.det_label[~det_found]
        raise InputError("labels", None, f"label {bad[0]!r} is not one of the categories {table.ids.tolist()}")
    npig = np.zeros((len(table), state.cat_npig.shape[1]), np.int64)
    ndet = np.zeros(len(table), np.int64)
    np.add.at(npig, row_cat, state.cat_npig)
    np.add.at(ndet, row_cat, state.cat_ndet)
    values = state.image_values
    if values is not None:  # in the order of the ascending ids
        values = values[np.argsort(inverse.reshape(-1), kind="stable")] if len(values) else values
    rows = StreamRows(
        det_image=inverse.reshape(-1)[state.det_image].astype(np.int32),
        det_category=det_cat.astype(np.int32),
        det_rank=state.det_rank,
        det_score=state.det_score,
        det_state=state.det_state,
        npig=npig,
        ndet=ndet,
        image_ids=ids,
        image_values=values,
    )
    extra = {} if frequency is None else {"frequency": frequency}
    return protocols.get(protocol_of(state.config)).stream_result(rows, table, params, extra)
