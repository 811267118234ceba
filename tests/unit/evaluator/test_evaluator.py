"""deteval.Evaluator: update()/compute() batch by batch gives evaluate()'s arrays, bit for bit.

Every shared COCO pair is loaded once, cut into one (prediction, target) dict per image and
fed to the Evaluator in random orders and batch sizes; the result must equal
``deteval.evaluate`` on the same loaded containers (``np.array_equal`` on precision, recall
and scores; ``==`` on stats and per-class rows). Merging is checked for associativity and
commutativity on random splits, and the error catalog of issue 5 item 5 is exercised.
"""

from __future__ import annotations

import dataclasses
import json
import pickle

import numpy as np
import pytest
from conftest import COCO_PAIRS
from hypothesis import given, settings
from hypothesis import strategies as st
from support.examples import examples

import deteval
from deteval.errors import InputError
from deteval.evaluator import Evaluator, EvaluatorState, merge_states
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.types import Detections, GroundTruth

ARRAYS = ("precision", "recall", "scores")
_LOADED: dict = {}


# --------------------------------------------------------------------------------------
# helpers (also used by test_evaluator_distributed.py and test_evaluator_dask.py)


def load_pair(name: str) -> tuple[GroundTruth, Detections]:
    """The pair's containers, loaded once per session (the tests never modify them)."""
    if name not in _LOADED:
        pair = COCO_PAIRS[name]
        gt = load_coco_gt(pair.load_gt())
        _LOADED[name] = (gt, load_coco_results(pair.load_preds(), gt))
    return _LOADED[name]


def per_image(gt: GroundTruth, dets: Detections, *, with_ids=True, area=True, crowd=True, ignore=False):
    """One (prediction dict, target dict) per image of the ground truth, in id order.

    Boxes stay xywh as loaded; labels are category ids; rows keep file order.
    """
    cat_ids = gt.categories.ids
    g_order = np.argsort(gt.image, kind="stable")
    d_order = np.argsort(dets.image, kind="stable")
    n = len(gt.images)
    g_split = np.split(g_order, np.searchsorted(gt.image[g_order], np.arange(1, n)))
    d_split = np.split(d_order, np.searchsorted(dets.image[d_order], np.arange(1, n)))
    out = []
    for i in range(n):
        g, d = g_split[i], d_split[i]
        pred = {"boxes": dets.boxes[d], "scores": dets.score[d], "labels": cat_ids[dets.category[d]]}
        tgt = {"boxes": gt.boxes[g], "labels": cat_ids[gt.category[g]]}
        if crowd:
            tgt["iscrowd"] = gt.crowd[g].astype(np.int64)
        if area:
            tgt["area"] = gt.area[g]
        if ignore:
            tgt["ignore"] = gt.ignore[g]
        if with_ids:
            tgt["image_id"] = gt.images.id_of(i)
        out.append((pred, tgt))
    return out


def feed(ev: Evaluator, items: list, rng: np.random.Generator | None = None, max_batch: int = 9) -> Evaluator:
    """update() with ``items`` in batches of random sizes (1..max_batch), or of max_batch without rng."""
    k = 0
    while k < len(items):
        b = int(rng.integers(1, max_batch + 1)) if rng is not None else max_batch
        batch = items[k : k + b]
        ev.update([p for p, _ in batch], [t for _, t in batch])
        k += b
    return ev


def categories_of(gt: GroundTruth) -> dict:
    return {gt.categories.id_of(i): gt.categories.name_of(i) for i in range(len(gt.categories))}


def assert_identical(res, ref) -> None:
    """``res`` (an EvalResult, or an Evaluator to compute) equals ``ref`` exactly."""
    if isinstance(res, Evaluator):
        res = res.compute()
    for a in ARRAYS:
        assert res.arrays[a].shape == ref.arrays[a].shape, a
        assert np.array_equal(res.arrays[a], ref.arrays[a]), a
    assert list(res.stats.items()) == list(ref.stats.items())
    assert res.per_class == ref.per_class


# --------------------------------------------------------------------------------------
# parity with evaluate()


@pytest.mark.parametrize("use_cats", [True, False], ids=["cats", "nocats"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_batches_and_orders_equal_evaluate(coco_pair, use_cats, seed):
    gt, dets = load_pair(coco_pair.name)
    ref = deteval.evaluate(dets, gt, use_cats=use_cats)
    rng = np.random.default_rng(seed)
    items = per_image(gt, dets)
    items = [items[i] for i in rng.permutation(len(items))]
    ev = Evaluator(box_format="xywh", categories=categories_of(gt), use_cats=use_cats)
    assert_identical(feed(ev, items, rng), ref)


def test_batches_of_32_in_id_order_equal_evaluate(coco_pair):
    gt, dets = load_pair(coco_pair.name)
    ev = feed(Evaluator(box_format="xywh", categories=categories_of(gt)), per_image(gt, dets), max_batch=32)
    assert_identical(ev.compute(), deteval.evaluate(dets, gt))


@pytest.mark.parametrize("name", ["coco_fake100", "voc100"])
def test_options_and_fixed_mode_equal_evaluate(name):
    gt, dets = load_pair(name)
    rng = np.random.default_rng(7)
    # some GT ignored by the user: only the fixed mode honours the flag
    gt = dataclasses.replace(gt, ignore=rng.random(len(gt)) < 0.2)
    options = {
        "iou_thrs": [0.3, 0.5, 0.7],
        "max_dets": [1, 5, 20],
        "area_ranges": {"all": (0, 1e10), "small": (0, 48**2), "medium": (48**2, 128**2), "large": (128**2, 1e10)},
    }
    items = per_image(gt, dets, ignore=True)
    for compat in (True, False):
        ref = deteval.evaluate(dets, gt, compat=compat, **options)
        order = rng.permutation(len(items))
        ev = Evaluator(box_format="xywh", categories=categories_of(gt), compat=compat, **options)
        assert_identical(feed(ev, [items[i] for i in order], rng), ref)


def test_default_area_and_crowd(coco_pair):
    """Without area and iscrowd, targets use w*h and no crowd, as load_coco_gt does for missing keys."""
    gt, dets = load_pair(coco_pair.name)
    gt_default = dataclasses.replace(gt, area=gt.boxes[:, 2] * gt.boxes[:, 3], crowd=np.zeros(len(gt), bool))
    ev = Evaluator(box_format="xywh", categories=categories_of(gt))
    feed(ev, per_image(gt, dets, area=False, crowd=False), np.random.default_rng(3))
    assert_identical(ev.compute(), deteval.evaluate(dets, gt_default))


def _converted(boxes: np.ndarray, box_format: str) -> tuple[np.ndarray, np.ndarray]:
    """(boxes in box_format, the xywh boxes the Evaluator must derive from them)."""
    x, y, w, h = boxes.T
    if box_format == "xyxy":
        x2, y2 = x + w, y + h
        return np.stack([x, y, x2, y2], 1), np.stack([x, y, x2 - x, y2 - y], 1)
    cx, cy = x + w / 2, y + h / 2
    return np.stack([cx, cy, w, h], 1), np.stack([cx - w / 2, cy - h / 2, w, h], 1)


@pytest.mark.parametrize("box_format", ["xyxy", "cxcywh"])
@pytest.mark.parametrize("name", ["coco_fake100", "voc100", "toy7"])
def test_other_box_formats_equal_evaluate_on_the_same_converted_boxes(name, box_format):
    gt, dets = load_pair(name)
    gt_in, gt_xywh = _converted(gt.boxes, box_format)
    dt_in, dt_xywh = _converted(dets.boxes, box_format)
    gt_conv = dataclasses.replace(gt, boxes=gt_xywh)
    dets_conv = dataclasses.replace(dets, boxes=dt_xywh, area=dt_xywh[:, 2] * dt_xywh[:, 3])
    ref = deteval.evaluate(dets_conv, gt_conv)
    items = per_image(dataclasses.replace(gt, boxes=gt_in), dataclasses.replace(dets, boxes=dt_in))
    rng = np.random.default_rng(5)
    ev = Evaluator(box_format=box_format, categories=categories_of(gt))
    assert_identical(feed(ev, [items[i] for i in rng.permutation(len(items))], rng), ref)


def test_auto_image_ids_in_dataset_order_equal_evaluate(coco_pair):
    gt, dets = load_pair(coco_pair.name)
    ev = Evaluator(box_format="xywh", categories=categories_of(gt))
    feed(ev, per_image(gt, dets, with_ids=False), np.random.default_rng(11))
    assert_identical(ev.compute(), deteval.evaluate(dets, gt))


@pytest.mark.parametrize("world", [2, 3])
def test_auto_ids_with_rank_and_world_size_follow_a_distributed_sampler(world):
    """Rank r fed images r, r+W, r+2W ...: auto ids are the dataset indices, whatever W."""
    gt, dets = load_pair("coco_fake100")
    items = per_image(gt, dets, with_ids=False)
    evs = [Evaluator(box_format="xywh", categories=categories_of(gt), rank=r, world_size=world) for r in range(world)]
    rng = np.random.default_rng(world)
    for r, ev in enumerate(evs):
        feed(ev, items[r::world], rng)
    merged = evs[-1].merge(*evs[:-1])
    assert_identical(merged.compute(), deteval.evaluate(dets, gt))


def test_string_image_ids_and_labels_equal_evaluate():
    """String ids sort as strings, in evaluate() and in the Evaluator alike."""
    data = COCO_PAIRS["coco_fake100"].load_gt()
    preds = COCO_PAIRS["coco_fake100"].load_preds()
    img = {im["id"]: f"im{(im['id'] * 7919) % 1000:03d}-{im['id']}" for im in data["images"]}
    cat = {c["id"]: f"c{c['id'] * 37 % 101}" for c in data["categories"]}
    data = json.loads(json.dumps(data))
    for im in data["images"]:
        im["id"] = img[im["id"]]
    for c in data["categories"]:
        c["id"] = cat[c["id"]]
    for a in data["annotations"]:
        a["image_id"], a["category_id"] = img[a["image_id"]], cat[a["category_id"]]
    preds = [dict(p, image_id=img[p["image_id"]], category_id=cat[p["category_id"]]) for p in preds]
    gt = load_coco_gt(data)
    dets = load_coco_results(preds, gt)
    assert gt.images.ids.dtype.kind == "U" and gt.categories.ids.dtype.kind == "U"
    rng = np.random.default_rng(2)
    items = per_image(gt, dets)
    ev = Evaluator(box_format="xywh", categories=categories_of(gt))
    assert_identical(feed(ev, [items[i] for i in rng.permutation(len(items))], rng), deteval.evaluate(dets, gt))


def test_categories_default_to_the_labels_seen():
    gt, dets = load_pair("coco_fake100")
    items = per_image(gt, dets)
    seen = np.unique(np.concatenate([np.concatenate([p["labels"], t["labels"]]) for p, t in items]))
    assert len(seen) < len(gt.categories)  # the file lists categories that no row uses
    res = feed(Evaluator(box_format="xywh"), items).compute()
    assert np.array_equal(res.arrays["cat_ids"], seen)
    ref = feed(Evaluator(box_format="xywh", categories=seen.tolist()), items).compute()
    assert_identical(res, ref)


def test_torch_tensors_equal_numpy_arrays():
    torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install 'deteval[torch]')")
    gt, dets = load_pair("coco_fake100")
    items = per_image(gt, dets)
    as_np = feed(Evaluator(box_format="xywh", categories=categories_of(gt)), items, max_batch=16).compute()

    def tensors(d, dtype):
        out = {}
        for k, v in d.items():
            if k == "image_id":
                out[k] = torch.tensor(v)  # a 0-d tensor, as datasets give
            elif k in ("boxes", "scores", "area"):
                out[k] = torch.as_tensor(np.asarray(v, np.float64), dtype=dtype).requires_grad_(k == "boxes")
            else:
                out[k] = torch.as_tensor(v)
        return out

    t64 = [(tensors(p, torch.float64), tensors(t, torch.float64)) for p, t in items]
    res = feed(Evaluator(box_format="xywh", categories=categories_of(gt)), t64, max_batch=16).compute()
    assert_identical(res, as_np)
    # float32 tensors: the same numbers as NumPy float32 arrays (float32 -> float64 is exact)
    t32 = [(tensors(p, torch.float32), tensors(t, torch.float32)) for p, t in items]
    n32 = [
        ({k: (np.asarray(v, np.float32) if k in ("boxes", "scores", "area") else v) for k, v in d.items()} for d in pt)
        for pt in items
    ]
    res32 = feed(Evaluator(box_format="xywh", categories=categories_of(gt)), t32, max_batch=16).compute()
    ref32 = feed(Evaluator(box_format="xywh", categories=categories_of(gt)), [tuple(x) for x in n32]).compute()
    assert_identical(res32, ref32)


# --------------------------------------------------------------------------------------
# state: merge, pickle, reset


def _states_for_split(name: str, assignment: list[int], n_parts: int, seed: int) -> list[Evaluator]:
    gt, dets = load_pair(name)
    items = per_image(gt, dets)
    rng = np.random.default_rng(seed)
    evs = []
    for part in range(n_parts):
        mine = [items[i] for i in rng.permutation(len(items)) if assignment[i] == part]
        evs.append(feed(Evaluator(box_format="xywh", categories=categories_of(gt)), mine, rng))
    return evs


def _copy(ev: Evaluator) -> Evaluator:
    return pickle.loads(pickle.dumps(ev))


@settings(max_examples=examples(25))
@given(data=st.data())
def test_merge_is_associative_and_commutative(data):
    name = data.draw(st.sampled_from(["coco_fake100", "voc100", "toy7"]), label="pair")
    gt, dets = load_pair(name)
    n = data.draw(st.integers(2, 4), label="parts")
    assignment = data.draw(st.lists(st.integers(0, n - 1), min_size=len(gt.images), max_size=len(gt.images)))
    a, *rest = _states_for_split(name, assignment, n, data.draw(st.integers(0, 2**16)))
    ref = deteval.evaluate(dets, gt)
    parts = [a, *rest]
    # left fold in the drawn order
    left = _copy(parts[0])
    for p in parts[1:]:
        left.merge(_copy(p))
    # right fold in a permuted order: (p3 + (p2 + (p1 + p0)))
    perm = data.draw(st.permutations(range(n)), label="order")
    right = _copy(parts[perm[-1]])
    for i in reversed(perm[:-1]):
        right = _copy(parts[i]).merge(right)
    # all at once, from raw states
    flat = Evaluator(box_format="xywh", categories=categories_of(gt)).merge(*[p.state() for p in reversed(parts)])
    for ev in (left, right, flat):
        assert_identical(ev.compute(), ref)


def test_pickled_mid_stream_evaluator_continues():
    gt, dets = load_pair("voc100")
    items = per_image(gt, dets)
    ev = feed(Evaluator(box_format="xywh", categories=categories_of(gt)), items[:40], max_batch=7)
    ev.compute()
    ev2 = pickle.loads(pickle.dumps(ev))
    feed(ev2, items[40:], max_batch=5)
    assert_identical(ev2.compute(), deteval.evaluate(dets, gt))


def test_reset_and_cached_compute():
    gt, dets = load_pair("toy7")
    items = per_image(gt, dets)
    ev = feed(Evaluator(box_format="xywh", categories=categories_of(gt)), items[:3])
    first = ev.compute()
    assert ev.compute() is first  # no new update: the cached result
    feed(ev, items[3:])
    assert ev.compute() is not first
    assert_identical(ev.compute(), deteval.evaluate(dets, gt))
    ev.reset()
    assert ev.num_images == 0
    feed(ev, items)
    assert_identical(ev.compute(), deteval.evaluate(dets, gt))


def test_empty_evaluator_gives_minus_one():
    ev = Evaluator(box_format="xywh", categories=[1, 2])
    res = ev.compute()
    assert all(v == -1 for v in res.stats.values())
    ev.update([{"boxes": [], "scores": [], "labels": []}], [{"boxes": [], "labels": []}])
    assert all(v == -1 for v in ev.compute().stats.values())


def test_state_bytes_per_detection():
    gt, dets = load_pair("coco_fake100")
    ev = feed(Evaluator(box_format="xywh", categories=categories_of(gt)), per_image(gt, dets))
    s = ev.state()
    per_det = sum(getattr(s, f).nbytes for f in ("det_image", "det_label", "det_rank", "det_score", "det_state"))
    a, t = len(ev.params.area_ranges), len(ev.params.iou_thrs)
    assert per_det == s.num_detections * (4 + 8 + 4 + 8 + a * t) == s.num_detections * 64


def test_merge_rejects_other_parameters_and_mixed_id_modes():
    gt, dets = load_pair("toy7")
    items = per_image(gt, dets)
    a = feed(Evaluator(box_format="xywh"), items[:3])
    with pytest.raises(InputError, match="different protocol parameters or categories"):
        a.merge(feed(Evaluator(box_format="xywh", iou_thrs=[0.5]), items[3:]))
    with pytest.raises(InputError, match="different protocol parameters or categories"):
        a.merge(feed(Evaluator(box_format="xywh", categories=categories_of(gt)), items[3:]))
    with pytest.raises(InputError, match="assigned automatically"):
        a.merge(feed(Evaluator(box_format="xywh"), per_image(gt, dets, with_ids=False)[3:]))
    with pytest.raises(InputError, match="Evaluator or an EvaluatorState"):
        a.merge("not a state")
    assert isinstance(merge_states([a.state()]), EvaluatorState)


def test_adopt_state_computes_from_a_gathered_state_until_reset():
    """What deteval.evaluator.distributed.sync does with the ranks' merged state, without torch."""
    gt, dets = load_pair("toy7")
    items = per_image(gt, dets)
    cats = categories_of(gt)
    mine = feed(Evaluator(box_format="xywh", categories=cats), items[:3])
    other = feed(Evaluator(box_format="xywh", categories=cats), items[3:])
    mine.adopt_state(merge_states([mine.state(), other.state()]))
    assert_identical(mine.compute(), deteval.evaluate(dets, gt))
    assert mine.num_images == 3  # its own state is kept apart
    with pytest.raises(InputError, match="other protocol parameters"):
        mine.adopt_state(feed(Evaluator(box_format="xywh", iou_thrs=[0.5]), items).state())
    with pytest.raises(InputError, match="EvaluatorState"):
        mine.adopt_state("not a state")
    mine.reset()  # drops the adopted state with its own
    assert mine.compute().stats == Evaluator(box_format="xywh", categories=cats).compute().stats


def test_an_image_given_twice_is_an_error():
    gt, dets = load_pair("toy7")
    items = per_image(gt, dets)
    ev = feed(Evaluator(box_format="xywh"), items)
    feed(ev, items[2:3])  # the same image again, in a later batch
    with pytest.raises(InputError, match="given 2 times.*DistributedSampler"):
        ev.compute()
    a, b = feed(Evaluator(box_format="xywh"), items[:4]), feed(Evaluator(box_format="xywh"), items[3:])
    with pytest.raises(InputError, match=r"image_id: .*given 2 times"):
        a.merge(b).compute()
    # two evaluators assigning ids automatically without rank/world_size collide
    a = feed(Evaluator(box_format="xywh"), per_image(gt, dets, with_ids=False)[:3])
    b = feed(Evaluator(box_format="xywh"), per_image(gt, dets, with_ids=False)[3:])
    with pytest.raises(InputError, match="given 2 times"):
        a.merge(b).compute()


# --------------------------------------------------------------------------------------
# errors (issue 5, item 5)


def _p(**kw):
    d = {"boxes": [[0.0, 0.0, 10.0, 10.0], [5.0, 5.0, 20.0, 20.0]], "scores": [0.9, 0.8], "labels": [1, 2]}
    d.update(kw)
    return d


def _t(**kw):
    d = {"boxes": [[0.0, 0.0, 10.0, 10.0]], "labels": [1], "image_id": 7}
    d.update(kw)
    return d


@pytest.mark.parametrize(
    "preds, target, message",
    [
        ([_p()], [_t(), _t(image_id=8)], r"preds: update 1: 1 predictions for 2 targets"),
        (_p(), [_t()], "got a single dict"),
        ([_p(scores=[0.9])], [_t()], r"preds\[0\] \(image_id=7\): scores has 1 values but boxes has 2 rows"),
        ([_p(labels=[1, 2, 3])], [_t()], r"labels has 3 values but boxes has 2 rows"),
        ([_p()], [_t(labels=[])], r"target: update 1, target\[0\] \(image_id=7\): labels has 0 values but boxes has 1"),
        ([_p(boxes=[[0, 0, 1]] * 2)], [_t()], r"boxes must have shape \(n, 4\), got \(2, 3\)"),
        ([_p(boxes=[0, 0, 1, 1])], [_t()], r"boxes must have shape \(n, 4\), got \(4,\)"),
        ([_p()], [_t(boxes=[[[0, 0, 1, 1]]])], r"target\[0\].*boxes must have shape \(n, 4\), got \(1, 1, 4\)"),
        ([_p(boxes=[[0, 0, 1, 1], [0, np.nan, 1, 1]])], [_t()], r"preds\[0\].*boxes\[1\] is not finite"),
        ([_p()], [_t(boxes=[[0, 0, np.inf, 1]])], r"target\[0\].*boxes\[0\] is not finite"),
        ([_p(scores=[0.5, np.nan])], [_t()], r"scores\[1\] is not finite"),
        ([_p()], [_t(area=[np.nan])], r"area\[0\] is not finite"),
        ([_p(boxes=[[0, 0, 1, 1], [5, 5, 4, 9]])], [_t()], r"boxes\[1\] = \[5.0, 5.0, 4.0, 9.0\] has a negative width"),
        ([_p()], [_t(boxes=[[10, 10, 0, 20]])], r"target\[0\].*negative width or height as xyxy"),
        ([_p(labels=[1.0, 2.5])], [_t()], r"labels\[1\] = 2.5 is not a whole number"),
        ([_p(boxes=[["a", "b", "c", "d"]] * 2)], [_t()], r"boxes must be numbers"),
        ([_p(labels=[1, "x"])], [_t()], r"labels mix integers and strings|labels has dtype"),
        ([{"boxes": [], "labels": []}], [_t()], r"preds\[0\]: missing key 'scores'"),
        ([_p()], [{"boxes": [[0, 0, 1, 1]]}], r"target\[0\]: missing key 'labels'"),
        ([_p()], [[1, 2]], r"target\[0\]: expected a dict"),
        ([_p(image_id=3)], [_t()], r"image_id 3 differs from the target's image_id 7"),
        ([_p()], [_t(image_id=1.5)], r"image_id must be an integer or a string, got 1.5"),
        ([_p(), _p()], [_t(), _t()], r"image_id 7 appears twice in this batch"),
        ([_p(), _p()], [_t(), _t(image_id=None)], r"some images have an image_id and others do not"),
        ([_p(), _p()], [_t(), _t(image_id="x")], r"image ids mix integers and strings"),
        ([_p()], [_t(iscrowd=[0, 1])], r"iscrowd has 2 values but boxes has 1 rows"),
    ],
)
def test_input_errors(preds, target, message):
    ev = Evaluator()
    with pytest.raises(InputError, match=message):
        ev.update(preds, target)


def test_labels_outside_categories_are_an_error():
    ev = Evaluator(categories={1: "cat", 2: "dog"})
    ev.update([_p()], [_t()])
    with pytest.raises(InputError, match=r"preds: update 2, preds\[1\] \(image_id=9\): label 5 is not one of the"):
        ev.update([_p(), _p(labels=[1, 5])], [_t(image_id=8), _t(image_id=9)])
    with pytest.raises(InputError, match=r"target: update 3, target\[0\] \(image_id=10\): label 3 is not"):
        ev.update([_p()], [_t(image_id=10, labels=[3])])
    with pytest.raises(InputError, match="labels mix integers and strings across updates"):
        ev.update([_p(labels=["a", "b"])], [_t(image_id=11, labels=["a"])])
    with pytest.raises(InputError, match=r"preds\[0\] \(image_id=11\): label 'a' is not one of the categories"):
        Evaluator(categories=[1, 2]).update([_p(labels=["a", "b"])], [_t(image_id=11, labels=["a"])])


def test_constructor_errors():
    with pytest.raises(InputError, match=r"box_format: unknown box_format 'xyxyxy'; choose from \('xyxy', 'xywh'"):
        Evaluator(box_format="xyxyxy")
    with pytest.raises(InputError, match="supports"):
        Evaluator(protocol="nope")
    with pytest.raises(InputError, match="iou_type"):
        Evaluator(iou_type="keypoints-ish")
    with pytest.raises(InputError, match="lists an id twice"):
        Evaluator(categories=[1, 2, 1])
    with pytest.raises(InputError, match="categories is empty"):
        Evaluator(categories=[])
    with pytest.raises(InputError, match="give both rank and world_size"):
        Evaluator(rank=1)
    with pytest.raises(InputError, match="rank must be in"):
        Evaluator(rank=2, world_size=2)


def test_mixing_auto_and_given_ids_across_updates_is_an_error():
    ev = Evaluator()
    ev.update([_p()], [_t(image_id=None)])
    with pytest.raises(InputError, match="earlier images"):
        ev.update([_p()], [_t()])


def test_errors_leave_the_state_unchanged():
    ev = Evaluator(box_format="xywh")
    ev.update([_p()], [_t()])
    before = ev.compute()
    with pytest.raises(InputError):
        ev.update([_p(), _p(scores=[0.1])], [_t(image_id=8), _t(image_id=9)])
    assert ev.num_images == 1
    assert ev.compute() is before


def test_torch_low_precision_and_integer_dtypes():
    torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install 'deteval[torch]')")
    boxes = [[0.0, 0.0, 10.0, 10.0], [2.0, 2.0, 8.5, 9.0], [40.0, 40.0, 12.0, 6.0]]
    scores = [0.875, 0.75, 0.5]  # exact in float16
    tgt_np = {"boxes": np.array(boxes[:2]), "labels": np.array([1, 2]), "image_id": 3}
    ref = Evaluator(box_format="xywh")
    ref.update([{"boxes": np.array(boxes), "scores": np.array(scores), "labels": np.array([1, 2, 1])}], [tgt_np])
    ev = Evaluator(box_format="xywh")
    pred = {
        "boxes": torch.tensor(boxes, dtype=torch.bfloat16),  # these values are exact in bfloat16
        "scores": torch.tensor(scores, dtype=torch.float16),
        "labels": torch.tensor([1, 2, 1], dtype=torch.int32),
    }
    tgt = {"boxes": torch.tensor(boxes[:2], dtype=torch.bfloat16), "labels": torch.tensor([1, 2], dtype=torch.uint8)}
    ev.update([pred], [dict(tgt, image_id=torch.tensor([3]))])
    assert_identical(ev, ref.compute())
