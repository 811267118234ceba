"""The replay capability: what bootstrap, compare and slices (:mod:`deteval.analysis.intervals`) ask of a
result's protocol (:meth:`~deteval.protocols.base.Protocol.replay`): its images, and the stats of any list of
them as evaluating that materialised dataset gives them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from deteval.errors import InputError
from deteval.result import EvalResult

__all__ = ["REPLAY_CAPABILITY", "Replay", "ReplayRecord", "kept_replay", "replay_refused"]

REPLAY_CAPABILITY = "bootstrap, compare and slices"


def kept_replay(result: EvalResult) -> Any:
    """The replay record ``result`` keeps (``EvalResult.replay``), or the InputError saying it keeps none."""
    if result.replay is None:
        why = "this result keeps none (evaluate with deteval.evaluate(), not the Evaluator)"
        raise replay_refused(result, why)
    return result.replay


def replay_refused(result: EvalResult, why: str) -> InputError:
    """The error for a result of a protocol with replay that cannot be replayed, saying ``why``."""
    return InputError("result", None, f"{REPLAY_CAPABILITY} re-rank the matches of {result.protocol} results: {why}")


class ReplayRecord:
    """Base of the records a result keeps for its replay (``EvalResult.replay``): the index a replay builds
    from one is cached on it (``_index``), rebuilt after unpickling, never pickled."""

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}


class Replay(ABC):
    """One result's replay: its images, and the stats of any list of them (a bootstrap replicate, a slice)
    as evaluating that materialised dataset gives them (the rule in :mod:`deteval.analysis.intervals`).

    ``record`` is what the result keeps (``EvalResult.replay``, pickled with it); the index a replicate
    walks is built from it once and cached on it (under ``_index``, which its ``__getstate__`` drops).
    """

    def __init__(self, record: Any) -> None:
        self.record = record

    @property
    def image_ids(self) -> np.ndarray:
        """The ids of the dense image indices, sorted."""
        return self.record.image_ids

    @property
    def file_order(self) -> np.ndarray:
        """The dense index of each image in the file's order (the order a bootstrap draws from)."""
        return self.record.file_order

    def replicate_fn(self, by_draw: bool = True) -> Callable[[np.ndarray], list[float]]:
        """The function of a draw (dense image indices, in the order they stand) giving its stats (``stats``
        then ``extra_stats``). The index is built here, in the calling thread (building one may run kernels
        on the pool); the function holds no state and runs on any thread.

        ``by_draw``: the images' rows stand in draw order (a bootstrap replicate); False for a slice (each
        image once), whose rows keep their original order. Only a protocol that breaks score ties by row
        tells the two apart."""
        index = self.record.__dict__.get("_index")
        if index is None:
            index = self.build_index()
            object.__setattr__(self.record, "_index", index)  # the records are frozen dataclasses
        return partial(self.replicate, index, by_draw=by_draw)

    @abstractmethod
    def build_index(self) -> Any:
        """What a replicate walks, built once per record."""

    @abstractmethod
    def replicate(self, index: Any, draw: np.ndarray, by_draw: bool = True) -> list[float]:
        """The stats of the images ``draw`` (see :meth:`replicate_fn`)."""
