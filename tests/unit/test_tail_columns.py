"""deteval.numeric.tail_columns: a table's trailing columns moved to its front in place."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from deteval.numeric import tail_columns


@given(st.integers(0, 40), st.integers(1, 60), st.data())
def test_tail_columns_equal_numpys_copy(n_rows, width, data):
    start = data.draw(st.integers(0, width))
    table = np.arange(n_rows * width, dtype=np.float64).reshape(n_rows, width) * 1.5 - 7
    expected = table[:, start:].copy()
    got = tail_columns(table, start)
    assert got.flags.c_contiguous and got.shape == expected.shape
    assert np.array_equal(got, expected)
    if n_rows and width > start:
        assert np.shares_memory(got, table)  # moved, not copied


def test_tail_columns_copies_what_it_may_not_move():
    table = np.arange(24.0).reshape(4, 6)
    strided = table[:, ::2]  # not contiguous: numpy's copy, the table untouched
    assert np.array_equal(tail_columns(strided, 1), strided[:, 1:])
    assert np.array_equal(table, np.arange(24.0).reshape(4, 6))
    readonly = np.arange(24.0).reshape(4, 6)
    readonly.flags.writeable = False
    assert np.array_equal(tail_columns(readonly, 2), np.arange(24.0).reshape(4, 6)[:, 2:])
