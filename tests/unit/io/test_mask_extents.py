"""Mask extents (``deteval.rle.rle_extents``) against pycocotools' ``toBbox``, run for run; masks kept as
compressed text (``deteval.rle.CompressedMasks``) against the same runs.

toBbox works on the runs alone (no pixels), so any runs can be checked: zero-length runs, runs
crossing columns, a trailing 0-run, and totals beyond 2**32, where toBbox's 32-bit positions wrap.

pycocotools' string encoder (``rleToString``, behind ``frPyObjects`` of uncompressed runs) allocates six
characters a count and writes the string's terminator after the last one: for no runs, or runs whose string
takes all six characters each (a count, or a count less the one two before it, of 2**24 or more), it writes one
byte past its buffer, and glibc aborts the process at some later ``free`` (CI's run of 2026-11-27 died so, in
another test). Such runs are never given to it: see :func:`_pycocotools_string`.
"""

from __future__ import annotations

import pickle

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from pycocotools import mask as mask_utils

from deteval.rle import CompressedMasks, Masks, rle_extents


@st.composite
def _runs(draw):
    h = draw(st.integers(1, 40))
    w = draw(st.integers(1, 40))
    if draw(st.booleans()):  # canonical: runs summing to h*w, as every loaded mask has
        cuts = sorted(draw(st.lists(st.integers(0, h * w), max_size=30)))
        counts = np.diff([0, *cuts, h * w]).tolist()
    else:  # anything: zero runs, long runs, totals far beyond h*w (and beyond 2**32)
        # below 2**28: pycocotools' own string decoder (toBbox reads strings) shifts past 32 bits beyond
        counts = draw(st.lists(st.one_of(st.integers(0, 3 * h), st.integers(0, 2**28 - 1)), max_size=40))
        if counts and _string_length(counts) == 6 * len(counts):  # one count of one character more
            counts.append(counts[-2] if len(counts) > 2 else 0)
    return h, w, counts


def _string_length(counts: list[int]) -> int:
    """Characters in pycocotools' compressed string of ``counts``: five bits each, two's complement, of each
    count (from the fourth on, less the count two before it)."""
    n = 0
    for i, c in enumerate(counts):
        x = c - counts[i - 2] if i > 2 else c
        k = 1
        while not -(2 ** (5 * k - 1)) <= x < 2 ** (5 * k - 1):
            k += 1
        n += k
    return n


def _pycocotools_string(h: int, w: int, counts: list[int]) -> bytes:
    """pycocotools' compressed string of the runs, from its own encoder where that stays inside its buffer
    (see the module's docstring); no runs are the empty string, as its decoder reads them."""
    if not counts:
        return b""
    assert _string_length(counts) < 6 * len(counts), "pycocotools' encoder would write past its buffer"
    s = mask_utils.frPyObjects({"size": [h, w], "counts": counts}, h, w)["counts"]
    assert len(s) == _string_length(counts)  # the model above, held to the encoder on every example
    return s


def _extent(h: int, w: int, counts: list[int]) -> np.ndarray:
    c = np.array(counts, np.uint32)
    return rle_extents(c, np.array([0, len(c)], np.int64), np.array([h]), np.array([w]))[0]


@given(st.lists(_runs(), min_size=1, max_size=8))
def test_rle_extents_equal_pycocotools_tobbox(masks):
    for h, w, counts in masks:
        rle = {"size": [h, w], "counts": _pycocotools_string(h, w, counts)}
        assert np.array_equal(_extent(h, w, counts), mask_utils.toBbox(rle)), (h, w, counts)


def test_a_batch_of_masks_on_threads_equals_one_at_a_time():
    rng = np.random.default_rng(3)
    masks = []
    for _ in range(500):
        h, w = (int(v) for v in rng.integers(1, 60, 2))
        cuts = np.sort(rng.integers(0, h * w + 1, int(rng.integers(0, 20))))
        masks.append((h, w, np.diff(np.concatenate([[0], cuts, [h * w]])).tolist()))
    counts = np.concatenate([np.array(c, np.uint32) for _, _, c in masks])
    offsets = np.concatenate([[0], np.cumsum([len(c) for _, _, c in masks])]).astype(np.int64)
    hs, ws = np.array([m[0] for m in masks]), np.array([m[1] for m in masks])
    batch = rle_extents(counts, offsets, hs, ws)
    for i, (h, w, c) in enumerate(masks):
        assert np.array_equal(batch[i], _extent(h, w, c))


def test_positions_past_two_to_the_32_wrap_as_in_tobbox():
    big = 2**28 - 1
    for h, w, counts in [(1, 1, [big] * 17 + [3, 2]), (7, 3, [5, big] * 17 + [0, 4]), (2, 2, [big] * 17 + [1, 1, 1])]:
        assert sum(counts) > 2**32
        rle = {"size": [h, w], "counts": _pycocotools_string(h, w, counts)}
        assert np.array_equal(_extent(h, w, counts), mask_utils.toBbox(rle)), (h, w, counts)


@given(st.lists(_runs(), min_size=1, max_size=8), st.data())
def test_compressed_masks_decode_take_and_extents_as_their_runs(masks, data):
    """:class:`CompressedMasks` hold pycocotools' strings where a JSON file holds them (a backslash escaped,
    other bytes between them); decoded, taken, boxed and pickled they are the :class:`Masks` of the same runs."""
    strings = [_pycocotools_string(h, w, c) for h, w, c in masks]
    escaped = [b'"' + s.replace(b"\\", b"\\\\") + b'"}, {"counts": ' for s in strings]
    end = np.cumsum([len(s) for s in escaped]).astype(np.int64) - len(b'"}, {"counts": ')
    start = end - [len(s.replace(b"\\", b"\\\\")) for s in strings]
    offsets = np.cumsum([0] + [len(c) for _, _, c in masks]).astype(np.int64)
    h, w = np.array([m[0] for m in masks]), np.array([m[1] for m in masks])
    area = np.array([sum(c[1::2]) for _, _, c in masks], np.float64)
    runs = Masks(np.array([v for _, _, c in masks for v in c], np.uint32), offsets, h, w, area)
    text = CompressedMasks(np.frombuffer(b"".join(escaped), np.uint8), start, end, offsets, h, w, area)
    assert np.array_equal(text.extents(), runs.extents())
    assert np.array_equal(text.counts, runs.counts) and text.counts.dtype == np.uint32
    rows = np.array(data.draw(st.lists(st.integers(0, len(masks) - 1), max_size=10)), np.int64)
    picked = np.array(data.draw(st.lists(st.booleans(), min_size=len(masks), max_size=len(masks))))
    for r in (rows, picked):
        assert np.array_equal(text.extents(r), runs.extents(r))
        a, b = text.take(r), runs.take(r)
        assert isinstance(a, CompressedMasks)
        for f in ("counts", "offsets", "height", "width", "area"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f
    again = pickle.loads(pickle.dumps(text))  # the strings only, one after another
    assert len(again.text) == sum(end - start) and again.text_start[0] == 0
    assert np.array_equal(again.counts, runs.counts) and np.array_equal(again.extents(), runs.extents())
