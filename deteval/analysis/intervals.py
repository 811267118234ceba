"""Bootstrap confidence intervals of every stat, re-accumulated from one matching pass.

The resampling is defined exactly, so anyone can reproduce a replicate: with
``rng = np.random.default_rng(seed)``, replicate ``b`` (``b = 0, 1, ...``) is
``idx = rng.integers(0, n_images, n_images)``, drawn in order, over the ground truth's images in file
order. An image drawn ``k`` times counts as ``k`` distinct images (its ground truth and detections
repeated), and the images stand in draw order (the ``j``-th draw is the ``j``-th image), which fixes how
score ties between images break (pycocotools breaks them by image order). A replicate's stats are those
of evaluating that materialised dataset (images renumbered ``1..n`` in draw order): its matching is the
original's, image by image, so only accumulation is redone, by the protocol's replay
(:meth:`deteval.protocols.base.Protocol.replay`: :mod:`deteval.accumulation.resample` for the COCO family,
:mod:`deteval.accumulation.resample_voc` for the VOC family and Open Images). The VOC family and Open Images break score
ties by row, not by image: the materialised dataset's rows stand draw after draw, each image's in their
original order. File formats that keep no image order (XML folders, per-image text files, CSV) have their
images resampled in id order.

An interval is the percentile interval of the replicates' values: ``np.quantile`` (linear) at
``(1 - level) / 2`` and ``(1 + level) / 2`` over the replicates where the stat is defined (not -1, the
value pycocotools gives a stat without ground truth); NaN where no replicate defines it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from deteval.errors import InputError
from deteval.result import EvalResult, jsonable

if TYPE_CHECKING:  # pragma: no cover
    from deteval.protocols.replay import Replay

__all__ = [
    "BootstrapResult", "bootstrap_result", "draws_of", "percentile_intervals", "replay_of_result", "stats_of_draws",
    "stats_of_draws_many",
]  # fmt: skip


@dataclass
class BootstrapResult:
    """Bootstrap replicates of a result's stats and their percentile intervals.

    ``replicates[b, i]`` is stat ``names[i]`` of replicate ``b`` (-1 where undefined, as pycocotools);
    ``intervals[name] = (low, high)``; ``point`` the stats of the evaluation itself.
    """

    names: tuple[str, ...]
    point: dict[str, float]
    replicates: np.ndarray
    intervals: dict[str, tuple[float, float]]
    n: int
    seed: int
    level: float
    n_images: int = 0
    protocol: str = "coco"
    iou_type: str = "bbox"
    params: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_dict(self, replicates: bool = False) -> dict[str, Any]:
        """A JSON-ready dict: the settings, the point values and intervals; the replicates when asked."""
        d: dict[str, Any] = {
            "n": self.n,
            "seed": self.seed,
            "level": self.level,
            "n_images": self.n_images,
            "resampling": "numpy default_rng(seed).integers(0, n_images, n_images) per replicate, "
            "over the ground truth's images in file order",
            "intervals": {
                name: {"value": self.point[name], "low": lo, "high": hi} for name, (lo, hi) in self.intervals.items()
            },
        }
        if replicates:
            d["names"] = list(self.names)
            d["replicates"] = self.replicates.tolist()
        return jsonable(d)

    def format_table(self) -> str:
        """One line per stat: its value and interval."""
        pct = f"{100 * self.level:g}%"
        lines = [f"Bootstrap ({self.n} replicates, seed {self.seed}): {pct} percentile intervals"]
        width = max([len(n) for n in self.names] + [4])
        lines.append(f"  {'stat':<{width}}  {'value':>7}  {'low':>7}  {'high':>7}")
        for name in self.names:
            lo, hi = self.intervals[name]
            lines.append(f"  {name:<{width}}  {_num(self.point[name])}  {_num(lo)}  {_num(hi)}")
        return "\n".join(lines)


def _num(v: float) -> str:
    return f"{v:7.4f}" if math.isfinite(v) else f"{'nan':>7}"


def replay_of_result(result: EvalResult) -> Replay:
    """The result's replay (:class:`~deteval.protocols.replay.Replay`), from its protocol; InputError where the
    protocol or the result has none."""
    from deteval import protocols

    return protocols.get(result.protocol).replay(result)


def stats_of_draws(result: EvalResult, draws: Sequence[np.ndarray], by_draw: bool = True) -> np.ndarray:
    """The stats (``result.stats`` then ``result.extra_stats``, in order) of each list of images in
    ``draws`` (dense image indices, in the order they stand), as evaluating that dataset gives them:
    ``(len(draws), n_stats)``, on threads (the same numbers whatever their count).

    ``by_draw``: the images' rows stand in draw order (a bootstrap replicate's materialised dataset); False
    for a slice (each image once), whose rows keep their original order. Only a protocol that breaks score
    ties by row, not by image (the VOC family, Open Images), tells the two apart.
    """
    return stats_of_draws_many([result], draws, by_draw)[0]


def _replicate_fn(result: EvalResult, by_draw: bool):
    """The function of a draw giving ``result``'s stats on it; its index is built here, in this thread
    (building one runs kernels on the pool)."""
    return replay_of_result(result).replicate_fn(by_draw)


def stats_of_draws_many(
    results: Sequence[EvalResult], draws: Sequence[np.ndarray], by_draw: bool = True
) -> list[np.ndarray]:
    """:func:`stats_of_draws` of several results on the same draws (paired models), as one list of tasks:
    no thread waits between one result's replicates and the next's."""
    from deteval.jit import run_tasks

    fns = [_replicate_fn(r, by_draw) for r in results]
    arrays = [np.asarray(d, np.int64) for d in draws]
    rows = run_tasks([partial(fn, d) for fn in fns for d in arrays])
    out = []
    for i, result in enumerate(results):
        n_stats = len(result.stats) + len(getattr(result, "extra_stats", {}) or {})
        out.append(np.array(rows[i * len(arrays) : (i + 1) * len(arrays)], np.float64).reshape(len(arrays), n_stats))
    return out


MAX_REPLICATES = 1_000_000  # a request beyond it is refused: its stats alone would take gigabytes
_DRAW_INDICES = 20_000_000  # image indices drawn at a time (160 MB): replicates go in chunks of this many


def check_replicates(n: object, what: str = "n") -> int:
    """``n`` as a number of bootstrap replicates: a positive integer up to :data:`MAX_REPLICATES`."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InputError(what, None, f"the number of replicates must be a positive integer, not {n!r}")
    if n > MAX_REPLICATES:
        raise InputError(what, None, f"at most {MAX_REPLICATES:,} replicates, not {int(n):,}")
    return int(n)


def stats_of_replicates(
    results: Sequence[EvalResult], n: int, seed: int, progress: Callable[[int, int], None] | None = None
) -> list[np.ndarray]:
    """Each result's stats on the ``n`` replicates of :func:`draws_of` (drawn from ``results[0]``), computed in
    chunks (the draws of a chunk only are held), ``progress(done, n)`` after each: the same numbers as one go."""
    replay = replay_of_result(results[0])
    rng = np.random.default_rng(seed)
    n_images = len(replay.file_order)
    step = max(1, _DRAW_INDICES // max(n_images, 1))
    parts: list[list[np.ndarray]] = [[] for _ in results]
    done = 0
    while done < n:
        k = min(step, n - done)
        draws = [replay.file_order[rng.integers(0, n_images, n_images)] for _ in range(k)]
        for part, rows in zip(parts, stats_of_draws_many(results, draws)):
            part.append(rows)
        done += k
        if progress is not None:
            progress(done, n)
    return [np.concatenate(p) if len(p) > 1 else p[0] for p in parts]


def draws_of(result: EvalResult, n: int, seed: int) -> list[np.ndarray]:
    """The ``n`` replicates' images as dense indices, in draw order (the module docstring's rule)."""
    replay = replay_of_result(result)
    rng = np.random.default_rng(seed)
    n_images = len(replay.file_order)
    return [replay.file_order[rng.integers(0, n_images, n_images)] for _ in range(n)]


def percentile_intervals(replicates: np.ndarray, names: Sequence[str], level: float) -> dict[str, tuple[float, float]]:
    """``{name: (low, high)}``: the linear quantiles at ``(1 -+ level) / 2`` of each column's defined values."""
    lo_q, hi_q = (1 - level) / 2, (1 + level) / 2
    out = {}
    for i, name in enumerate(names):
        col = replicates[:, i]
        col = col[col > -1]
        if len(col) == 0:
            out[name] = (math.nan, math.nan)
        else:
            lo, hi = np.quantile(col, [lo_q, hi_q])
            out[name] = (float(lo), float(hi))
    return out


def bootstrap_result(
    result: EvalResult,
    n: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    progress: Callable[[int, int], None] | None = None,
) -> BootstrapResult:
    """Bootstrap ``result`` (a result of :func:`deteval.evaluate` whose protocol provides replay): see the
    module docstring. At most :data:`MAX_REPLICATES`; ``progress(done, n)`` is called as replicates finish."""
    n = check_replicates(n)
    if not 0 < level < 1:
        raise InputError("level", None, f"the interval's level must lie strictly between 0 and 1, not {level!r}")
    replay = replay_of_result(result)
    if len(replay.file_order) == 0:
        raise InputError("result", None, "the ground truth has no images to resample")
    point = {**result.stats, **(getattr(result, "extra_stats", {}) or {})}
    names = tuple(point)
    (reps,) = stats_of_replicates([result], int(n), seed, progress)
    return BootstrapResult(
        names=names,
        point=point,
        replicates=reps,
        intervals=percentile_intervals(reps, names, level),
        n=int(n),
        seed=seed,
        level=level,
        n_images=len(replay.file_order),
        protocol=result.protocol,
        iou_type=result.iou_type,
        params=result.params,
    )
