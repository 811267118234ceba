"""VOC's ranking over a resampled or sliced set of images, from one matching pass.

A bootstrap replicate or a slice is a list of images, *draws* (dense image indices, an image may come more
than once). VOC matching is per (image, class), so every copy of an image keeps its detections' outcomes;
only the per-class ranking changes. VOC ranks each class's detections by descending score with ties in
row order (a stable sort, :func:`deteval.accumulation.accumulate.rank_by_category`), so the order within a run of equal
scores depends on how the rows of the evaluated dataset stand:

- a bootstrap replicate is the materialised dataset whose rows are the draws' detections, draw after
  draw, each image's detections in their original row order: ties break by (draw position, row);
- a slice (``by_draw=False``, each image at most once) is the original rows of its images, in their
  original order: ties break by row, as evaluating those images alone (``image_set``) ranks them.

Each class is ranked once (:func:`build_voc_index`); a replicate (:func:`voc_replicate`) repeats every
ranked row as many times as its image is drawn and re-orders only the runs of equal scores, then hands the
ranked outcomes to the integrators the protocol uses, so the AP is the same bits as evaluating that
dataset. This is cheaper than COCO's replay needs to be: VOC datasets are small (one threshold or a few).

Under ``ties="argsort"`` (``np.argsort(-score)`` as numpy < 1.25 ordered a class's rows,
:mod:`deteval.matching.argsort_classic`) the order of equal scores depends on every row of the class, so a
replicate lists each class's rows of the materialised dataset (as above) and ranks them with that sort
(:class:`ClassicReplayIndex`). The matching visits an image's equal scores in that ranking too: of the
detections that claim one ground truth (``VocMatches.claim``), the first ranked in each copy of the image
is the TP, the others FP.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deteval.accumulation.accumulate import rank_by_category
from deteval.jit import njit
from deteval.matching.argsort_classic import classic_rank_slices
from deteval.matching.voc import first_claims_win

__all__ = ["ClassicReplayIndex", "VocReplayIndex", "build_voc_index", "voc_replicate"]


@dataclass(frozen=True)
class VocReplayIndex:
    """One evaluation's detections ranked per class (stable: descending score, ties by row), with what a
    replicate reads: each ranked row's image, its place among its image's rows, the end of its run of
    equal scores, and the positives' images and classes."""

    outcome: np.ndarray  # int8 (T, D), columns in ranked order: 1 TP, 0 FP, -1 ignored
    score: np.ndarray  # float64 (D,), ranked
    image: np.ndarray  # int64 (D,), ranked
    key_rank: np.ndarray  # int64 (D,): the row's place among its image's rows (row order)
    tie_end: np.ndarray  # int64 (D,): end of the run of equal scores starting at ranked position p
    cat_off: np.ndarray  # int64 (K + 1,)
    pos_image: np.ndarray  # int64 (P,): each positive's image
    pos_category: np.ndarray  # int64 (P,)
    n_images: int
    span: int  # key_rank < span


@dataclass(frozen=True)
class ClassicReplayIndex:
    """Under ``ties="argsort"``: the detections in row order, grouped by image, with their claims."""

    outcome: np.ndarray  # int8 (T, D), row order
    claim: np.ndarray | None  # int64 (T, D): the ground-truth row claimed (-1 none); None: no re-decision
    score: np.ndarray  # float64 (D,)
    category: np.ndarray  # int64 (D,)
    image: np.ndarray  # int64 (D,)
    image_rows: np.ndarray  # int64 (D,): rows image by image, each image's in row order
    image_off: np.ndarray  # int64 (I + 1,)
    pos_image: np.ndarray  # int64 (P,)
    pos_category: np.ndarray  # int64 (P,)
    n_images: int
    n_cat: int


def build_voc_index(
    category: np.ndarray,
    image: np.ndarray,
    score: np.ndarray,
    outcome: np.ndarray,
    pos_image: np.ndarray,
    pos_category: np.ndarray,
    n_cat: int,
    n_images: int,
    ties: str = "item",
    claim: np.ndarray | None = None,
) -> VocReplayIndex | ClassicReplayIndex:
    """Rank the matched detections (``VocMatches``' rows and ``outcome`` (T, D)) as the VOC protocols do,
    once for many replicates; ``pos_*`` are the ground truth counted as positives (not difficult).
    ``ties="argsort"`` (with the matches' ``claim``) gives a :class:`ClassicReplayIndex`."""
    category = np.asarray(category, np.int64)
    image = np.asarray(image, np.int64)
    score = np.asarray(score, np.float64)
    if ties == "argsort":
        by_image = np.argsort(image, kind="stable").astype(np.int64)
        counts = np.bincount(image, minlength=n_images) if len(image) else np.zeros(n_images, np.int64)
        return ClassicReplayIndex(
            outcome=np.ascontiguousarray(np.asarray(outcome, np.int8)),
            claim=None if claim is None else np.ascontiguousarray(claim, np.int64),
            score=np.ascontiguousarray(score),
            category=np.ascontiguousarray(category),
            image=np.ascontiguousarray(image),
            image_rows=by_image,
            image_off=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
            pos_image=np.asarray(pos_image, np.int64),
            pos_category=np.asarray(pos_category, np.int64),
            n_images=int(n_images),
            n_cat=int(n_cat),
        )
    order, cat_off = rank_by_category(category, score, n_cat)
    n = len(order)
    # each row's place among its image's rows, in row order
    by_image = np.argsort(image, kind="stable")
    counts = np.bincount(image, minlength=n_images) if n else np.zeros(n_images, np.int64)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    key_rank = np.empty(n, np.int64)
    key_rank[by_image] = np.arange(n) - first
    s, c = score[order], category[order]
    # runs of equal scores within a class; NaNs sort last, in row order, so they tie with each other
    same = ((s[1:] == s[:-1]) | (np.isnan(s[1:]) & np.isnan(s[:-1]))) & (c[1:] == c[:-1])
    starts = np.flatnonzero(np.concatenate([[True], ~same])) if n else np.zeros(0, np.int64)
    ends = np.append(starts[1:], n) if n else starts
    return VocReplayIndex(
        outcome=np.ascontiguousarray(np.asarray(outcome, np.int8)[:, order]),
        score=np.ascontiguousarray(s),
        image=np.ascontiguousarray(image[order]),
        key_rank=np.ascontiguousarray(key_rank[order]),
        tie_end=np.repeat(ends, ends - starts).astype(np.int64),
        cat_off=np.asarray(cat_off, np.int64),
        pos_image=np.asarray(pos_image, np.int64),
        pos_category=np.asarray(pos_category, np.int64),
        n_images=int(n_images),
        span=int(counts.max()) if n else 1,
    )


@njit(cache=True, nogil=True)
def _expand_kernel(draw, n_images, image, key_rank, tie_end, cat_off, span, by_draw):  # pragma: no cover - numba
    """The ranked positions of the replicate's rows, in its order, and each class's offsets."""
    w = np.zeros(n_images, np.int64)
    for j in range(len(draw)):
        w[draw[j]] += 1
    # the draw positions of each image, ascending (a counting sort of the draws)
    pos_off = np.zeros(n_images + 1, np.int64)
    for i in range(n_images):
        pos_off[i + 1] = pos_off[i] + w[i]
    fill = pos_off[:-1].copy()
    pos = np.empty(len(draw), np.int64)
    for j in range(len(draw)):
        pos[fill[draw[j]]] = j
        fill[draw[j]] += 1
    total = 0
    for p in range(len(image)):
        total += w[image[p]]
    rows = np.empty(total, np.int64)
    off = np.zeros(len(cat_off), np.int64)
    keys = np.empty(16, np.int64)
    c = 0
    for k in range(len(cat_off) - 1):
        p, p1 = cat_off[k], cat_off[k + 1]
        while p < p1:
            e = tie_end[p]
            c0 = c
            if e - p == 1 or not by_draw:  # no tie, or the rows keep their order (a slice)
                for r in range(p, e):
                    for _ in range(w[image[r]]):
                        rows[c] = r
                        c += 1
                p = e
                continue
            # equal scores: the copies stand in (draw position, row) order
            m = 0
            for r in range(p, e):
                m += w[image[r]]
            if m > len(keys):
                keys = np.empty(2 * m, np.int64)
            for r in range(p, e):
                i = image[r]
                for x in range(pos_off[i], pos_off[i + 1]):
                    keys[c - c0] = pos[x] * span + key_rank[r]
                    rows[c] = r
                    c += 1
            if m > 1:
                o = np.argsort(keys[:m])  # the keys are distinct: any sort gives this order
                rows[c0:c] = rows[c0:c][o].copy()
            p = e
        off[k + 1] = c
    return rows, off


@njit(cache=True, nogil=True)
def _materialise_kernel(draw, by_draw, image, category, image_rows, image_off, n_cat):  # pragma: no cover - numba
    """The rows of the replicate's dataset class by class, each class's in the dataset's row order: ``(rows,
    copy, offsets)``, ``copy`` the draw position of the row's image (0 for a slice)."""
    n_images = len(image_off) - 1
    drawn = np.zeros(n_images, np.int64)
    for j in range(len(draw)):
        drawn[draw[j]] += 1
    off = np.zeros(n_cat + 1, np.int64)
    if by_draw:
        for j in range(len(draw)):
            for p in range(image_off[draw[j]], image_off[draw[j] + 1]):
                off[category[image_rows[p]] + 1] += 1
    else:
        for r in range(len(image)):
            if drawn[image[r]] > 0:
                off[category[r] + 1] += 1
    for k in range(n_cat):
        off[k + 1] += off[k]
    fill = off[:-1].copy()
    rows = np.empty(off[n_cat], np.int64)
    copy = np.zeros(off[n_cat], np.int64)
    if by_draw:
        for j in range(len(draw)):
            for p in range(image_off[draw[j]], image_off[draw[j] + 1]):
                r = image_rows[p]
                rows[fill[category[r]]] = r
                copy[fill[category[r]]] = j
                fill[category[r]] += 1
    else:
        for r in range(len(image)):
            if drawn[image[r]] > 0:
                rows[fill[category[r]]] = r
                fill[category[r]] += 1
    return rows, copy, off


KERNELS = (_expand_kernel, _materialise_kernel)


def _classic_replicate(
    index: ClassicReplayIndex, draw: np.ndarray, by_draw: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ranked outcomes (T, C), scores (C,) and class offsets of a replicate under ``ties="argsort"``."""
    rows, copy, offsets = _materialise_kernel(
        draw, by_draw, index.image, index.category, index.image_rows, index.image_off, index.n_cat
    )
    ranked = np.arange(len(rows), dtype=np.int64)
    classic_rank_slices(ranked, offsets, np.ascontiguousarray(index.score[rows]))
    rows, copy = rows[ranked], copy[ranked]
    outcome = index.outcome[:, rows]
    if index.claim is not None:  # the matching visits equal scores of an image in this ranking too
        first_claims_win(outcome, index.claim[:, rows], copy, np.arange(len(rows)))
    return outcome, index.score[rows], offsets


def voc_replicate(
    index: VocReplayIndex | ClassicReplayIndex, draw: np.ndarray, by_draw: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The ranking of the images ``draw`` (dense indices in the order they stand, repeats allowed) as the
    VOC protocols rank that materialised dataset: ``(outcome (T, C), score (C,), offsets (K + 1,), npos (K,))``.

    ``by_draw`` (a bootstrap replicate) breaks ties by (draw position, row); False (a slice, no image
    twice) keeps the original row order. The kernel holds no GIL: replicates run side by side on threads.
    """
    draw = np.ascontiguousarray(draw, np.int64)
    if len(draw) and (draw.min() < 0 or draw.max() >= index.n_images):
        raise ValueError(f"image indices must lie in [0, {index.n_images})")
    if isinstance(index, ClassicReplayIndex):
        outcome, score, offsets = _classic_replicate(index, draw, by_draw)
        w = np.bincount(draw, minlength=index.n_images)
        npos = np.bincount(index.pos_category, weights=w[index.pos_image], minlength=index.n_cat)
        return outcome, score, offsets, npos.astype(np.int64)
    rows, offsets = _expand_kernel(
        draw, index.n_images, index.image, index.key_rank, index.tie_end, index.cat_off, index.span, by_draw
    )
    w = np.bincount(draw, minlength=index.n_images)
    npos = np.bincount(index.pos_category, weights=w[index.pos_image], minlength=len(index.cat_off) - 1)
    return index.outcome[:, rows], index.score[rows], offsets, npos.astype(np.int64)
