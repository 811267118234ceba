"""Evaluator(iou_type="obb"): oriented boxes fed batch by batch.

``box_format="xywha"`` must give ``deteval.evaluate(..., iou_type="obb")``'s arrays on the same records bit
for bit (and so hotcoco 1.3.0's stats, up to IoUs within 1e-9 of a threshold), whatever the batches, merges
and pickling; ``"poly"`` evaluates the quadrilaterals as given (exact intersection, shoelace areas), checked
against shapely and against xywha on the corners of the same boxes.
"""

from __future__ import annotations

import json
import pickle
import warnings

import numpy as np
import pytest
from conftest import DATA_DIR
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from support.exact_quads import exact_iou
from support.examples import examples
from support.strategies_obb import near_threshold, obb_datasets

import deteval
from deteval.errors import InputError
from deteval.evaluator import Evaluator
from deteval.geometry.obb import obb_corners, poly_iou_blocks

OBB = DATA_DIR / "obb"
ARRAYS = ("precision", "recall", "scores")


def load_fixture() -> tuple[list, dict]:
    return json.loads((OBB / "dets.json").read_text()), json.loads((OBB / "gt.json").read_text())


def per_image(preds: list, gt: dict, box_format: str = "xywha", to=np.asarray) -> list:
    """One (prediction, target) dict pair per ground-truth image, from COCO obb records; the target's ``area`` is
    the record's where given, else w*h (the JSON reader's default, computed the same way)."""
    by_dt: dict = {}
    by_gt: dict = {}
    for r in preds:
        by_dt.setdefault(r["image_id"], []).append(r)
    for a in gt["annotations"]:
        by_gt.setdefault(a["image_id"], []).append(a)

    def boxes(recs):
        b = np.array([r["obb"] for r in recs], np.float64).reshape(-1, 5)
        return obb_corners(b) if box_format == "poly" else b

    out = []
    for im in gt["images"]:
        i = im["id"]
        rs, an = by_dt.get(i, []), by_gt.get(i, [])
        pred = {"boxes": to(boxes(rs)), "scores": to(np.array([r["score"] for r in rs], np.float64)),
                "labels": to(np.array([r["category_id"] for r in rs], np.int64)), "image_id": i}  # fmt: skip
        tgt = {"boxes": to(boxes(an)), "labels": to(np.array([a["category_id"] for a in an], np.int64)),
               "iscrowd": to(np.array([a.get("iscrowd", 0) for a in an], np.int64)), "image_id": i}  # fmt: skip
        if box_format == "xywha":
            tgt["area"] = to(np.array([a.get("area", a["obb"][2] * a["obb"][3]) for a in an], np.float64))
        out.append((pred, tgt))
    return out


def feed(ev: Evaluator, items: list, rng: np.random.Generator) -> Evaluator:
    k = 0
    while k < len(items):
        b = int(rng.integers(1, 6))
        ev.update([p for p, _ in items[k : k + b]], [t for _, t in items[k : k + b]])
        k += b
    return ev


def assert_identical(res, ref) -> None:
    for a in ARRAYS:
        assert np.array_equal(res.arrays[a], ref.arrays[a], equal_nan=True), a
    assert list(res.stats.items()) == list(ref.stats.items())
    assert res.per_class == ref.per_class


def categories(gt: dict) -> dict:
    return {c["id"]: c["name"] for c in gt["categories"]}


# --------------------------------------------------------------------------------------
# xywha: evaluate()'s numbers


@pytest.mark.parametrize("seed", [0, 1])
def test_fixture_in_random_batches_equals_evaluate(seed):
    preds, gt = load_fixture()
    ref = deteval.evaluate(preds, gt, iou_type="obb")
    rng = np.random.default_rng(seed)
    items = per_image(preds, gt)
    items = [items[i] for i in rng.permutation(len(items))]
    ev = feed(Evaluator(iou_type="obb", categories=categories(gt)), items, rng)
    assert ev.box_format == "xywha"
    assert_identical(ev.compute(), ref)
    assert ref.stats["AP"] > 0.2  # the fixture matches: not a comparison of two empty results


def test_torch_tensors_as_mmrotate_gives_them():
    torch = pytest.importorskip("torch", reason="the torch extra is not installed")
    preds, gt = load_fixture()
    ref = deteval.evaluate(preds, gt, iou_type="obb")
    items = per_image(preds, gt, to=torch.as_tensor)
    ev = feed(Evaluator(iou_type="obb", box_format="xywha", categories=categories(gt)), items, np.random.default_rng(3))
    assert_identical(ev.compute(), ref)
    # float32 boxes (a model's output) are read as float64 of the same values: those of the rounded records
    items32 = per_image(preds, gt, to=lambda a: torch.as_tensor(a.astype(np.float32) if a.dtype == np.float64 else a))
    ev32 = feed(Evaluator(iou_type="obb", categories=categories(gt)), items32, np.random.default_rng(3))
    rounded = [{**r, "obb": np.float32(r["obb"]).tolist(), "score": float(np.float32(r["score"]))} for r in preds]
    anns = [
        {**a, "obb": np.float32(a["obb"]).tolist(), "area": float(np.float32(a.get("area", a["obb"][2] * a["obb"][3])))}
        for a in gt["annotations"]
    ]
    assert_identical(ev32.compute(), deteval.evaluate(rounded, {**gt, "annotations": anns}, iou_type="obb"))


def _evaluators_for_split(preds: list, gt: dict, assignment: list, n: int, seed: int) -> list:
    items = per_image(preds, gt)
    rng = np.random.default_rng(seed)
    parts = [[it for it, a in zip(items, assignment) if a == k] for k in range(n)]
    return [feed(Evaluator(iou_type="obb", categories=categories(gt)), part, rng) for part in parts]


@settings(max_examples=examples(10), deadline=None)
@given(data=st.data())
def test_merge_and_pickle_in_any_order_equal_evaluate(data):
    preds, gt = load_fixture()
    ref = deteval.evaluate(preds, gt, iou_type="obb")
    n = data.draw(st.integers(2, 4), label="parts")
    n_img = len(gt["images"])
    assignment = data.draw(st.lists(st.integers(0, n - 1), min_size=n_img, max_size=n_img))
    parts = _evaluators_for_split(preds, gt, assignment, n, data.draw(st.integers(0, 2**16)))
    perm = data.draw(st.permutations(range(n)), label="order")
    merged = pickle.loads(pickle.dumps(parts[perm[0]]))
    for i in perm[1:]:
        merged.merge(pickle.loads(pickle.dumps(parts[i])))
    assert_identical(merged.compute(), ref)
    flat = Evaluator(iou_type="obb", categories=categories(gt)).merge(*[p.state() for p in reversed(parts)])
    assert_identical(flat.compute(), ref)


def test_states_of_other_iou_types_or_formats_do_not_merge():
    obb, box = Evaluator(iou_type="obb", categories=[1]), Evaluator(iou_type="bbox", categories=[1])
    with pytest.raises(InputError, match="different protocol parameters"):
        obb.merge(box)


# --------------------------------------------------------------------------------------
# generated data: evaluate() and hotcoco


@settings(max_examples=examples(100), deadline=None)
@given(obb_datasets(max_gt=8, max_preds=12), st.integers(0, 2**16))
def test_generated_equal_evaluate_and_hotcoco(case, seed):
    preds, gt = case
    ref = deteval.evaluate(preds, gt, iou_type="obb")
    ev = feed(Evaluator(iou_type="obb", categories={1: "a", 2: "b"}), per_image(preds, gt), np.random.default_rng(seed))
    res = ev.compute()
    assert_identical(res, ref)
    hotcoco = pytest.importorskip("hotcoco")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ho = hotcoco.COCOeval(hotcoco.COCO(gt), hotcoco.COCO(gt).loadRes(preds), "obb")
        ho.evaluate()
        ho.accumulate()
        ho.summarize()
    want = ho.get_results()
    off = [k for k in want if not abs(res.stats[k] - want[k]) <= 1e-12]
    assert not off or near_threshold(preds, gt), (off, json.dumps([preds, gt]))


# --------------------------------------------------------------------------------------
# poly: the quadrilaterals as given


def test_poly_on_the_corners_of_xywha_boxes():
    """Same intersection, shoelace areas instead of w*h: on the fixture (no IoU within 1e-9 of a threshold)
    the results are equal; the GT areas are given so both use the same area ranges."""
    preds, gt = load_fixture()
    xywha = per_image(preds, gt)
    poly = per_image(preds, gt, box_format="poly")
    for (_, t), (_, tx) in zip(poly, xywha):
        t["area"] = tx["area"]
    assert not near_threshold(preds, gt)
    ref = deteval.evaluate(preds, gt, iou_type="obb")
    ev = feed(Evaluator(iou_type="obb", box_format="poly", categories=categories(gt)), poly, np.random.default_rng(0))
    assert_identical(ev.compute(), ref)


def _shapely_iou(d, g, crowd, with_union=False):
    from shapely.geometry import Polygon

    pd, pg = Polygon(d.reshape(4, 2)), Polygon(g.reshape(4, 2))
    inter = pd.intersection(pg).area
    union = pd.area if crowd else pd.area + pg.area - inter
    iou = inter / union if union > 0 else 0.0
    return (iou, union) if with_union else iou


@st.composite
def simple_quads(draw):
    """A quadrilateral valid for shapely (simple: convex or a dart; zero area allowed), either orientation, on a
    coarse grid or anywhere. Folded ones (a spike back along an edge) are not valid polygons for shapely, so it
    is no oracle for them; deteval gives them the devkit's winding-number meaning (test_quads.py)."""
    from shapely.geometry import Polygon

    c = st.one_of(st.integers(0, 12).map(float), st.floats(0, 12))
    pts = np.array([draw(c) for _ in range(8)]).reshape(4, 2)
    for order in ((0, 1, 2, 3), (0, 2, 1, 3), (0, 1, 3, 2)):  # one of them is simple unless points coincide
        if Polygon(pts[list(order)]).is_valid:
            return pts[list(order)].reshape(-1)
    assume(False)


# a triangle whose fourth vertex is 1e-79 from a corner, against itself drawn the other way (CI, session 10): the
# reflex turn at that vertex read as straight, the quadrilateral as convex, and its 1e-79 edge's line cut the clip
_TINY_EDGE = [(np.array([0.0, 0, 0, 0, 0, 1, 1, 2]), np.array([1.25284188e-79, 1, 0, 1, 0, 0, 1, 2]), False)]
# a dart whose fourth vertex is 1e-19 from (0, 0): shapely 2's overlay gives the intersection 1.0, the exact one
# is 0.5 (and shapely's own overlay with grid_size=1e-15 agrees): the rational referee decides
_SHAPELY_OFF = [(np.array([2.0, 1, 0, 0, 0, 0, 0, 1]), np.array([1.0, 1, 0, 2, 2, 1, 1e-19, 1e-19]), False)]


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.tuples(simple_quads(), simple_quads(), st.booleans()), min_size=1, max_size=4))
@example(_TINY_EDGE)
@example(_SHAPELY_OFF)
def test_poly_iou_against_shapely(pairs):
    d = np.array([p[0] for p in pairs])
    g = np.array([p[1] for p in pairs])
    crowd = np.array([p[2] for p in pairs])
    n = len(pairs)
    one = np.arange(n, dtype=np.int64)
    got = poly_iou_blocks(one, np.arange(n + 1), one, np.arange(n + 1), np.arange(n + 1), g, crowd, d)
    for k in range(n):
        want, union = _shapely_iou(d[k], g[k], crowd[k], with_union=True)
        # the areas are exact to a few ulps of the coordinates' square (12 ** 2): over a union near 0 that
        # rounding is a large part of the IoU (a dart of area 1e-11 has no 12 digits to agree on)
        tol = 1e-12 * max(1.0, abs(want)) + 1e-12 + (1e-13 * 144 / union if union > 0 else 0.0)
        if not abs(got[k] - want) <= tol:  # GEOS's overlay can fail near a tiny edge: exact arithmetic decides
            want = float(exact_iou(d[k], g[k], crowd[k]))
        assert abs(got[k] - want) <= tol, (k, got[k], want, d[k], g[k])


def test_poly_concave_quadrilateral_is_evaluated_as_given():
    """A dart (concave, area 7.2) inside a 4 x 4 square: IoU 0.45 by shapely; matched at thresholds up to it,
    not above (a refit to a rectangle would move it)."""
    sq = np.array([[0.0, 0, 4, 0, 4, 4, 0, 4]])
    dart = np.array([[0.0, 0, 4, 0, 4, 4, 2, 1.6]])
    iou = _shapely_iou(dart[0], sq[0], False)
    assert abs(iou - 0.45) < 1e-12
    ev = Evaluator(iou_type="obb", box_format="poly", iou_thrs=[0.4, iou - 1e-9, iou + 1e-9, 0.5])
    ev.update([{"boxes": dart, "scores": [0.9], "labels": [1]}], [{"boxes": sq, "labels": [1]}])
    res = ev.compute()
    assert res.recall[:, 0, 0, -1].tolist() == [1.0, 1.0, 0.0, 0.0]


# --------------------------------------------------------------------------------------
# errors


def _one(boxes, tboxes=None, **target):
    tb = np.array([[5.0, 5.0, 4.0, 2.0, 0.1]]) if tboxes is None else tboxes
    return [{"boxes": boxes, "scores": np.ones(len(boxes)), "labels": np.ones(len(boxes), np.int64)}], [
        {"boxes": tb, "labels": np.ones(len(tb), np.int64), "image_id": 7, **target}
    ]


@pytest.mark.parametrize(
    "box_format, preds_boxes, target_boxes, match",
    [
        ("xywha", np.zeros((1, 4)), None, r"preds\[0\] \(image_id=7\).*shape \(n, 5\) with box_format 'xywha'"),
        ("xywha", np.array([[1.0, 2, 3, 4, np.nan]]), None, r"preds\[0\].*boxes\[0\] is not finite"),
        ("xywha", np.array([[1.0, 2, 3, 4, 0], [1.0, 2, -3, 4, 0]]), None,
         r"preds\[0\].*boxes\[1\] = \[1.0, 2.0, -3.0, 4.0, 0.0\] has a negative width or height"),
        ("xywha", np.zeros((0, 5)), np.array([[1.0, 2, 3, -4, 0]]), r"target\[0\].*boxes\[0\].*negative"),
        ("poly", np.zeros((1, 5)), np.zeros((1, 8)), r"preds\[0\].*shape \(n, 8\) with box_format 'poly'"),
        ("poly", np.array([[0.0, 0, 1, 1, 1, 0, 0, 1]]), np.zeros((1, 8)), r"preds\[0\].*boxes\[0\].*self-intersect"),
        ("poly", np.zeros((0, 8)), np.array([[0.0, 0, 1, 0, 1, np.inf, 0, 1]]), r"target\[0\].*boxes\[0\].*finite"),
    ],
)  # fmt: skip
def test_bad_boxes_name_the_batch_image_and_row(box_format, preds_boxes, target_boxes, match):
    ev = Evaluator(iou_type="obb", box_format=box_format)
    if box_format == "xywha":
        ev.update(*_one(np.array([[5.0, 5.0, 4.0, 2.0, 0.1]])))
    before = ev.num_images
    with pytest.raises(InputError, match=r"update \d+, " + match):
        ev.update(*_one(preds_boxes, target_boxes))
    assert ev.num_images == before  # a batch that raised leaves the evaluator as it was


def test_constructor_rules():
    with pytest.raises(InputError, match=r"box_format 'xyxy'; choose from \('xywha', 'poly'\) \(iou_type 'obb'\)"):
        Evaluator(iou_type="obb", box_format="xyxy")
    with pytest.raises(InputError, match=r"box_format 'xywha'; choose from \('xyxy'.*\(iou_type 'bbox'\)"):
        Evaluator(box_format="xywha")
    with pytest.raises(InputError, match="coco protocol"):
        Evaluator(protocol="lvis", iou_type="obb", categories=[{"id": 1, "frequency": "r"}])
    assert Evaluator().box_format == "xyxy" and Evaluator(iou_type="obb").box_format == "xywha"
