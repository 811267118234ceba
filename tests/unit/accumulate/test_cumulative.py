"""The one cumulative TP/FP curve primitive, against numpy's cumsum and scikit-learn's tie rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from deteval.accumulation.cumulative import cumulative_counts, cumulative_tp_fp


def _reference(tp, fp, scores, group):
    tpc = np.cumsum(tp, dtype=np.int64)
    fpc = np.cumsum(fp & ~tp, dtype=np.int64)
    if group and len(tp):
        rows = np.flatnonzero(np.append(scores[1:] != scores[:-1], True))  # last row of each run
    else:
        rows = np.arange(len(tp), dtype=np.int64)
    return tpc[rows], fpc[rows], rows


@given(
    outcome=st.lists(st.sampled_from([0, 1, 2, 3]), max_size=60),
    scores=st.lists(st.sampled_from([1.0, 0.5, 0.5, 0.0, -0.0, float("nan")]), max_size=60),
)
def test_counts_are_numpys_cumsum_at_the_points(outcome, scores):
    n = min(len(outcome), len(scores))
    code = np.array(outcome[:n], np.int64)
    tp, fp = (code == 1) | (code == 3), (code == 0) | (code == 3)  # 3: both flags, a true positive
    s = np.sort(np.array(scores[:n]))[::-1].copy()
    for ties in ("item", "group"):
        got = cumulative_tp_fp(tp, fp, s, ties=ties)
        want = _reference(tp, fp, s, ties == "group")
        for g, w in zip(got, want):
            assert g.dtype == np.int64
            np.testing.assert_array_equal(g, w)


def test_fp_none_counts_every_other_row_and_the_kernel_is_the_same():
    tp = np.array([True, False, False, True])
    tpc, fpc, rows = cumulative_tp_fp(tp)
    assert tpc.tolist() == [1, 1, 1, 2] and fpc.tolist() == [0, 1, 2, 2] and rows.tolist() == [0, 1, 2, 3]
    k = cumulative_counts(tp, ~tp, np.zeros(0), False)
    assert all(np.array_equal(a, b) for a, b in zip(k, (tpc, fpc, rows)))


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="ties"):
        cumulative_tp_fp(np.ones(2, bool), ties="block")
    with pytest.raises(ValueError, match="scores"):
        cumulative_tp_fp(np.ones(2, bool), ties="group")
    with pytest.raises(ValueError, match="shape"):
        cumulative_tp_fp(np.ones(2, bool), np.ones(3, bool))
