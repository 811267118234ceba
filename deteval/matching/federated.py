"""LVIS's federated selection: which detections lvis-api 0.5.3 evaluates at all.

Three rules, applied in lvis-api's order, before and after the COCO greedy matching (which is the same):

1. ``LVISResults(..., max_dets=300)`` keeps each image's 300 highest-scoring results across all
   categories; ties keep results in file order (a stable sort by descending score); Fixed AP (the
   ``lvis_challenge_2021`` branch) keeps each category's 10,000 best over the dataset instead;
2. its ``get_ann_ids`` keeps only rows with ``0 < area < inf`` (ground truth and results alike), and a
   result is evaluated on an image only if the image has ground truth of its category or lists the
   category in ``neg_category_ids``;
3. a result of a category in the image's ``not_exhaustive_category_ids`` that matches nothing is
   ignored, not a false positive (:func:`ignore_unmatched`).
"""

from __future__ import annotations

import numpy as np

from deteval.types import sorted_unique

__all__ = ["ignore_unmatched", "in_pairs", "pair_keys", "positive_area", "top_per_group"]


def top_per_group(group: np.ndarray, score: np.ndarray, k: int) -> np.ndarray:
    """Mask of the rows kept by a cut to the ``k`` highest scores of each group (image: ``LVISResults``'
    ``max_dets``; category: the 2021 branch's ``max_dets_per_cat``), ties kept in row order.

    ``k < 0`` keeps every row (lvis-api's ``-1``).
    """
    n = len(group)
    keep = np.ones(n, bool)
    if k < 0 or n == 0 or np.bincount(group).max() <= k:
        return keep
    # stable on every key: a group's rows by descending score, ties in row order
    order = np.lexsort((-np.asarray(score, np.float64), group))
    ordered = group[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    first = np.repeat(starts, np.diff(np.append(starts, n)))
    keep[order[np.arange(n) - first >= k]] = False
    return keep


def positive_area(area: np.ndarray) -> np.ndarray:
    """lvis-api's ``get_ann_ids`` filter: ``0 < area < inf`` (a row outside it is never evaluated)."""
    return (area > 0) & (area < np.inf)


def pair_keys(image: np.ndarray, category: np.ndarray, n_cat: int) -> np.ndarray:
    """The sorted distinct ``image * n_cat + category`` keys of the rows, int64."""
    return sorted_unique(image.astype(np.int64) * n_cat + category)


_TABLE_BYTES = 1 << 28  # a bool table over every (image, category) up to this size, else a binary search


def in_pairs(image: np.ndarray, category: np.ndarray, keys: np.ndarray, n_cat: int, n_img: int) -> np.ndarray:
    """Mask of the rows whose (image, category) is one of ``keys`` (sorted, from :func:`pair_keys`)."""
    if len(keys) == 0:
        return np.zeros(len(image), bool)
    key = image.astype(np.int64) * n_cat + category
    if n_img * n_cat <= _TABLE_BYTES:  # LVIS v1 val: 24 MB, a gather instead of a search per row
        table = np.zeros(n_img * n_cat, bool)
        table[keys] = True
        return table[key]
    pos = np.minimum(np.searchsorted(keys, key), len(keys) - 1)
    return keys[pos] == key


def ignore_unmatched(state: np.ndarray, rows: np.ndarray) -> None:
    """Turn the false positives (state 0) of ``rows`` (a mask) into ignored (2), in place, in every
    area range and at every threshold: a result matched to nothing in a not-exhaustive category."""
    idx = np.flatnonzero(rows)
    sub = state[idx]
    sub[sub == 0] = 2
    state[idx] = sub
