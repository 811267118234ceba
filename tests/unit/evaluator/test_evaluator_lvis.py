"""Evaluator(protocol="lvis"): fed the lvis100 fixture in batches, it equals deteval.evaluate(protocol="lvis")
bit for bit and lvis-api 0.5.3 (``==`` on every stat, precision and recall arrays); merged shards equal one
evaluator; bad categories, frequencies and federated lists are InputErrors naming the record."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.examples import examples
from support.lvis_oracle import (
    assert_same,
    fixture_files,
    lvis100_categories,
    lvis100_images,
    run_lvis,
    with_unknown_categories,
)

import deteval
from deteval import InputError

# pycocotools' decode (the segm inputs) trips a numpy 2 deprecation on every call
pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")


@pytest.fixture(scope="module")
def lvis100(tmp_path_factory):
    return fixture_files(tmp_path_factory.mktemp("lvis100"))


@pytest.fixture(scope="module")
def reference(lvis100):
    """deteval.evaluate and lvis-api on the fixture files, per iou_type."""
    out = {}
    for iou_type in ("bbox", "segm"):
        gt, dets = lvis100["lvis_val_100"], lvis100[f"dets_{iou_type}"]
        out[iou_type] = (deteval.evaluate(dets, gt, protocol="lvis", iou_type=iou_type), run_lvis(gt, dets, iou_type))
    return out


def _evaluator(**kw) -> deteval.Evaluator:
    if "frequencies" not in kw:
        kw.setdefault("categories", lvis100_categories())
    return deteval.Evaluator(protocol="lvis", box_format="xywh", **kw)


def _feed(ev: deteval.Evaluator, items: list, batch_size: int) -> deteval.Evaluator:
    for i in range(0, len(items), batch_size):
        chunk = items[i : i + batch_size]
        ev.update([p for p, _ in chunk], [t for _, t in chunk])
    return ev


def assert_equal_results(res, ref) -> None:
    assert list(res.stats) == list(ref.stats)
    assert res.stats == ref.stats
    for name in ("precision", "recall", "scores"):
        assert np.array_equal(getattr(res, name), getattr(ref, name)), name
    assert res.per_class == ref.per_class


@pytest.fixture(scope="module")
def bbox_items():
    return list(lvis100_images("bbox"))


@pytest.mark.slow
@pytest.mark.parametrize("batch_size", [1, 7, 100])
def test_bbox_batches_equal_evaluate_and_lvis_api(reference, bbox_items, batch_size):
    ref, ev_api = reference["bbox"]
    res = _feed(_evaluator(), bbox_items, batch_size).compute()
    assert_equal_results(res, ref)
    assert_same(res, ev_api)
    assert all(res.stats[k] > 0 for k in ("APr", "APc", "APf"))


@pytest.mark.slow
def test_segm_batches_equal_evaluate_and_lvis_api(reference):
    ref, ev_api = reference["segm"]
    ev = _evaluator(iou_type="segm")
    batch: list = []
    for item in lvis100_images("segm"):  # fed as decoded: masks of a whole batch only at once
        batch.append(item)
        if len(batch) == 5:
            _feed(ev, batch, 5)
            batch = []
    res = _feed(ev, batch, 5).compute()
    assert_equal_results(res, ref)
    assert_same(res, ev_api)


def test_the_federated_lists_count(reference, bbox_items):
    # without the lists, results of negative categories are dropped and unmatched not-exhaustive ones
    # are false positives: the numbers move, so the lists in the targets are read
    ref, _ = reference["bbox"]
    bare = [(p, {k: v for k, v in t.items() if not k.endswith("category_ids")}) for p, t in bbox_items]
    res = _feed(_evaluator(), bare, 10).compute()
    assert res.stats != ref.stats


def test_ids_with_frequencies_equal_records(reference, bbox_items):
    cats = lvis100_categories()
    freq = {c["id"]: c["frequency"] for c in cats}
    by_ids, by_freq = _evaluator(categories=[c["id"] for c in cats], frequencies=freq), _evaluator(frequencies=freq)
    for ev in (by_ids, by_freq):
        assert _feed(ev, bbox_items, 10).compute().stats == reference["bbox"][0].stats


def test_merged_shards_equal_one(reference, bbox_items):
    ref, ev_api = reference["bbox"]
    one = _feed(_evaluator(), bbox_items, 8)
    a = _feed(_evaluator(), bbox_items[::2], 8)
    b = _feed(_evaluator(), bbox_items[1::2], 3)
    # a state goes over the wire pickled (deteval.evaluator.distributed), and merges in any order
    b_state = pickle.loads(pickle.dumps(b.state()))
    merged = _evaluator().merge(b_state, a)
    assert_equal_results(merged.compute(), one.compute())
    assert_equal_results(merged.compute(), ref)
    assert_same(merged.compute(), ev_api)
    # adopt_state is what sync() ends with
    c = _evaluator()
    c.adopt_state(pickle.loads(pickle.dumps(merged.state())))
    assert c.compute().stats == ref.stats


def test_merge_needs_the_same_frequencies(bbox_items):
    cats = lvis100_categories()
    other = [dict(c, frequency="r" if c["frequency"] != "r" else "f") for c in cats]
    a, b = _feed(_evaluator(), bbox_items[:5], 5), _feed(_evaluator(categories=other), bbox_items[5:10], 5)
    with pytest.raises(InputError, match="different protocol parameters or categories"):
        a.merge(b)
    coco = deteval.Evaluator(box_format="xywh", categories=[c["id"] for c in cats])
    with pytest.raises(InputError, match="different protocol parameters"):
        a.merge(coco)


def test_empty_evaluator_is_valid():
    res = _evaluator().compute()
    assert set(res.stats.values()) == {-1.0}
    assert len(res.per_class) == len(lvis100_categories())


# --------------------------------------------------------------------------------------------
# generated federated datasets: small cuts (max_dets) so that images go over them, ties at the cut


def _case(seed: int, max_dets: int) -> tuple[dict, list]:
    rng = random.Random(seed)
    n_cat, size = rng.randint(1, 6), rng.choice([40, 120])
    cat_ids = sorted(rng.sample(range(1, 3 * n_cat + 1), n_cat))
    cats = [{"id": c, "name": f"c{c}", "frequency": rng.choice("rcf")} for c in cat_ids]
    images, anns, dets = [], [], []

    def box() -> list[float]:
        w, h = rng.choice([(32, 32), (96, 96), (0, 5), (1, 1), (rng.randint(1, size), rng.randint(1, size))])
        return [float(rng.randint(0, size // 2)), float(rng.randint(0, size // 2)), float(w), float(h)]

    for img in range(1, rng.randint(1, 5) + 1):
        neg, nel = rng.sample(cat_ids, rng.randint(0, n_cat)), rng.sample(cat_ids, rng.randint(0, min(2, n_cat)))
        images.append({"id": img, "height": size, "width": size, "neg_category_ids": neg,
                       "not_exhaustive_category_ids": nel})  # fmt: skip
        gts = []
        for _ in range(rng.randint(0, 5)):
            b = box()
            area = rng.choice([b[2] * b[3]] * 3 + [0.0, 1024.0, 9216.0])
            flags = {"ignore": int(rng.random() < 0.1), "iscrowd": int(rng.random() < 0.1)}
            gts.append({"id": len(anns) + len(gts) + 1, "image_id": img, "category_id": rng.choice(cat_ids), "bbox": b,
                        "area": area, **flags})  # fmt: skip
        anns += gts
        for _ in range(rng.randint(0, 2 * max_dets + 2)):
            if gts and rng.random() < 0.6:
                g = rng.choice(gts)
                b = [max(v + rng.choice([0, 0, 1, -1]), 0.0) for v in g["bbox"]]
                cat = g["category_id"] if rng.random() < 0.8 else rng.choice(cat_ids)
            else:
                b, cat = box(), rng.choice(cat_ids)
            dets.append({"image_id": img, "category_id": cat, "bbox": b, "score": rng.choice([0.1, 0.5, 0.5, 0.9])})
    if not dets:  # lvis-api reads the first result: it needs one
        dets.append({"image_id": 1, "category_id": cat_ids[0], "bbox": [0.0, 0.0, 4.0, 4.0], "score": 0.5})
    rng.shuffle(dets)
    return {"images": images, "annotations": anns, "categories": cats}, dets


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 2, 3, 300]), st.integers(1, 3))
def test_generated_datasets(seed, max_dets, batch_size):
    gt, dets = _case(seed, max_dets)
    ev_api = run_lvis(gt, dets, "bbox", max_dets=max_dets)
    ref = deteval.evaluate(dets, gt, protocol="lvis", config={"max_dets": max_dets})
    items = []
    for im in random.Random(seed).sample(gt["images"], len(gt["images"])):
        a = [x for x in gt["annotations"] if x["image_id"] == im["id"]]
        r = [x for x in dets if x["image_id"] == im["id"]]  # file order: ties at the cut as in the file
        pred = {"boxes": np.array([x["bbox"] for x in r]).reshape(-1, 4), "scores": [x["score"] for x in r],
                "labels": [x["category_id"] for x in r]}  # fmt: skip
        target = {"image_id": im["id"], "boxes": np.array([x["bbox"] for x in a]).reshape(-1, 4),
                  "labels": [x["category_id"] for x in a], "area": [x["area"] for x in a],
                  "ignore": [x["ignore"] for x in a], "iscrowd": [x["iscrowd"] for x in a],
                  "neg_category_ids": im["neg_category_ids"],
                  "not_exhaustive_category_ids": im["not_exhaustive_category_ids"]}  # fmt: skip
        items.append((pred, target))
    ev = deteval.Evaluator(protocol="lvis", box_format="xywh", categories=gt["categories"], max_dets=max_dets)
    res = _feed(ev, items, batch_size).compute()
    assert_equal_results(res, ref)
    assert_same(res, ev_api)


# --------------------------------------------------------------------------------------------
# bad input


def _one(bbox_items, **target_changes):
    p, t = bbox_items[0]
    return [p], [dict(t, **target_changes)]


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("neg_category_ids", [1, 999999], "neg_category_ids names 999999, which is not one of the categories"),
        ("not_exhaustive_category_ids", [-3], "not_exhaustive_category_ids names -3"),
        ("neg_category_ids", [1.5], r"neg_category_ids\[0\] = 1.5 is not an integer category id"),
        ("neg_category_ids", ["cat"], r"neg_category_ids\[0\] = 'cat' is not an integer category id"),
        ("neg_category_ids", "1", "must be a list of category ids"),
        ("not_exhaustive_category_ids", [[1, 2]], "flat list"),
    ],
)
def test_bad_lists_name_the_image(bbox_items, key, value, message):
    ev = _evaluator()
    preds, target = _one(bbox_items, **{key: value})
    with pytest.raises(InputError, match=message) as err:
        ev.update(preds, target)
    assert f"target[0] (image_id={target[0]['image_id']})" in str(err.value)
    assert ev.num_images == 0  # a batch that raised leaves the evaluator as it was


def test_whole_float_ids_are_ids(bbox_items):
    p, t = bbox_items[0]
    a, b = _evaluator(), _evaluator()
    a.update([p], [t])
    b.update([p], [dict(t, neg_category_ids=np.asarray(t["neg_category_ids"], np.float64))])
    assert a.compute().stats == b.compute().stats


def test_target_labels_outside_the_categories(bbox_items):
    p, t = bbox_items[0]
    with pytest.raises(InputError, match="label 999999 is not one of the categories"):
        _evaluator().update([p], [dict(t, labels=np.full(len(t["labels"]), 999999))])


def test_predictions_outside_the_categories_count_in_the_cut(lvis100, tmp_path, bbox_items):
    """Predictions of labels outside the categories take their place in their image's 300, as lvis-api's
    LVISResults counts results of categories not in the ground truth, and are then dropped (a warning):
    the Evaluator equals evaluate() and lvis-api on the same results as a file."""
    import json

    dets = json.loads(open(lvis100["dets_bbox"]).read())
    mixed, n_busy = with_unknown_categories(dets, seed=3)
    assert n_busy >= 3
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(mixed))
    with pytest.warns(deteval.DetevalWarning):
        ref = deteval.evaluate(str(path), lvis100["lvis_val_100"], protocol="lvis")
    assert_same(ref, run_lvis(lvis100["lvis_val_100"], str(path)))
    rows: dict = {}
    for r in mixed:  # each image's results in file order
        rows.setdefault(r["image_id"], []).append(r)
    items = []
    for p, t in bbox_items:
        r = rows.get(t["image_id"], [])
        p = {
            "boxes": np.array([x["bbox"] for x in r], np.float64).reshape(-1, 4),
            "scores": np.array([x["score"] for x in r], np.float64),
            "labels": np.array([x["category_id"] for x in r], np.int64),
        }
        items.append((p, t))
    with pytest.warns(deteval.DetevalWarning, match="label is not one of the categories"):
        res = _feed(_evaluator(), items, 7).compute()
    assert_equal_results(res, ref)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"categories": None}, "needs the categories with their frequencies"),
        ({"categories": [1, 2, 3]}, "category 1.*needs a frequency of 'r', 'c' or 'f'.*got none"),
        ({"categories": [{"id": 1, "frequency": "x"}]}, r"categories\[0\] \(id=1\).*got 'x'"),
        ({"categories": [{"id": 1}, {"id": 2, "frequency": "r"}]}, "category 1.*got none"),
        ({"categories": [{"id": "a", "frequency": "r"}]}, "needs an integer 'id'"),
        ({"categories": [1, 2], "frequencies": {1: "r", 2: "c", 3: "f"}}, "category 3 is not one of the categories"),
        ({"categories": [{"id": 1, "frequency": "r"}], "frequencies": {1: "r"}}, "also in its categories record"),
        ({"categories": {"a": "cat"}, "frequencies": {}}, "integers"),
        ({"iou_thrs": [0.5]}, "iou_thrs is an option of the coco protocol"),
        ({"categories": [{"id": 1, "frequency": "r"}], "max_dets": [1, 10]}, "max_dets is one positive integer"),
        ({"categories": [{"id": 1, "frequency": "r"}], "max_dets": 0}, "max_dets is one positive integer"),
        ({"iou_type": "keypoints"}, "evaluates 'bbox' and 'segm'"),
    ],
)
def test_bad_categories_and_options(kw, message):
    with pytest.raises(InputError, match=message):
        deteval.Evaluator(protocol="lvis", **kw)


def test_frequencies_are_lvis_only():
    with pytest.raises(InputError, match="lvis protocol only"):
        deteval.Evaluator(categories=[1], frequencies={1: "r"})
