"""One file read by the byte scanner and by the general reader, for the tests of the scanner's modes
(oriented boxes, keypoints): what each gives, its error or its warnings, must be the same."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable

import numpy as np

import deteval
from deteval.errors import InputError
from deteval.tuning import TUNING


def read_either_way(text: str, read: Callable, tmp_path, monkeypatch, scanner: bool, piece_bytes: int | None = None):
    """``read(path)`` of ``text`` with the scanner forced on or off: (its result, or the InputError's message, and
    the warnings' messages, sorted), the path written FILE in both."""
    path = tmp_path / ("fast.json" if scanner else "slow.json")
    path.write_text(text)
    monkeypatch.setattr(TUNING, "fast_path_bytes", 0 if scanner else 1 << 62)
    if piece_bytes is not None:
        monkeypatch.setattr(TUNING, "piece_bytes", piece_bytes)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = read(str(path))
        except InputError as e:
            return str(e).replace(str(path), "FILE"), []
    return out, sorted(str(w.message).replace(str(path), "FILE") for w in caught)


def assert_same_read(fast, slow, fields: tuple[str, ...]) -> None:
    """Two :func:`read_either_way` answers: the same messages, or containers equal in ``fields`` bit for bit
    (dtype, shape, NaN where NaN, the sign of zeros)."""
    (fast, fast_warned), (slow, slow_warned) = fast, slow
    assert fast_warned == slow_warned
    if isinstance(slow, str) or isinstance(fast, str):
        assert fast == slow
        return
    for f in fields:
        a, b = getattr(fast, f), getattr(slow, f)
        if not isinstance(a, np.ndarray):
            assert a == b, f
            continue
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), f
        if a.dtype.kind == "f":
            assert np.array_equal(np.signbit(a), np.signbit(b)), f


def assert_same_tables(fast, slow) -> None:
    """Two ground truths' image and category tables: ids, names, sizes."""
    for table in ("categories", "images"):
        a, b = getattr(fast, table), getattr(slow, table)
        assert np.array_equal(a.ids, b.ids) and a.names == b.names, table
        for f in ("height", "width"):
            assert (getattr(a, f) is None and getattr(b, f) is None) or np.array_equal(getattr(a, f), getattr(b, f))


def stats_either_way(dets: list, gt: dict, tmp_path, monkeypatch, **options) -> list[dict]:
    """``deteval.evaluate``'s stats of the same two files, scanner forced on, then off."""
    d, g = tmp_path / "d.json", tmp_path / "g.json"
    d.write_text(json.dumps(dets))
    g.write_text(json.dumps(gt))
    stats = []
    for fast in (True, False):
        monkeypatch.setattr(TUNING, "fast_path_bytes", 0 if fast else 1 << 62)
        stats.append(deteval.evaluate(str(d), str(g), **options).stats)
    return stats
