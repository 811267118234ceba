"""Ranking metrics (deteval.accumulation.ranking): seed worked examples, scikit-learn parity, properties, errors.

Every expected number is derived by hand in a comment next to it, or produced by scikit-learn.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.metrics import (
    average_precision_score,
    label_ranking_average_precision_score,
    precision_score,
    recall_score,
)

from deteval.accumulation.integrators import average_precision as integrator_ap
from deteval.accumulation.ranking import (
    AP_DENOMINATORS,
    average_precision,
    average_precision_at_k,
    mean_average_precision,
    mean_average_precision_at_k,
    mean_r_precision,
    precision_at_k,
    r_precision,
    rank_relevance,
    recall_at_k,
)
from deteval.errors import InputError

# --------------------------------------------------------------------------------------
# seed 004: goal g, correct premises a, b, c; the model ranks x, a, y, b, c, z.
# relevance in rank order:           x  a  y  b  c  z
XAYBCZ = [0, 1, 0, 1, 1, 0]
# P@k at the relevant ranks: a (rank 2) -> 1/2, b (rank 4) -> 2/4, c (rank 5) -> 3/5.
# (The seed's table lists P@5 = 3/4 and numbers rank 6 as "5"; at rank 5 three of five
#  items are relevant, so P@5 = 3/5, and P@6 = 3/6, not the table's 3/5.)


@pytest.mark.parametrize(
    ("k", "expected"),
    [(1, 0 / 1), (2, 1 / 2), (3, 1 / 3), (4, 2 / 4), (5, 3 / 5), (6, 3 / 6)],
)
def test_seed004_precision_at_k(k, expected):
    assert precision_at_k(XAYBCZ, k) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("k", "expected"),
    [(1, 0 / 3), (2, 1 / 3), (3, 1 / 3), (4, 2 / 3), (5, 3 / 3), (6, 3 / 3)],
)
def test_seed004_recall_at_k(k, expected):
    # the seed's "Rec" column: s(k) / s(N) with s(N) = 3
    assert recall_at_k(XAYBCZ, k) == pytest.approx(expected)


def test_seed004_average_precision_full():
    # ap = sum_k p(k) delta(k) / s(N) = (1/2 + 2/4 + 3/5) / 3 = 1.6 / 3
    assert average_precision(XAYBCZ) == pytest.approx(1.6 / 3)
    for d in AP_DENOMINATORS:  # k = 6 covers the list and every relevant item: all three agree
        assert average_precision_at_k(XAYBCZ, 6, d) == pytest.approx(1.6 / 3)


@pytest.mark.parametrize(
    ("k", "denominator", "expected"),
    [
        # numerators: k=1: 0; k=2,3: 1/2; k=4: 1/2 + 2/4 = 1; k>=5: 1 + 3/5 = 1.6.  R = 3.
        (1, "min(k, R)", 0.0),
        (1, "R", 0.0),
        (1, "hits@k", 0.0),  # no hit in the top 1: 0, not 0/0
        (2, "min(k, R)", (1 / 2) / 2),
        (2, "R", (1 / 2) / 3),
        (2, "hits@k", (1 / 2) / 1),
        (3, "min(k, R)", (1 / 2) / 3),
        (3, "R", (1 / 2) / 3),
        (3, "hits@k", (1 / 2) / 1),
        (4, "min(k, R)", 1.0 / 3),
        (4, "R", 1.0 / 3),
        (4, "hits@k", 1.0 / 2),  # the seed's s(K) "hack": mean of 1/2 and 2/4
        (5, "min(k, R)", 1.6 / 3),
        (5, "hits@k", 1.6 / 3),
        (10, "min(k, R)", 1.6 / 3),  # k past the end: nothing more to add
    ],
)
def test_seed004_ap_at_k(k, denominator, expected):
    assert average_precision_at_k(XAYBCZ, k, denominator) == pytest.approx(expected)


def test_seed004_r_precision():
    # R = 3: top 3 is x a y -> 1 relevant -> 1/3
    assert r_precision(XAYBCZ) == pytest.approx(1 / 3)


def test_seed004_hits_at_k_ignores_missed_relevant():
    # with a 4th relevant premise d that the ranking never retrieves (R = 4), "hits@k" stays the
    # mean precision at the hits, while "R" and "min(k, R)" are charged for the miss
    assert average_precision_at_k(XAYBCZ, 6, "hits@k", n_relevant=4) == pytest.approx(1.6 / 3)
    assert average_precision_at_k(XAYBCZ, 6, "R", n_relevant=4) == pytest.approx(1.6 / 4)
    assert average_precision_at_k(XAYBCZ, 6, "min(k, R)", n_relevant=4) == pytest.approx(1.6 / 4)
    assert average_precision(XAYBCZ, n_relevant=4) == pytest.approx(1.6 / 4)
    assert recall_at_k(XAYBCZ, 6, n_relevant=4) == pytest.approx(3 / 4)
    # R-precision at R = 4: x a y b -> 2 / 4
    assert r_precision(XAYBCZ, n_relevant=4) == pytest.approx(2 / 4)


# --------------------------------------------------------------------------------------
# seed 000: airplanes (relevant) and geese; the blog's ordering of 10 images, 5 airplanes.
# From its table (P, R at cutoffs 1..10): 100/20, 100/40, 66/40, 75/60, 60/60, 66/80, 57/80,
# 50/80, 44/80, 50/100 -> recall rises at ranks 1, 2, 4, 6, 10.
AIRPLANES = [1, 1, 0, 1, 0, 1, 0, 0, 0, 1]


def test_seed000_table():
    # P@k = hits/k and R@k = hits/5 reproduce the blog's (rounded-down) table
    hits = np.cumsum(AIRPLANES)
    for k in range(1, 11):
        assert precision_at_k(AIRPLANES, k) == pytest.approx(hits[k - 1] / k)
        assert recall_at_k(AIRPLANES, k) == pytest.approx(hits[k - 1] / 5)
    assert [math.floor(100 * precision_at_k(AIRPLANES, k)) for k in range(1, 11)] == [
        100, 100, 66, 75, 60, 66, 57, 50, 44, 50
    ]  # fmt: skip
    assert [round(100 * recall_at_k(AIRPLANES, k)) for k in range(1, 11)] == [20, 40, 40, 60, 60, 80, 80, 80, 80, 100]


def test_seed000_retrieved_four():
    # the example retrieval = the top 4: tp 3, fp 1, fn 2 -> precision 3/4 = 0.75, recall 3/5 = 0.6
    assert precision_at_k(AIRPLANES, 4) == pytest.approx(0.75)
    assert recall_at_k(AIRPLANES, 4) == pytest.approx(0.6)
    # the same when only the 4 retrieved images are passed and R = 5 is given
    assert recall_at_k(AIRPLANES[:4], 4, n_relevant=5) == pytest.approx(0.6)


def test_seed000_average_precision():
    # (1*0.2) + (1*0.2) + (3/4*0.2) + (4/6*0.2) + (5/10*0.2) = 0.2 * 47/12 = 0.78333...
    # (the blog writes 0.782 because it rounds 4/6 to 0.66)
    expected = 0.2 * (1 + 1 + 3 / 4 + 4 / 6 + 5 / 10)
    assert expected == pytest.approx(47 / 60)
    assert average_precision(AIRPLANES) == pytest.approx(expected)
    assert average_precision_at_k(AIRPLANES, 10, "R") == pytest.approx(expected)
    # R-precision: top 5 = 1 1 0 1 0 -> 3/5 (the break-even point: P@5 = R@5 = 0.6)
    assert r_precision(AIRPLANES) == pytest.approx(3 / 5)
    assert precision_at_k(AIRPLANES, 5) == recall_at_k(AIRPLANES, 5)
    # AP@4: numerator 1 + 1 + 3/4 = 2.75; min(4, 5) = 4; R = 5; hits = 3
    assert average_precision_at_k(AIRPLANES, 4, "min(k, R)") == pytest.approx(2.75 / 4)
    assert average_precision_at_k(AIRPLANES, 4, "R") == pytest.approx(2.75 / 5)
    assert average_precision_at_k(AIRPLANES, 4, "hits@k") == pytest.approx(2.75 / 3)


# --------------------------------------------------------------------------------------
# seed 001: ten inferences with scores (ties at 0.54 and 0.2), five TPs.
#              H     B     E     A     J     D     I     C    F    G
SCORES_001 = [0.99, 0.88, 0.72, 0.70, 0.54, 0.54, 0.38, 0.2, 0.2, 0.1]
REL_001 = [1, 1, 0, 0, 0, 1, 1, 0, 0, 1]


def test_seed001_scores_ranking_shuffled():
    # precision at the TP rows of the seed's table: 1.0, 1.0, 0.5 (D), 0.571 (I = 4/7), 0.5 (G)
    expected = (1 + 1 + 3 / 6 + 4 / 7 + 5 / 10) / 5
    perm = np.array([7, 2, 9, 0, 4, 5, 3, 1, 8, 6])  # J (4) before D (5) in input order: stable keeps it
    rel = np.array(REL_001)[perm]
    sc = np.array(SCORES_001)[perm]
    assert average_precision(rel, scores=sc) == pytest.approx(expected)
    assert average_precision(REL_001) == pytest.approx(expected)
    # P@6 = 3/6, R@6 = 3/5
    assert precision_at_k(rel, 6, scores=sc) == pytest.approx(3 / 6)
    assert recall_at_k(rel, 6, scores=sc) == pytest.approx(3 / 5)


def test_seed001_stable_ties_and_group_ties():
    # D (relevant) placed before J in the input: the stable sort keeps D at rank 5 -> P = 3/5
    rel = [1, 1, 0, 0, 1, 0, 1, 0, 0, 1]
    item = (1 + 1 + 3 / 5 + 4 / 7 + 5 / 10) / 5
    assert average_precision(rel, scores=SCORES_001) == pytest.approx(item)
    # tie-grouped: the 0.54 block enters at its end (rank 6, P = 3/6) whatever its order
    group = (1 + 1 + 3 / 6 + 4 / 7 + 5 / 10) / 5
    assert average_precision(rel, scores=SCORES_001, ties="group") == pytest.approx(group)
    assert average_precision(REL_001, scores=SCORES_001, ties="group") == pytest.approx(group)
    assert average_precision(rel, scores=SCORES_001, ties="group") == pytest.approx(
        average_precision_score(rel, SCORES_001)
    )


def test_rank_relevance_stable():
    rel, s = rank_relevance([0, 1, 1, 0], scores=[0.5, 0.5, 0.9, 0.5])
    assert rel.tolist() == [True, False, True, False]
    assert s.tolist() == [0.9, 0.5, 0.5, 0.5]
    rel, s = rank_relevance([1, 0])
    assert rel.tolist() == [True, False] and s is None


# --------------------------------------------------------------------------------------
# scikit-learn parity

binary_lists = st.lists(st.integers(0, 1), min_size=1, max_size=40)


@st.composite
def scored_lists(draw, min_relevant=1):
    rel = draw(binary_lists.filter(lambda r: sum(r) >= min_relevant))
    # distinct scores: a random permutation of 0..n-1
    perm = draw(st.permutations(list(range(len(rel)))))
    return np.array(rel), np.array(perm, dtype=float)


@given(scored_lists())
def test_sklearn_average_precision_no_ties(data):
    rel, sc = data
    expected = average_precision_score(rel, sc)
    assert average_precision(rel, scores=sc) == pytest.approx(expected, abs=1e-12)
    assert average_precision_at_k(rel, len(rel), "R", scores=sc) == pytest.approx(expected, abs=1e-12)
    assert average_precision_at_k(rel, len(rel) + 3, "R", scores=sc) == pytest.approx(expected, abs=1e-12)


@given(scored_lists(), st.integers(1, 5))
def test_sklearn_average_precision_group_ties(data, levels):
    rel, sc = data
    tied = np.floor(sc * levels / len(sc))  # few distinct scores
    assert average_precision(rel, scores=tied, ties="group") == pytest.approx(
        average_precision_score(rel, tied), abs=1e-12
    )


@given(scored_lists())
def test_sklearn_lrap_equals_ap(data):
    rel, sc = data
    if rel.all():  # LRAP gives 1 when every label is relevant; so does AP, but skip the special case
        return
    lrap = label_ranking_average_precision_score(rel[None, :], sc[None, :])
    assert average_precision(rel, scores=sc) == pytest.approx(lrap, abs=1e-12)


@given(scored_lists(min_relevant=0), st.integers(1, 45))
def test_sklearn_precision_recall_top_k(data, k):
    rel, sc = data
    rank = np.empty(len(sc), dtype=int)
    rank[np.argsort(-sc, kind="stable")] = np.arange(len(sc))
    pred = (rank < k).astype(int)  # the top k are the predicted positives
    if k <= len(rel):
        assert precision_at_k(rel, k, scores=sc) == pytest.approx(precision_score(rel, pred, zero_division=0.0))
    else:  # past the end the denominator stays k (trec_eval)
        assert precision_at_k(rel, k, scores=sc) == pytest.approx(rel.sum() / k)
    if rel.sum() > 0:
        assert recall_at_k(rel, k, scores=sc) == pytest.approx(recall_score(rel, pred))
    else:
        assert math.isnan(recall_at_k(rel, k, scores=sc))


# --------------------------------------------------------------------------------------
# properties


@given(binary_lists, st.integers(1, 45), st.integers(0, 10))
def test_denominator_order_and_bounds(rel, k, missed):
    if sum(rel) == 0:
        return
    r = sum(rel) + missed
    by_r = average_precision_at_k(rel, k, "R", n_relevant=r)
    by_min = average_precision_at_k(rel, k, "min(k, R)", n_relevant=r)
    by_hits = average_precision_at_k(rel, k, "hits@k", n_relevant=r)
    assert 0.0 <= by_r <= by_min + 1e-12
    assert by_min <= by_hits + 1e-12
    assert by_hits <= 1.0 + 1e-12
    # AP@K with denominator R is the full-ranking AP of the list cut at k
    assert by_r == pytest.approx(average_precision(rel[:k], n_relevant=r))
    # and it never exceeds the full AP
    assert by_r <= average_precision(rel, n_relevant=r) + 1e-12


@given(binary_lists)
def test_perfect_top_k_scores_one_with_min_denominator(rel):
    r = sum(rel)
    if r == 0:
        return
    ideal = sorted(rel, reverse=True)
    for k in range(1, len(rel) + 2):
        assert average_precision_at_k(ideal, k, "min(k, R)") == pytest.approx(1.0)
        assert precision_at_k(ideal, k) == pytest.approx(min(k, r) / k)
    assert r_precision(ideal) == 1.0
    assert average_precision(ideal) == pytest.approx(1.0)


@given(binary_lists, st.integers(0, 10))
def test_recall_monotone_and_r_precision(rel, missed):
    r = sum(rel) + missed
    if r == 0:
        return
    recalls = [recall_at_k(rel, k, n_relevant=r) for k in range(1, len(rel) + 3)]
    assert all(b >= a for a, b in zip(recalls, recalls[1:]))
    assert recalls[-1] == pytest.approx(sum(rel) / r)
    # R-precision = P@R = R@R
    assert r_precision(rel, n_relevant=r) == pytest.approx(precision_at_k(rel, r))
    assert r_precision(rel, n_relevant=r) == pytest.approx(recall_at_k(rel, r, n_relevant=r))


@given(binary_lists)
def test_reuses_integrator(rel):
    if sum(rel) == 0:
        return
    assert average_precision(rel) == integrator_ap(np.array(rel, bool), npos=sum(rel), integrator="non_interpolated")


def test_precision_past_end_and_no_relevant():
    # k beyond the list: unretrieved ranks count as non-relevant -> 2 hits / 5
    assert precision_at_k([1, 1], 5) == pytest.approx(2 / 5)
    assert precision_at_k([], 3) == 0.0
    # R = 0: undefined -> zero_division (NaN by default); P@K is still defined
    assert math.isnan(recall_at_k([0, 0], 1))
    assert math.isnan(average_precision_at_k([0, 0], 2))
    assert math.isnan(r_precision([0, 0]))
    assert math.isnan(average_precision([0, 0]))
    assert recall_at_k([0, 0], 1, zero_division=0.0) == 0.0
    assert average_precision_at_k([0, 0], 2, "hits@k", zero_division=1.0) == 1.0
    assert precision_at_k([0, 0], 1) == 0.0
    # R > 0 but no hit in the top k: 0 under every denominator
    for d in AP_DENOMINATORS:
        assert average_precision_at_k([0, 0, 1], 2, d) == 0.0


def test_bool_and_float_relevance():
    assert average_precision([True, False, True]) == average_precision([1.0, 0.0, 1.0])
    # (1 + 2/3) / 2
    assert average_precision(np.array([1, 0, 1], dtype=np.int8)) == pytest.approx((1 + 2 / 3) / 2)


# --------------------------------------------------------------------------------------
# several queries


def test_mean_variants():
    qs = [XAYBCZ, AIRPLANES]
    # AP@4 (min(k, R)): x a y b -> 1 / 3; airplanes -> 2.75 / 4
    assert mean_average_precision_at_k(qs, 4) == pytest.approx((1 / 3 + 2.75 / 4) / 2)
    assert mean_average_precision_at_k(qs, 4, "R", n_relevant=[3, 5]) == pytest.approx((1 / 3 + 2.75 / 5) / 2)
    assert mean_average_precision(qs) == pytest.approx((1.6 / 3 + 47 / 60) / 2)
    assert mean_r_precision(qs) == pytest.approx((1 / 3 + 3 / 5) / 2)
    sc = [np.arange(6, 0, -1), np.arange(10, 0, -1)]  # scores that keep the given order
    assert mean_average_precision(qs, scores=sc) == pytest.approx((1.6 / 3 + 47 / 60) / 2)
    assert math.isnan(mean_average_precision_at_k([XAYBCZ, [0, 0]], 4))
    assert mean_average_precision_at_k([XAYBCZ, [0, 0]], 4, zero_division=0.0) == pytest.approx(1 / 6)


# --------------------------------------------------------------------------------------
# errors


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: precision_at_k([0, 2, 1], 2), r"relevance: \[1\]: relevance must be binary"),
        (lambda: precision_at_k([0, -1], 2), r"relevance: \[1\]: relevance must be binary"),
        (lambda: precision_at_k([0.5, 1], 2), r"relevance: \[0\]"),
        (lambda: precision_at_k([1, float("nan")], 2), r"relevance: \[1\]"),
        (lambda: precision_at_k(["a", "b"], 1), r"relevance: must hold binary"),
        (lambda: precision_at_k([[1, 0]], 1), r"relevance: must be one-dimensional"),
        (lambda: precision_at_k([1, 0], 0), r"k: must be an integer >= 1, got 0"),
        (lambda: precision_at_k([1, 0], -3), r"k: must be an integer >= 1"),
        (lambda: precision_at_k([1, 0], 1.5), r"k: must be an integer >= 1, got 1.5"),
        (lambda: precision_at_k([1, 0], True), r"k: must be an integer"),
        (lambda: average_precision_at_k([1, 0], 0), r"k: must be an integer >= 1"),
        (lambda: precision_at_k([1, 0], 1, scores=[0.1]), r"scores: must have the length of relevance \(2\), got 1"),
        (lambda: recall_at_k([1, 0], 1, scores=[0.1, float("nan")]), r"scores: \[1\]: scores must not be NaN"),
        (lambda: recall_at_k([1, 1, 0], 1, n_relevant=1), r"n_relevant: \(1\) is smaller than .* \(2\)"),
        (lambda: r_precision([1, 0], n_relevant=-1), r"n_relevant: \(-1\) is smaller"),
        (lambda: r_precision([1, 0], n_relevant=2.0), r"n_relevant: must be a non-negative integer"),
        (lambda: average_precision_at_k([1, 0], 2, "min(K,R)"), r"denominator: must be one of"),
        (lambda: average_precision([1, 0], ties="group"), r"ties: ties='group' needs scores"),
        (lambda: average_precision([1, 0], scores=[0.5, 0.5], ties="argsort"), r"ties: must be 'item' or 'group' here"),
        (lambda: mean_average_precision_at_k([[1], [0, 1]], 2, n_relevant=[1]), r"n_relevant: must have one entry"),
        (lambda: mean_average_precision_at_k(np.array([1, 0]), 2), r"relevances: must be a sequence"),
        (lambda: mean_r_precision([]), r"relevances: must hold at least one query"),
    ],
)
def test_errors(call, match):
    with pytest.raises(InputError, match=match):
        call()


def test_input_error_is_value_error():
    with pytest.raises(ValueError, match="k: must be"):
        recall_at_k([1], 0)
