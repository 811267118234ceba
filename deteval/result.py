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
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path  # not imported at run time: pathlib is 3 ms of every start


def default_iou_index(iou_thrs: np.ndarray) -> int:
    """Index of IoU .50 among the thresholds (within 1e-9), else 0: the IoU reports default to."""
    hit = np.flatnonzero(np.isclose(np.asarray(iou_thrs, dtype=np.float64), 0.5, rtol=0.0, atol=1e-9))
    return int(hit[0]) if hit.size else 0


@dataclass(frozen=True, eq=False)
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
    # float64 (N, T): each match's overlap (0: none) in the area range "all" (else the first), when kept (LRP)
    match_iou: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class RowTable:
    """Rows kept as NumPy columns, read as a list of dicts (:meth:`records`): the per-detection matches
    (:class:`MatchTable`) and the per-image counts (:class:`ImageTable`) of an evaluation that kept them."""

    KEYS: ClassVar[tuple[str, ...]] = ()

    columns: dict[str, np.ndarray]  # one array per key of KEYS, one value per row
    nulls: dict[str, np.ndarray] = field(default_factory=dict)  # bool per row: None there (keys that may be null)

    def __len__(self) -> int:
        return len(self.columns[self.KEYS[0]]) if self.KEYS else 0

    def column(self, key: str) -> list:
        """One column as Python values (ids keep their type: int or str), ``None`` where null or a float is
        not finite."""
        values = self.columns[key].tolist()
        if key in self.nulls and self.nulls[key].any():
            values = [None if n else v for v, n in zip(values, self.nulls[key].tolist())]
        if self.columns[key].dtype.kind == "f" and not np.isfinite(self.columns[key]).all():
            values = [v if v is None or math.isfinite(v) else None for v in values]
        return values

    def where(self, keep: np.ndarray) -> RowTable:
        """The rows where the boolean ``keep`` is true, as a table of this kind."""
        return type(self)({k: v[keep] for k, v in self.columns.items()}, {k: v[keep] for k, v in self.nulls.items()})

    def records(self) -> list[dict[str, Any]]:
        """The rows as dicts with the keys of ``KEYS``, in that order."""
        keys = self.KEYS
        return [dict(zip(keys, row)) for row in zip(*(self.column(k) for k in keys))]


class MatchTable(RowTable):
    """Every evaluated detection's match at every IoU threshold in area range ``all``, and every ground
    truth no detection took there, as pycocotools' ``evalImgs`` records them.

    ``det_index`` is the detection's 0-based row in the results file (None on a ground-truth row);
    ``gt_id`` is pycocotools' ``dtMatches`` entry (None where it is 0: no match, or a match to annotation
    id 0 in compat mode) or, on a ground-truth row, that ground truth's id; ``iou`` the overlap the match
    was decided on (IoU, intersection over the detection's area for crowd regions, OKS for keypoints),
    None exactly where ``gt_id`` is None or on a ground-truth row; ``ignored`` is ``dtIgnore`` (``gtIgnore``
    on a ground-truth row).
    """

    KEYS = ("iou_thr", "det_index", "image_id", "category_id", "score", "gt_id", "iou", "ignored")


class ImageTable(RowTable):
    """One row per ground-truth image: ground truth that counts (``num_gt``), evaluated detections
    (``num_dt``, ignored ones included), and at IoU .50 (the first threshold without it), area ``all``,
    the largest max dets: detections that are true (``tp``) and false (``fp``) positives, ``fn = num_gt - tp``."""

    KEYS = ("image_id", "num_gt", "num_dt", "tp", "fp", "fn")


@dataclass(eq=False)
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
    # the matches and ground-truth index a subset or resample of the images is re-accumulated from
    # (deteval.bootstrap, slices): the protocol's own object, None where it keeps none; not serialised
    replay: Any = field(default=None, repr=False, compare=False)
    # every stat per slice of the images (evaluate(..., slices=...)): {slice name: {stat: value}}
    slices: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)
    # the per-detection matches and per-image counts, when the evaluation kept them (evaluate(..., matches=True))
    match_table: MatchTable | None = field(default=None, repr=False, compare=False)
    image_table: ImageTable | None = field(default=None, repr=False, compare=False)

    @property
    def matches(self) -> list[dict[str, Any]]:
        """Every evaluated detection's match per IoU threshold, and the ground truth left unmatched
        (:class:`MatchTable`'s keys), as kept by ``evaluate(..., matches=True)``."""
        if self.match_table is None:  # AttributeError: getattr(result, "matches", None) reads it as absent
            raise AttributeError(f"this {self.protocol!r} result kept no matches: evaluate it with matches=True")
        return self.match_table.records()

    @property
    def per_image(self) -> list[dict[str, Any]]:
        """One row per ground-truth image (:class:`ImageTable`'s keys), as kept by ``evaluate(..., matches=True)``."""
        if self.image_table is None:
            raise AttributeError(
                f"this {self.protocol!r} result kept no per-image table: evaluate it with matches=True"
            )
        return self.image_table.records()

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
            **({"slices": jsonable([{"slice": k, **v} for k, v in self.slices.items()])} if self.slices else {}),
        }

    def to_json(self, path: str | Path | None = None, indent: int = 2) -> str:
        """Serialise :meth:`to_dict` as JSON; also write it to ``path`` when given.

        Floats are written with ``repr`` precision, so they round-trip exactly.
        """
        text = json.dumps(self.to_dict(), indent=indent)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        return text

    def save_arrays(self, path: str | Path, compressed: bool = True) -> None:
        """Write :attr:`arrays` as ``.npz`` to exactly ``path`` (zip-compressed unless ``compressed=False``).

        numpy appends ``.npz`` to a path that lacks it; an open file keeps the name the caller chose.
        """
        save = np.savez_compressed if compressed else np.savez
        with open(path, "wb") as f:
            save(f, **self.arrays)

    def to_torchmetrics(self, class_metrics: bool = True, tensors: bool | None = None) -> dict[str, Any]:
        """The result under torchmetrics' ``MeanAveragePrecision`` key names (COCO bbox and segm results only)."""
        raise ValueError(f"to_torchmetrics() reads COCO bbox/segm results, not a {self.protocol!r} result")

    def __repr__(self) -> str:
        head = ", ".join(f"{k}={v:.4f}" for k, v in list(self.stats.items())[:3])
        return f"{type(self).__name__}(protocol={self.protocol!r}, iou_type={self.iou_type!r}, {head}, ...)"


def _array() -> Any:
    """A result's array field: not in repr, not compared (arrays have no truth value)."""
    return field(default=None, repr=False, compare=False)


@dataclass(repr=False, eq=False)
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

    def to_torchmetrics(self, class_metrics: bool = True, tensors: bool | None = None) -> dict[str, Any]:
        """This result as torchmetrics' ``MeanAveragePrecision(backend="pycocotools").compute()`` returns it.

        The keys are torchmetrics': ``map``, ``map_50``, ``map_75``, ``map_small``, ``map_medium``,
        ``map_large``, ``mar_1``, ``mar_10``, ``mar_100``, ``mar_small``, ``mar_medium``, ``mar_large``
        (``mar_<n>`` named after the three max dets), ``map_per_class``, ``mar_100_per_class`` and
        ``classes``; read one as ``result.to_torchmetrics()["map"]``. The values are pycocotools' stats
        (those of :attr:`stats`, in ``COCOeval.stats`` order), -1 where there is no ground truth, in
        torchmetrics' types: float32, and 0-d where a value has one element (torchmetrics squeezes
        those); ``classes`` int32.

        Parameters
        ----------
        class_metrics : bool, default True
            Fill ``map_per_class`` and ``mar_100_per_class`` with each category's AP and AR (computed as
            torchmetrics does: ``COCOeval.stats[0]`` and ``[8]`` with ``params.catIds = [k]``, in
            ``classes`` order). ``False`` gives torchmetrics' placeholder for a metric built without
            ``class_metrics=True``: ``-1``. With categories pooled (``use_cats=False``) they are -1 too.
        tensors : bool or None, default None
            torch tensors (``True``), NumPy values (``False``: ``np.float32`` scalars, float32 and int32
            arrays), or tensors when torch can be imported (None). torch is imported here only.

        Which numbers torchmetrics gives
        --------------------------------
        They equal this dict when both see the same boxes and parameters. Two things differ by default:

        - torchmetrics' default thresholds are float32 grids (``torch.linspace(0.5, 0.95, 10)``,
          ``torch.linspace(0, 1, 101)``), not pycocotools' float64 ones, which moves some numbers
          (torchmetrics' own test example: map 0.63565 against pycocotools' 0.63696). Give
          ``deteval.Evaluator(iou_thrs=..., rec_thrs=...)`` those lists to get torchmetrics' numbers, or
          give torchmetrics ``np.linspace``'s to get pycocotools'.
        - torchmetrics converts ``xyxy`` boxes to xywh in the tensors' dtype (float32 usually), deteval in
          float64; feed ``box_format="xywh"`` to both to see the same boxes.
        - torchmetrics replaces a target ``area`` <= 0 by the box's w*h; deteval keeps the area given.

        ``classes`` lists the evaluated categories: for the :class:`~deteval.Evaluator` without
        ``categories``, the labels seen, as torchmetrics; for a ground-truth file, its categories.
        String labels give ``classes`` as a list of str (a tensor cannot hold them).

        Raises
        ------
        ValueError
            For keypoint results, or parameters without exactly three max dets (torchmetrics' keys
            assume pycocotools' 12 bbox/segm stats).
        """
        max_dets = [int(m) for m in np.asarray(self.max_dets).reshape(-1)]
        if self.iou_type not in ("bbox", "segm") or len(self.stats) != 12 or len(max_dets) != 3:
            rule = "bbox or segm results with three max dets (torchmetrics' keys name pycocotools' 12 stats)"
            raise ValueError(f"to_torchmetrics() reads {rule}; got iou_type {self.iou_type!r}, max dets {max_dets}")
        names = ["map", "map_50", "map_75", "map_small", "map_medium", "map_large"]
        names += [f"mar_{m}" for m in max_dets] + ["mar_small", "mar_medium", "mar_large"]
        out: dict[str, Any] = {name: np.float32(v) for name, v in zip(names, self.stats.values())}
        cat_ids = np.asarray(self.cat_ids).reshape(-1)
        pooled = len(cat_ids) == 1 and cat_ids[0] == -1 and not self.params.get("use_cats", True)
        if class_metrics and not pooled:
            ap, ar = self._per_class_stats(max_dets)
        else:
            ap = ar = np.array([-1.0])
        out["map_per_class"] = ap.astype(np.float32)
        out[f"mar_{max_dets[-1]}_per_class"] = ar.astype(np.float32)
        classes = cat_ids if not pooled else np.array([row["category_id"] for row in self.per_class])
        out["classes"] = classes.astype(np.int32) if classes.dtype.kind in "iu" else classes.astype(str)
        if tensors is None:
            try:
                import torch  # noqa: F401
            except ImportError:
                tensors = False
            else:
                tensors = True
        return _as_tensors(out) if tensors else {k: _squeezed(v) for k, v in out.items()}

    def _per_class_stats(self, max_dets: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Each category's ``COCOeval.stats[0]`` and ``[8]`` as pycocotools computes them with ``catIds=[k]``:
        the mean of the valid (> -1) precision (recall) entries at area ``all`` and max dets 100 (the
        third max dets), over every IoU threshold; -1 where none is valid."""
        compat = bool(self.params.get("compat", True))
        area = [i for i, lbl in enumerate(np.asarray(self.area_labels).tolist()) if lbl == "all"]
        ap_md = [i for i, m in enumerate(max_dets) if m == (100 if compat else max_dets[-1])]
        ar_md = [i for i, m in enumerate(max_dets) if m == max_dets[2]]

        def mean_valid(s: np.ndarray) -> float:
            valid = s[s > -1]
            return -1.0 if len(valid) == 0 else float(np.mean(valid))

        n_cat = self.precision.shape[2]
        ap = np.array([mean_valid(self.precision[:, :, k][..., area, ap_md]) for k in range(n_cat)])
        ar = np.array([mean_valid(self.recall[:, k][..., area, ar_md]) for k in range(n_cat)])
        return ap, ar

    def to_dict(self) -> dict[str, Any]:
        """:meth:`EvalResult.to_dict`, with ``extra_stats`` after ``stats`` when there are any."""
        d = super().to_dict()
        if not self.extra_stats:
            return d
        items = list(d.items())
        at = [k for k, _ in items].index("stats") + 1
        return dict([*items[:at], ("extra_stats", jsonable(self.extra_stats)), *items[at:]])


@dataclass(repr=False, eq=False)
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


def _squeezed(v: Any) -> Any:
    """torchmetrics' squeeze of one-element values, in NumPy: a NumPy scalar, else the array."""
    arr = np.asarray(v)
    return arr.reshape(-1)[0] if arr.size == 1 else arr


def _as_tensors(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` as torch tensors (0-d for one element, as torchmetrics' compute() squeezes); str stays a list."""
    import torch

    out: dict[str, Any] = {}
    for k, v in values.items():
        arr = np.asarray(v)
        if arr.dtype.kind == "U":
            out[k] = arr.tolist()
            continue
        t = torch.from_numpy(np.array(arr, copy=True).reshape(-1))
        out[k] = t.squeeze() if t.numel() == 1 else t
    return out


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
