"""Streaming evaluation (layer 7): the training-loop :class:`Evaluator`, its mergeable state (:mod:`.state`),
batch inputs (:mod:`.inputs`), process groups (:mod:`.distributed`) and Dask (:mod:`.dask`). Every protocol
is reached through its streaming capability (:mod:`deteval.protocols`)."""

from deteval.evaluator.core import (
    TENSOR_BOX_FORMATS,
    Evaluator,
    EvaluatorState,
    merge_states,
    result_from_state,
    state_from_matches,
)

__all__ = [
    "Evaluator",
    "EvaluatorState",
    "TENSOR_BOX_FORMATS",
    "merge_states",
    "result_from_state",
    "state_from_matches",
]
