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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deteval.accumulation.accumulate import rank_by_category
from deteval.jit import njit

__all__ = ["VocReplayIndex", "build_voc_index", "voc_replicate"]


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


def build_voc_index(
    category: np.ndarray,
    image: np.ndarray,
    score: np.ndarray,
    outcome: np.ndarray,
    pos_image: np.ndarray,
    pos_category: np.ndarray,
    n_cat: int,
    n_images: int,
) -> VocReplayIndex:
    """Rank the matched detections (``VocMatches``' rows and ``outcome`` (T, D)) as the VOC protocols do,
    once for many replicates; ``pos_*`` are the ground truth counted as positives (not difficult)."""
    category = np.asarray(category, np.int64)
    image = np.asarray(image, np.int64)
    score = np.asarray(score, np.float64)
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


KERNELS = (_expand_kernel,)


def voc_replicate(
    index: VocReplayIndex, draw: np.ndarray, by_draw: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The ranking of the images ``draw`` (dense indices in the order they stand, repeats allowed) as the
    VOC protocols rank that materialised dataset: ``(outcome (T, C), score (C,), offsets (K + 1,), npos (K,))``.

    ``by_draw`` (a bootstrap replicate) breaks ties by (draw position, row); False (a slice, no image
    twice) keeps the original row order. The kernel holds no GIL: replicates run side by side on threads.
    """
    draw = np.ascontiguousarray(draw, np.int64)
    if len(draw) and (draw.min() < 0 or draw.max() >= index.n_images):
        raise ValueError(f"image indices must lie in [0, {index.n_images})")
    rows, offsets = _expand_kernel(
        draw, index.n_images, index.image, index.key_rank, index.tie_end, index.cat_off, index.span, by_draw
    )
    w = np.bincount(draw, minlength=index.n_images)
    npos = np.bincount(index.pos_category, weights=w[index.pos_image], minlength=len(index.cat_off) - 1)
    return index.outcome[:, rows], index.score[rows], offsets, npos.astype(np.int64)
