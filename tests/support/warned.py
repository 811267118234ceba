"""Warnings a test expects without asserting their texts one by one."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from deteval.errors import DetevalWarning


@contextmanager
def oddities_warned() -> Iterator[list[warnings.WarningMessage]]:
    """A block that may feed deteval input its reference scores (generated data with odd boxes, no
    ``iscrowd`` ...): each ``DetevalWarning`` it raises is recorded and yielded, and any other warning
    fails the test. The texts of those warnings are asserted in ``tests/parity/test_odd_inputs.py`` and
    the readers' tests; here the numbers are."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught
    others = [f"{w.category.__name__}: {w.message}" for w in caught if not issubclass(w.category, DetevalWarning)]
    assert not others, f"warnings other than deteval's: {others}"
