"""What an evaluation returns: a shared base (stats, per-class rows, summary, JSON) and one type per family.

:class:`CocoResult` holds pycocotools-style arrays (``precision[T,R,K,A,M]`` ...),
:class:`VocResult` per-class AP per IoU threshold and integrator. Both serialise
the same way (:meth:`EvalResult.to_dict`), and both carry every detection's
outcome (:class:`Outcomes`) for the score-threshold analyses.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np


def default_iou_index(iou_thrs: np.ndarray) -> int:
    """Index of IoU .50 among the thresholds (within 1e-9), else 0: the IoU reports default to."""
    hit = np.flatnonzero(np.isclose(np.asarray(iou_thrs, dtype=np.float64), 0.5, rtol=0.0, atol=1e-9))
    return int(hit[0]) if hit.size else 0


@dataclass(frozen=True)
class Outcomes:
    """Every evaluated detection's outcome, the input to score-threshold analyses.

    One row per detection that the protocol evaluated (for COCO: within the
    largest max-dets cut), in no particular order; ``state[:, a, t]`` is its
    outcome for area range ``a`` and IoU threshold ``t``: 0 false positive,
    1 true positive, 2 ignored (matched to a crowd/difficult/out-of-range
    ground truth, or outside the area range). ``npos[k, a]`` counts the
    ground truth that can be found.
    """

    category: np.ndarray  # int32 (N,): index into category_ids
    image: np.ndarray  # int32 (N,)
    score: np.ndarray  # float64 (N,)
    state: np.ndarray  # int8 (N, A, T)
    npos: np.ndarray  # int64 (K, A)
    iou_thrs: np.ndarray  # float64 (T,)
    area_labels: tuple[str, ...]
    category_ids: np.ndarray  # (K,)
    category_names: tuple[str, ...]


@dataclass
class EvalResult:
    """The outcome of one evaluation; every protocol's result type derives from it.

    Attributes
    ----------
    protocol, iou_type:
        What was evaluated (``"coco"``, ``"bbox"`` ...).
    stats:
        Ordered mapping of the protocol's headline numbers (for COCO the 12
        stats of ``COCOeval.stats``, in that order). -1 marks a value that
        cannot be computed (no ground truth), as pycocotools does.
    per_class:
        One dict per category: ``category_id``, ``name`` and the protocol's
        per-class numbers.
    summary_lines:
        The protocol's printed summary, one string per line.
    params:
        The parameters the evaluation ran with (JSON-serialisable).
    outcomes:
        Every detection's TP/FP/ignored outcome (:class:`Outcomes`), for
        operating points and score-threshold curves; not serialised.
    """

    ARRAYS: ClassVar[tuple[str, ...]] = ()  # the subclass's array fields, as written by save_arrays

    protocol: str
    iou_type: str
    stats: dict[str, float]
    per_class: list[dict[str, Any]]
    summary_lines: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    outcomes: Outcomes | None = field(default=None, repr=False, compare=False)

    @property
    def arrays(self) -> dict[str, np.ndarray]:
        """The protocol's raw arrays by name (the fields listed in ``ARRAYS``)."""
        return {name: getattr(self, name) for name in self.ARRAYS}

    def summary(self) -> str:
        """The printed summary (pycocotools' 12 lines for COCO)."""
        return "\n".join(self.summary_lines)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: protocol, iou_type, params, stats and per_class."""
        return {
            "protocol": self.protocol,
            "iou_type": self.iou_type,
            "params": jsonable(self.params),
            "stats": jsonable(self.stats),
            "per_class": jsonable(self.per_class),
        }

    def to_json(self, path: str | Path | None = None, indent: int = 2) -> str:
        """Serialise :meth:`to_dict` as JSON; also write it to ``path`` when given.

        Floats are written with ``repr`` precision, so they round-trip exactly.
        """
        text = json.dumps(self.to_dict(), indent=indent)
        if path is not None:
            Path(path).write_text(text + "\n")
        return text

    def save_arrays(self, path: str | Path, compressed: bool = True) -> None:
        """Write :attr:`arrays` as ``.npz`` to exactly ``path`` (zip-compressed unless ``compressed=False``).

        numpy appends ``.npz`` to a path that lacks it; an open file keeps the name the caller chose.
        """
        save = np.savez_compressed if compressed else np.savez
        with open(path, "wb") as f:
            save(f, **self.arrays)

    def __repr__(self) -> str:
        head = ", ".join(f"{k}={v:.4f}" for k, v in list(self.stats.items())[:3])
        return f"{type(self).__name__}(protocol={self.protocol!r}, iou_type={self.iou_type!r}, {head}, ...)"


def _array() -> Any:
    """A result's array field: not in repr, not compared (arrays have no truth value)."""
    return field(default=None, repr=False, compare=False)


@dataclass(repr=False)
class CocoResult(EvalResult):
    """A COCO-family result: pycocotools' ``eval`` arrays and their axes."""

    ARRAYS: ClassVar[tuple[str, ...]] = (
        "precision", "recall", "scores", "iou_thrs", "rec_thrs", "cat_ids", "area_labels", "max_dets",
    )  # fmt: skip

    precision: np.ndarray = _array()  # (T, R, K, A, M), -1 where there is no ground truth
    recall: np.ndarray = _array()  # (T, K, A, M)
    scores: np.ndarray = _array()  # (T, R, K, A, M)
    iou_thrs: np.ndarray = _array()  # (T,)
    rec_thrs: np.ndarray = _array()  # (R,)
    cat_ids: np.ndarray = _array()  # (K,), [-1] when categories are pooled
    area_labels: np.ndarray = _array()  # (A,)
    max_dets: np.ndarray = _array()  # (M,)
    # the stats of custom area ranges and IoU thresholds, which pycocotools' stats do not read
    # (deteval.protocols.coco_summary); empty with the default parameters
    extra_stats: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """:meth:`EvalResult.to_dict`, with ``extra_stats`` after ``stats`` when there are any."""
        d = super().to_dict()
        if not self.extra_stats:
            return d
        items = list(d.items())
        at = [k for k, _ in items].index("stats") + 1
        return dict([*items[:at], ("extra_stats", jsonable(self.extra_stats)), *items[at:]])


@dataclass(repr=False)
class VocResult(EvalResult):
    """A VOC-family result: AP per IoU threshold, class and integrator, and each detection's outcome."""

    ARRAYS: ClassVar[tuple[str, ...]] = ("ap", "mAP", "iou_thrs", "npos", "ndet", "outcome", "rank")

    ap: np.ndarray = _array()  # (T, K, I)
    mAP: np.ndarray = _array()  # noqa: N815 (T, I): the name VOC gives it
    iou_thrs: np.ndarray = _array()  # (T,)
    npos: np.ndarray = _array()  # (K,)
    ndet: np.ndarray = _array()  # (K,)
    outcome: np.ndarray = _array()  # (T, D): 1 TP, 0 FP, -1 ignored
    rank: np.ndarray = _array()  # (D,): rank within the class


def jsonable(obj: Any) -> Any:
    """``obj`` with numpy values as Python ones and non-finite floats as None, ready for ``json.dumps``."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return jsonable(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj
