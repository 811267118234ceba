"""Bootstrap confidence intervals of every stat, re-accumulated from one matching pass.

The resampling is defined exactly, so anyone can reproduce a replicate: with
``rng = np.random.default_rng(seed)``, replicate ``b`` (``b = 0, 1, ...``) is
``idx = rng.integers(0, n_images, n_images)``, drawn in order, over the ground truth's images in file
order. An image drawn ``k`` times counts as ``k`` distinct images (its ground truth and detections
repeated), and the images stand in draw order (the ``j``-th draw is the ``j``-th image), which fixes how
score ties between images break (pycocotools breaks them by image order). A replicate's stats are those
of evaluating that materialised dataset (images renumbered ``1..n`` in draw order): its matching is the
original's, image by image, so only accumulation is redone (:mod:`deteval.resample` for the coco and lvis
protocols, :mod:`deteval.resample_voc` for voc07 and voc10). VOC breaks score ties by row, not by image: the
materialised dataset's detections stand draw after draw, each image's in their original row order. VOC's
file formats keep no image order (XML folders, per-image text files): their images are resampled in id order.

An interval is the percentile interval of the replicates' values: ``np.quantile`` (linear) at
``(1 - level) / 2`` and ``(1 + level) / 2`` over the replicates where the stat is defined (not -1, the
value pycocotools gives a stat without ground truth); NaN where no replicate defines it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from deteval.errors import InputError
from deteval.result import EvalResult, jsonable

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


REPLAYED = ("coco", "lvis", "voc07", "voc10")  # the protocols whose results keep what a replicate re-ranks


def replay_of_result(result: EvalResult):
    """The result's replay (``CocoReplay``, ``LvisReplay`` or ``VocReplay``), or InputError saying why there is none."""
    replay = getattr(result, "replay", None)
    if replay is None or result.protocol not in REPLAYED:
        if result.protocol not in REPLAYED:
            why = f"the {result.protocol!r} protocol is not supported"
        elif result.protocol == "lvis" and result.params.get("max_dets_per_cat", -1) >= 0:
            why = "Fixed AP's cut per category over the dataset changes with the images drawn"
        else:
            why = "this result keeps none (evaluate with deteval.evaluate(), not the Evaluator)"
        rule = f"bootstrap, compare and slices re-rank the matches of {', '.join(REPLAYED)} results: {why}"
        raise InputError("result", None, rule)
    return replay


def _cached(replay, key: str, build):
    """``build()``, cached on the replay (a frozen dataclass, so by __dict__; not pickled)."""
    cached = replay.__dict__.get(key)
    if cached is None:
        cached = build()
        object.__setattr__(replay, key, cached)
    return cached


def _index(replay):
    """The replay's ranked index (:mod:`deteval.resample`, :mod:`deteval.resample_voc`), built once per replay."""
    if replay.__dict__.get("_index") is not None:
        return replay.__dict__["_index"]
    if hasattr(replay, "pos_image"):  # VOC
        from deteval.resample_voc import build_voc_index

        m = replay.matches
        args = (m.category, m.image, m.score, m.outcome, replay.pos_image, replay.pos_category, replay.n_cat)
        return _cached(replay, "_index", lambda: build_voc_index(*args, len(replay.image_ids)))
    from deteval.resample import build_index

    m, params = replay.matches, replay.params
    max_dets = getattr(replay, "max_dets", None) or params.max_dets  # LVIS: no cut per (image, category)
    index = build_index(
        m.det_category, m.det_image, m.det_rank, m.det_score, m.state, replay.gt_image, replay.gt_category,
        replay.gt_counted, m.npig.shape[0], len(replay.image_ids), np.array(max_dets), params.rec_thrs,
    )  # fmt: skip
    return _cached(replay, "_index", lambda: index)


def _plan(replay):
    """The stats' reading plan (coco_summary.stat_plan) and the (area, max dets) pairs whose precision
    it reads, once per replay."""

    def build():
        from deteval.protocols.coco_summary import stat_plan

        params = replay.params
        plan = stat_plan(params)
        need = np.zeros((len(params.area_labels), len(params.max_dets)), np.bool_)
        for _, is_ap, _, a, m in plan:
            if is_ap:
                need[np.ix_(a, m)] = True
        return plan, need

    return _cached(replay, "_plan", build)


def _mean_valid(s: np.ndarray) -> float:
    valid = s[s > -1]  # 1-D, in C order: the entries np.mean sums in pycocotools' _summarize
    return -1.0 if len(valid) == 0 else float(np.mean(valid))


def _stats_of_arrays(precision: np.ndarray, recall: np.ndarray, plan) -> list[float]:
    """pycocotools' ``_summarize`` means from arrays laid out ``[A, M, T, ...]``: the same entries in the
    same order, so the same floats."""
    from deteval.resample import as_pycocotools

    out = []
    for _, is_ap, t, a, m in plan:
        arr = precision if is_ap else recall
        if len(a) == 1 and len(m) == 1:
            out.append(_mean_valid(arr[a[0], m[0]][t]))
        else:  # a repeated label or max dets: pycocotools' own indexing
            out.append(_mean_valid(as_pycocotools(precision, recall)[0 if is_ap else 1][t][..., a, m]))
    return out


def _one(index, draw: np.ndarray, plan, need) -> list[float]:
    from deteval.resample import replicate_arrays

    precision, recall = replicate_arrays(index, draw, need)
    return _stats_of_arrays(precision, recall, plan)


def _one_lvis(index, replay, draw: np.ndarray) -> list[float]:
    """lvis-api's stats of a replicate: its arrays with the max-dets axis of one dropped."""
    from deteval.protocols.lvis_summary import lvis_stats
    from deteval.resample import as_pycocotools, replicate_arrays

    p = replay.params
    precision, recall = as_pycocotools(*replicate_arrays(index, draw))
    stats = lvis_stats(precision[..., 0], recall[..., 0], replay.frequency, p.iou_thrs, p.area_labels, p.max_dets_label)
    return list(stats.values())


def _one_voc(index, replay, by_draw: bool, draw: np.ndarray) -> list[float]:
    """The VOC protocol's stats of a replicate: the integrators on its ranking, as ``VocProtocol.reduce``."""
    from deteval import integrators as integ
    from deteval.protocols.voc import stats_of_ap
    from deteval.resample_voc import voc_replicate

    p = replay.params
    outcome, scores, offsets, npos = voc_replicate(index, draw, by_draw)
    ap = np.empty((len(p.iou_thrs), len(npos), len(p.integrators)))
    for t in range(len(p.iou_thrs)):
        o = outcome[t]
        ap[t] = integ.average_precision_segments(
            o == 1, o == 0, offsets, npos, list(p.integrators), ties=p.ties, scores=scores, grid=p.grid
        )
    return list(stats_of_ap(ap, npos > 0, p).values())


def stats_of_draws(result: EvalResult, draws: Sequence[np.ndarray], by_draw: bool = True) -> np.ndarray:
    """The stats (``result.stats`` then ``result.extra_stats``, in order) of each list of images in
    ``draws`` (dense image indices, in the order they stand), as evaluating that dataset gives them:
    ``(len(draws), n_stats)``, on threads (the same numbers whatever their count).

    ``by_draw``: the images' rows stand in draw order (a bootstrap replicate's materialised dataset); False
    for a slice (each image once), whose rows keep their original order. Only VOC, which breaks score
    ties by row, not by image, tells the two apart.
    """
    return stats_of_draws_many([result], draws, by_draw)[0]


def _replicate_fn(result: EvalResult, by_draw: bool):
    """The function of a draw giving ``result``'s stats on it; its index is built here, in this thread
    (building one runs kernels on the pool)."""
    replay = replay_of_result(result)
    index = _index(replay)
    if result.protocol == "coco":
        plan, need = _plan(replay)
        return partial(_one, index, plan=plan, need=need)
    if result.protocol == "lvis":
        return partial(_one_lvis, index, replay)
    return partial(_one_voc, index, replay, by_draw)


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


def bootstrap_result(result: EvalResult, n: int = 1000, seed: int = 0, level: float = 0.95) -> BootstrapResult:
    """Bootstrap ``result`` (a ``coco``, ``lvis``, ``voc07`` or ``voc10`` result of :func:`deteval.evaluate`):
    see the module docstring."""
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise InputError("n", None, f"the number of replicates must be a positive integer, not {n!r}")
    if not 0 < level < 1:
        raise InputError("level", None, f"the interval's level must lie strictly between 0 and 1, not {level!r}")
    replay = replay_of_result(result)
    if len(replay.file_order) == 0:
        raise InputError("result", None, "the ground truth has no images to resample")
    point = {**result.stats, **(getattr(result, "extra_stats", {}) or {})}
    names = tuple(point)
    reps = stats_of_draws(result, draws_of(result, int(n), seed))
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
