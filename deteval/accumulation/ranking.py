"""Ranking (retrieval) metrics over ranked binary relevance lists.

A query's result is a *ranked relevance list*: ``relevance[i]`` is 1 when the item at
rank ``i + 1`` is relevant and 0 when it is not. Instead of a list already in rank
order, the functions also take the items in any order together with their ``scores``;
they are then ranked by descending score with a **stable** sort, so tied items keep
their input order (unlike scikit-learn's ``argsort(kind="mergesort")[::-1]``, which
reverses it; only :func:`average_precision` with ``ties="group"`` makes the order
inside ties irrelevant).

``n_relevant`` (``R``) is the number of relevant items in the whole collection for the
query. It may exceed the relevant items present in the list (relevant items that were
never retrieved); it defaults to ``relevance.sum()``.

Cutoffs beyond the end of the list follow trec_eval: the missing ranks count as
non-relevant, so ``precision_at_k`` always divides by ``k`` and ``r_precision`` by ``R``.

AP over the full ranking reuses :func:`deteval.accumulation.integrators.average_precision` with the
``"non_interpolated"`` integrator (``sum_k P(k) * (R(k) - R(k-1))``); AP@K is the same
sum over the top ``k`` ranks with a selectable denominator (docs/protocols.md, "Ranking metrics").
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np

from deteval.accumulation.integrators import average_precision as _integrate_ap
from deteval.errors import InputError

__all__ = [
    "AP_DENOMINATORS",
    "average_precision",
    "average_precision_at_k",
    "mean_average_precision",
    "mean_average_precision_at_k",
    "mean_r_precision",
    "precision_at_k",
    "r_precision",
    "rank_relevance",
    "recall_at_k",
]

#: Denominators accepted by :func:`average_precision_at_k`.
AP_DENOMINATORS = ("min(k, R)", "R", "hits@k")


# --------------------------------------------------------------------------------------
# input checks


def _check_relevance(relevance, name: str = "relevance") -> np.ndarray:
    arr = np.asarray(relevance)
    if arr.ndim != 1:
        raise InputError(name, None, f"must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.bool_)
    if arr.dtype == np.bool_:
        return arr.copy()
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise InputError(name, None, f"must hold binary (0/1 or bool) values, got dtype {arr.dtype}")
    bad = ~((arr == 0) | (arr == 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(name, f"[{i}]", f"relevance must be binary (0/1 or bool), got {arr[i]!r}")
    return arr == 1


def _check_scores(scores, n: int, name: str = "scores") -> np.ndarray:
    try:
        arr = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(name, None, f"must be numeric: {exc}") from None
    if arr.ndim != 1:
        raise InputError(name, None, f"must be one-dimensional, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise InputError(name, None, f"must have the length of relevance ({n}), got {arr.shape[0]}")
    nan = np.isnan(arr)
    if nan.any():
        raise InputError(name, f"[{int(np.flatnonzero(nan)[0])}]", "scores must not be NaN")
    return arr


def _check_k(k) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise InputError("k", None, f"must be an integer >= 1, got {k!r}")
    if k < 1:
        raise InputError("k", None, f"must be an integer >= 1, got {k!r}")
    return int(k)


def _check_n_relevant(n_relevant, rel: np.ndarray) -> int:
    hits = int(rel.sum())
    if n_relevant is None:
        return hits
    if isinstance(n_relevant, bool) or not isinstance(n_relevant, numbers.Integral):
        raise InputError("n_relevant", None, f"must be a non-negative integer, got {n_relevant!r}")
    if n_relevant < hits:
        raise InputError(
            "n_relevant",
            None,
            f"({n_relevant}) is smaller than the number of relevant items in the list ({hits})",
        )
    return int(n_relevant)


def rank_relevance(relevance, scores=None) -> tuple[np.ndarray, np.ndarray | None]:
    """Check a relevance list and put it in rank order.

    Parameters
    ----------
    relevance : array-like of shape (n_items,)
        Binary relevance (0/1 or bool): in rank order (best first) when ``scores`` is
        None, otherwise in the order of ``scores``.
    scores : array-like of shape (n_items,), default=None
        Scores of the items; higher is better. No NaN.

    Returns
    -------
    relevance : ndarray of bool, shape (n_items,)
        Relevance in rank order.
    scores : ndarray of float64, shape (n_items,) or None
        The scores in rank order (non-increasing), None when none were given.

    Raises
    ------
    InputError
        Non-binary relevance, lengths that differ, NaN scores.
    """
    rel = _check_relevance(relevance)
    if scores is None:
        return rel, None
    s = _check_scores(scores, len(rel))
    order = np.argsort(-s, kind="stable")
    return rel[order], s[order]


def _no_relevant(zero_division: float) -> float:
    return float(zero_division)


# --------------------------------------------------------------------------------------
# single query


def precision_at_k(relevance, k: int, scores=None) -> float:
    """Precision at cutoff ``k``: the fraction of the top ``k`` ranks that are relevant.

    ``P@K = sum_{i <= k} rel_i / k``.

    Parameters
    ----------
    relevance : array-like of shape (n_items,)
        Binary relevance in rank order, or in the order of ``scores``.
    k : int
        Cutoff, ``k >= 1``. When ``k`` exceeds the list length the missing ranks
        count as non-relevant (trec_eval's ``P_k``): the denominator stays ``k``.
    scores : array-like of shape (n_items,), default=None
        When given, items are ranked by descending score (stable sort).

    Returns
    -------
    precision : float
        In ``[0, 1]``.

    Examples
    --------
    >>> precision_at_k([1, 1, 0, 1, 0], k=4)
    0.75
    """
    k = _check_k(k)
    rel, _ = rank_relevance(relevance, scores)
    return float(np.count_nonzero(rel[:k]) / k)


def recall_at_k(
    relevance, k: int, n_relevant: int | None = None, scores=None, *, zero_division: float = math.nan
) -> float:
    """Recall at cutoff ``k``: the fraction of all relevant items found in the top ``k`` ranks.

    ``R@K = sum_{i <= k} rel_i / R``.

    Parameters
    ----------
    relevance : array-like of shape (n_items,)
        Binary relevance in rank order, or in the order of ``scores``.
    k : int
        Cutoff, ``k >= 1``.
    n_relevant : int, default=None
        ``R``, the number of relevant items in the collection (retrieved or not);
        default ``sum(relevance)``. Must be at least ``sum(relevance)``.
    scores : array-like of shape (n_items,), default=None
        When given, items are ranked by descending score (stable sort).
    zero_division : float, default=nan
        Returned when ``R == 0``.

    Returns
    -------
    recall : float

    Examples
    --------
    >>> recall_at_k([1, 1, 0, 1, 0], k=4, n_relevant=5)
    0.6
    """
    k = _check_k(k)
    rel, _ = rank_relevance(relevance, scores)
    r = _check_n_relevant(n_relevant, rel)
    if r == 0:
        return _no_relevant(zero_division)
    return float(np.count_nonzero(rel[:k]) / r)


def r_precision(relevance, n_relevant: int | None = None, scores=None, *, zero_division: float = math.nan) -> float:
    """R-precision: precision at rank ``R``, the number of relevant items.

    ``R-prec = P@R = sum_{i <= R} rel_i / R`` (which also equals ``R@R``). When the
    list is shorter than ``R`` the missing ranks count as non-relevant (trec_eval's
    ``Rprec``).

    Parameters
    ----------
    relevance : array-like of shape (n_items,)
        Binary relevance in rank order, or in the order of ``scores``.
    n_relevant : int, default=None
        ``R``; default ``sum(relevance)``.
    scores : array-like of shape (n_items,), default=None
        When given, items are ranked by descending score (stable sort).
    zero_division : float, default=nan
        Returned when ``R == 0``.

    Returns
    -------
    r_precision : float
    """
    rel, _ = rank_relevance(relevance, scores)
    r = _check_n_relevant(n_relevant, rel)
    if r == 0:
        return _no_relevant(zero_division)
    return float(np.count_nonzero(rel[:r]) / r)


def average_precision(
    relevance,
    n_relevant: int | None = None,
    scores=None,
    *,
    ties: str = "item",
    zero_division: float = math.nan,
) -> float:
    """Non-interpolated average precision of the full ranking.

    ``AP = sum_k P@k * rel_k / R``, computed by
    :func:`deteval.accumulation.integrators.average_precision` with ``integrator="non_interpolated"``
    and ``npos=R``.

    Parameters
    ----------
    relevance : array-like of shape (n_items,)
        Binary relevance in rank order, or in the order of ``scores``.
    n_relevant : int, default=None
        ``R``; default ``sum(relevance)``. Relevant items never retrieved contribute 0.
    scores : array-like of shape (n_items,), default=None
        When given, items are ranked by descending score (stable sort).
    ties : {"item", "group"}, default="item"
        ``"item"``: every rank is a point. ``"group"`` (needs ``scores``): a run of
        equal scores enters at once with its end precision, as scikit-learn's
        ``average_precision_score`` does; with ``n_relevant`` left at its default the
        result then equals scikit-learn's.
    zero_division : float, default=nan
        Returned when ``R == 0``.

    Returns
    -------
    average_precision : float
    """
    if ties not in ("item", "group"):  # "argsort" names the VOC family's ranking of detections, not this one
        raise InputError("ties", None, f"must be 'item' or 'group' here, got {ties!r}")
    rel, s = rank_relevance(relevance, scores)
    r = _check_n_relevant(n_relevant, rel)
    if ties == "group" and s is None:
        raise InputError("ties", None, "ties='group' needs scores")
    if r == 0:
        return _no_relevant(zero_division)
    return _integrate_ap(rel, None, r, "non_interpolated", ties=ties, scores=s)


def average_precision_at_k(
    relevance,
    k: int,
    denominator: str = "min(k, R)",
    n_relevant: int | None = None,
    scores=None,
    *,
    zero_division: float = math.nan,
) -> float:
    """Average precision truncated at cutoff ``k``, with a selectable denominator.

    ``AP@K = sum_{i <= k} P@i * rel_i / D``, where ``D`` is one of:

    ``"min(k, R)"`` (default)
        The largest value the numerator can reach, so a perfect top ``k`` scores 1.
        This is the "apk" of Kaggle and of ``ml_metrics.average_precision.apk``
        (``score / min(len(actual), k)``), used for MAP@K in recommender competitions.
    ``"R"``
        Truncated AP: the full-ranking AP with every rank after ``k`` treated as
        non-relevant. This is trec_eval's ``map_cut_K`` (divides by ``num_rel``); it
        equals :func:`average_precision` when ``k`` covers the whole list, and it
        cannot reach 1 when ``k < R``.
    ``"hits@k"``
        The number of relevant items in the top ``k``: the mean of the precisions at
        the relevant ranks retrieved (used by some papers and libraries; see
        docs/protocols.md, "Ranking metrics"). It ignores relevant items that were not retrieved,
        so it is 1 whenever the first rank is the only relevant one in the top ``k``.
        It is 0 when the top ``k`` holds no relevant item (and ``R > 0``).

    Because ``hits@k <= min(k, R) <= R``, the three orders as
    ``AP@K(R) <= AP@K(min(k, R)) <= AP@K(hits@k)``.

    Parameters
    ----------
    relevance : array-like of shape (n_items,)
        Binary relevance in rank order, or in the order of ``scores``.
    k : int
        Cutoff, ``k >= 1`` (may exceed the list length).
    denominator : {"min(k, R)", "R", "hits@k"}, default="min(k, R)"
    n_relevant : int, default=None
        ``R``; default ``sum(relevance)``.
    scores : array-like of shape (n_items,), default=None
        When given, items are ranked by descending score (stable sort).
    zero_division : float, default=nan
        Returned when ``R == 0``.

    Returns
    -------
    average_precision : float

    Examples
    --------
    >>> round(average_precision_at_k([0, 1, 0, 1, 1, 0], k=4, denominator="R"), 6)
    0.333333
    """
    k = _check_k(k)
    if denominator not in AP_DENOMINATORS:
        raise InputError("denominator", None, f"must be one of {AP_DENOMINATORS}, got {denominator!r}")
    rel, _ = rank_relevance(relevance, scores)
    r = _check_n_relevant(n_relevant, rel)
    if r == 0:
        return _no_relevant(zero_division)
    top = rel[:k]
    hits = int(np.count_nonzero(top))
    if hits == 0:
        return 0.0
    d = {"min(k, R)": min(k, r), "R": r, "hits@k": hits}[denominator]
    return _integrate_ap(top, None, d, "non_interpolated")


# --------------------------------------------------------------------------------------
# several queries


def _per_query(name: str, values, n: int) -> list:
    if values is None:
        return [None] * n
    values = list(values)
    if len(values) != n:
        raise InputError(name, None, f"must have one entry per query ({n}), got {len(values)}")
    return values


def _queries(relevances: Sequence, n_relevant, scores):
    if isinstance(relevances, np.ndarray) and relevances.ndim == 1:
        raise InputError("relevances", None, "must be a sequence of relevance lists (one per query)")
    relevances = list(relevances)
    if not relevances:
        raise InputError("relevances", None, "must hold at least one query")
    n = len(relevances)
    return relevances, _per_query("n_relevant", n_relevant, n), _per_query("scores", scores, n)


def mean_average_precision_at_k(
    relevances: Sequence,
    k: int,
    denominator: str = "min(k, R)",
    n_relevant: Sequence[int] | None = None,
    scores: Sequence | None = None,
    *,
    zero_division: float = math.nan,
) -> float:
    """MAP@K: the unweighted mean of :func:`average_precision_at_k` over queries.

    Parameters
    ----------
    relevances : sequence of array-like
        One relevance list per query (lists may differ in length).
    k, denominator, zero_division
        As in :func:`average_precision_at_k`, shared by all queries.
    n_relevant : sequence of int, default=None
        ``R`` per query; default each list's sum.
    scores : sequence of array-like, default=None
        Scores per query.

    Returns
    -------
    map_at_k : float
        NaN propagates from any query with ``R == 0`` unless ``zero_division`` is a number.
    """
    qs, rs, ss = _queries(relevances, n_relevant, scores)
    vals = [
        average_precision_at_k(q, k, denominator, r, s, zero_division=zero_division)
        for q, r, s in zip(qs, rs, ss, strict=True)
    ]
    return float(np.mean(vals))


def mean_average_precision(
    relevances: Sequence,
    n_relevant: Sequence[int] | None = None,
    scores: Sequence | None = None,
    *,
    ties: str = "item",
    zero_division: float = math.nan,
) -> float:
    """MAP: the unweighted mean of :func:`average_precision` (full rankings) over queries."""
    qs, rs, ss = _queries(relevances, n_relevant, scores)
    vals = [
        average_precision(q, r, s, ties=ties, zero_division=zero_division) for q, r, s in zip(qs, rs, ss, strict=True)
    ]
    return float(np.mean(vals))


def mean_r_precision(
    relevances: Sequence,
    n_relevant: Sequence[int] | None = None,
    scores: Sequence | None = None,
    *,
    zero_division: float = math.nan,
) -> float:
    """The unweighted mean of :func:`r_precision` over queries."""
    qs, rs, ss = _queries(relevances, n_relevant, scores)
    vals = [r_precision(q, r, s, zero_division=zero_division) for q, r, s in zip(qs, rs, ss, strict=True)]
    return float(np.mean(vals))
