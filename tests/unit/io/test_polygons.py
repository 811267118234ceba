"""deteval.io.polygons against pycocotools: polygon masks must be the very runs that
``pycocotools.mask.frPyObjects`` (and ``merge`` for objects of several polygons) make.

Random polygons of every kind: integer, half-integer and real coordinates, points outside the
image, negative and huge ones (up to the loaders' 1e6 limit), collinear and repeated points,
self-intersecting outlines, three points, many polygons per object, images down to 1x1.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pycocotools import mask as mask_utils

from deteval.io.masks import decode_rle_strings, masks_from_segmentations
from deteval.io.polygons import polygon_runs

LIMIT = 1e6


def reference_runs(objects: list, heights: list, widths: list) -> tuple[np.ndarray, np.ndarray]:
    """pycocotools' runs of each object (a list of polygons), as annToRLE makes them."""
    strings = []
    for polys, h, w in zip(objects, heights, widths):
        rles = mask_utils.frPyObjects(polys, h, w)
        strings.append(rles[0]["counts"] if len(polys) == 1 else mask_utils.merge(rles)["counts"])
    runs, n = decode_rle_strings(strings)
    return runs, np.concatenate([[0], np.cumsum(n)]).astype(np.int64)


def ours(objects: list, heights: list, widths: list) -> tuple[np.ndarray, np.ndarray]:
    parts = [p for polys in objects for p in polys]
    coords = np.array([v for p in parts for v in p], dtype=np.float64)
    return polygon_runs(
        coords,
        np.array([len(p) for p in parts], np.int64),
        np.array([len(polys) for polys in objects], np.int64),
        np.array(heights, np.int64),
        np.array(widths, np.int64),
    )


def assert_same(objects, heights, widths) -> None:
    want, want_off = reference_runs(objects, heights, widths)
    got, got_off = ours(objects, heights, widths)
    for i in range(len(objects)):
        a, b = want[want_off[i] : want_off[i + 1]], got[got_off[i] : got_off[i + 1]]
        assert np.array_equal(a, b), (heights[i], widths[i], objects[i], a.tolist(), b.tolist())
    assert np.array_equal(want_off, got_off)


# ---------------------------------------------------------------------------------------------
# strategies
# ---------------------------------------------------------------------------------------------
@st.composite
def coordinate(draw, lo: float, hi: float) -> float:
    kind = draw(st.integers(0, 49))
    if kind <= 20:
        return draw(st.floats(lo, hi, allow_nan=False))
    if kind <= 30:
        return float(draw(st.integers(int(np.floor(lo)), int(np.ceil(hi)))))
    if kind <= 36:
        return draw(st.integers(int(2 * lo) - 1, int(2 * hi) + 1)) / 2  # pixel edges and centres
    if kind <= 40:
        return draw(st.integers(int(10 * lo) - 1, int(10 * hi) + 1)) / 10  # fifths: the lattice itself
    if kind <= 44:
        k = draw(st.integers(int(5 * lo) - 1, int(5 * hi) + 1))
        return k / 5 + draw(st.sampled_from([-0.1, 0.1, -1e-9, 1e-9, 0.0, -1e-12, 1e-12]))  # near lattice rounding
    if kind <= 47:
        return draw(st.sampled_from([0.0, -0.0, -0.1, -0.09, -0.11, -0.5, -1.0, 0.5, 0.1, -2.3]))
    return draw(st.floats(-1e4, 1e4, allow_nan=False) if kind == 48 else st.floats(-LIMIT, LIMIT, allow_nan=False))


@st.composite
def polygon(draw, h: int, w: int) -> list:
    span = max(h, w)
    # few huge polygons: pycocotools walks their outline point by point (millions of points)
    mode = draw(st.sampled_from(["inside", "around", "far", "collinear", "repeat", "tiny"] * 4 + ["huge"]))
    if mode == "inside":
        lo, hi = 0.0, float(span)
    elif mode == "around":
        lo, hi = -3.0, span + 3.0
    elif mode == "far":
        lo, hi = -60.0, span + 60.0
    elif mode == "tiny":
        lo, hi = 0.0, 2.0
    else:
        lo, hi = -1.5, span + 1.5
    k = draw(st.integers(3, 10))
    pts = [(draw(coordinate(lo, hi)), draw(coordinate(lo, hi))) for _ in range(k)]
    if mode == "collinear":  # points on one line (horizontal, vertical or slanted)
        x0, y0 = pts[0]
        dx, dy = draw(st.sampled_from([(1, 0), (0, 1), (1, 1), (2, -1), (0.4, 1.3)]))
        pts = [(x0 + dx * t, y0 + dy * t) for t in [draw(st.floats(-5, 5)) for _ in range(k)]]
    elif mode == "repeat":  # repeated vertices, consecutive or not
        for _ in range(draw(st.integers(1, 3))):
            i, j = draw(st.integers(0, k - 1)), draw(st.integers(0, k - 1))
            pts[j] = pts[i]
    elif mode == "huge":  # a few vertices far out, some of them at the limit
        for _ in range(draw(st.integers(1, 2))):
            i = draw(st.integers(0, k - 1))
            pts[i] = (
                draw(st.sampled_from([LIMIT, -LIMIT, 1e5, -1e5, 3e3, -2e3, 0.0, 3.0])),
                draw(st.sampled_from([LIMIT, -LIMIT, 1e4, -7e3, 1e3, -1e3, 0.0, 2.0])),
            )
    return [float(v) for p in pts for v in p]


@st.composite
def objects_case(draw) -> tuple[list, list, list]:
    objects, heights, widths = [], [], []
    for _ in range(draw(st.integers(1, 4))):
        h = draw(st.one_of(st.integers(1, 3), st.integers(1, 40)))
        w = draw(st.one_of(st.integers(1, 3), st.integers(1, 40)))
        n = draw(st.one_of(st.just(1), st.integers(1, 6)))
        objects.append([draw(polygon(h, w)) for _ in range(n)])
        heights.append(h)
        widths.append(w)
    return objects, heights, widths


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], deadline=None)
@given(objects_case())
def test_hypothesis_polygons_match_pycocotools(case):
    """Examples per the hypothesis profile (ci: 300; HYPOTHESIS_PROFILE=thorough: 3000)."""
    assert_same(*case)


# ---------------------------------------------------------------------------------------------
# fixed cases
# ---------------------------------------------------------------------------------------------
FIXED = [
    ([[0, 0, 3, 0, 3, 2, 0, 2]], 4, 5),
    ([[0, 0, 1, 0, 0, 1]], 1, 1),
    ([[0, 0, 1, 0, 1, 1, 0, 1]], 1, 1),
    ([[-1, -1, 2, -1, 2, 2, -1, 2]], 1, 1),
    ([[0.5, 0.5, 0.5, 0.5, 0.5, 0.5]], 3, 3),  # one point thrice
    ([[0, 0, 2, 2, 4, 4]], 5, 5),  # collinear
    ([[0, 0, 4, 4, 0, 4, 4, 0]], 5, 5),  # a bow tie
    ([[-LIMIT, -LIMIT, LIMIT, -LIMIT, LIMIT, LIMIT, -LIMIT, LIMIT]], 3, 4),
    ([[-LIMIT, 1, LIMIT, 1.2, 0, 2.7]], 4, 4),
    ([[0, 0, 2, 0, 2, 2], [2, 2, 4, 2, 4, 4], [0, 0, 2, 0, 2, 2]], 5, 5),  # touching and repeated parts
    ([[0, 0, 5, 0, 5, 5, 0, 5], [1, 1, 2, 1, 2, 2]], 5, 5),  # one inside another: the union
    ([[-0.1, -0.1, -0.1, 3, 2, 3]], 4, 4),
    ([[-0.5, 0, -0.5, 3, 1, 1.5]], 4, 4),
    ([[4.9, 0, 4.9, 4.9, 0, 4.9]], 5, 5),  # the last column and row
    ([[0, 0, 5, 0, 5, 5, 0, 5]], 5, 5),  # the whole image
    ([[0, 0, 6, 0, 6, 6, 0, 6]], 5, 5),  # beyond it
]


@pytest.mark.parametrize("polys, h, w", FIXED, ids=range(len(FIXED)))
def test_fixed_cases(polys, h, w):
    assert_same([[[float(v) for v in p] for p in polys]], [h], [w])


def test_many_objects_one_call():
    """Enough objects for polygon_runs to split them between threads (when numba has two)."""
    rng = np.random.default_rng(3)
    objects, heights, widths = [], [], []
    for _ in range(6500):
        h, w = int(rng.integers(1, 60)), int(rng.integers(1, 60))
        parts = []
        for _ in range(int(rng.integers(1, 4))):
            k = int(rng.integers(3, 16))
            c = rng.uniform(-4, max(h, w) + 4, 2 * k)
            if rng.random() < 0.3:
                c = np.round(c * 2) / 2
            parts.append(c.tolist())
        objects.append(parts)
        heights.append(h)
        widths.append(w)
    assert_same(objects, heights, widths)


def test_loader_uses_it_and_matches_pycocotools():
    """masks_from_segmentations: polygons rows among RLE rows, each as annToRLE makes it."""
    segs = [
        [[0, 0, 3, 0, 3, 2, 0, 2]],
        {"size": [4, 5], "counts": [0, 2, 2, 2, 14]},
        [[1.5, 0.2, 4.4, 3.1, 0.3, 2.9], [0, 0, 1, 0, 1, 1]],
        {"size": [4, 5], "counts": "0220<"},
        [[0, 0, 2, 0, 2, 3]],
    ]
    heights, widths = np.array([4, 4, 7, 4, 2]), np.array([5, 5, 6, 5, 9])
    masks = masks_from_segmentations(segs, heights, widths, "x", "annotations", [{}] * 5)
    for i, seg in enumerate(segs):
        if isinstance(seg, list):
            want, _ = reference_runs([seg], [int(heights[i])], [int(widths[i])])
        elif isinstance(seg["counts"], list):
            want = np.array(seg["counts"])
        else:
            want = decode_rle_strings([seg["counts"].encode()])[0]
        got = masks.counts[masks.offsets[i] : masks.offsets[i + 1]]
        assert np.array_equal(got, want), i


def test_numpy_scalars_take_the_slow_reading():
    """Coordinates that are numpy floats (in-memory input) are read too."""
    segs = [[[np.float64(0), np.float64(0), np.float64(3), 0, 3, 2, 0, 2.0]]]
    masks = masks_from_segmentations(segs, np.array([4]), np.array([5]), "x", "annotations", [{}])
    want, _ = reference_runs([[[0.0, 0.0, 3.0, 0.0, 3.0, 2.0, 0.0, 2.0]]], [4], [5])
    assert np.array_equal(masks.counts, want)


@pytest.mark.parametrize(
    "segs, record, rule",
    [
        ([[[0, 0, 1, 1]], {"size": [4, 5], "counts": "0220"}], 0, "a polygon needs at least 3 points"),
        # runs are summed once all records are read: the polygon's error comes first
        ([{"size": [4, 5], "counts": "0220"}, [[0, 0, 1, 1]]], 1, "a polygon needs at least 3 points"),
        ([{"size": [4, 5], "counts": 3}, [[0, 0, 1, 1]]], 0, "RLE 'counts' must be a list or a string"),
        ([[[0, 0, 3, 0, 3, 2]], [[0, 0, 1, 1]], {"size": [4, 5], "counts": 3}], 1, "a polygon needs at least 3"),
        ([[[0, 0, 3, 0, 3, 2]], "abc", [[0, 0, 1, 1]]], 1, "segmentation must be polygons or RLE"),
        ([[[0, 0, 3, 0, 3, 2]], {"size": [4, 5], "counts": "0220l"}, [[0, True, 1, 1, 2, 2]]], 2, "a polygon must be"),
        ([[[0, 0, 3, 0, 3, 2]], [[0, 0, 3, 0, 3, 2e6]]], 1, "a polygon coordinate beyond"),
    ],
)
def test_first_error_wins(segs, record, rule):
    """Polygons are checked all at once, yet the error is the one a record-by-record check meets first."""
    from deteval import InputError

    n = len(segs)
    with pytest.raises(InputError) as info:
        masks_from_segmentations(segs, np.full(n, 4), np.full(n, 5), "f", "annotations", [{}] * n)
    assert f"annotations[{record}]: {rule}" in str(info.value)
