"""The streaming Evaluator and deteval.evaluator.dask on voc07, voc10, dota and crowdpose: evaluate()'s result, exactly.

Each dataset is fed as one (prediction, target) dict per image, in several batches, as merged shards
(several Evaluators) and through pickled states; every stat, per-class row, summary line and array of
the result must equal ``deteval.evaluate()`` on the same data (``==`` / ``np.array_equal``).

The VOC-family rank ties (``ties="item"``) in the order of a dataset that lists its detections image
by image, images ascending by id, each image's rows in the order given: the reference datasets are
materialised in that order, and scores are rounded so that ties between images occur.
"""

from __future__ import annotations

import dataclasses
import json
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval import protocols
from deteval.errors import InputError
from deteval.evaluator import Evaluator, merge_states
from deteval.types import Detections, GroundTruth, IdTable, take_rows

NO_STREAMING = r"protocol 'openimages' does not support streaming evaluation \(Evaluator, Dask\)"
DATA = str(Path(__file__).resolve().parents[2] / "data")  # tests/data, wherever deteval is installed


# --------------------------------------------------------------------------------------
# helpers


def assert_same(res, ref, path: str = "result") -> None:
    """Every field of ``ref`` (a result, or a dataclass in it) equal in ``res``; the replay aside."""
    assert type(res) is type(ref), path
    for f in dataclasses.fields(ref):
        if f.name == "replay":
            continue
        a, b = getattr(res, f.name), getattr(ref, f.name)
        where = f"{path}.{f.name}"
        if isinstance(b, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape, where
            assert np.array_equal(a, b, equal_nan=b.dtype.kind == "f"), where
        elif dataclasses.is_dataclass(b):
            assert_same(a, b, where)
        else:
            assert a == b, where


def image_ordered(dets: Detections) -> Detections:
    """The detections listed image by image (images by index: ascending id), each image's rows in order."""
    return take_rows(dets, np.argsort(dets.image, kind="stable"))


def per_image(gt: GroundTruth, dets: Detections, flags: tuple[str, ...] = ("iscrowd", "ignore", "difficult")) -> list:
    """One (prediction dict, target dict) per image, in id order; labels are category ids."""
    cat_ids = gt.categories.ids
    out = []
    for i in range(len(gt.images)):
        g, d = np.flatnonzero(gt.image == i), np.flatnonzero(dets.image == i)
        pred = {"boxes": dets.boxes[d], "scores": dets.score[d], "labels": cat_ids[dets.category[d]]}
        tgt = {"boxes": gt.boxes[g], "labels": cat_ids[gt.category[g]], "image_id": gt.images.id_of(i)}
        for key, col in (("iscrowd", gt.crowd), ("ignore", gt.ignore), ("difficult", gt.difficult)):
            if key in flags:
                tgt[key] = col[g].astype(np.int64)
        out.append((pred, tgt))
    return out


def categories_of(gt: GroundTruth) -> dict:
    return {gt.categories.id_of(i): gt.categories.name_of(i) for i in range(len(gt.categories))}


def feed(ev: Evaluator, items: list, sizes: list[int]) -> Evaluator:
    k, j = 0, 0
    while k < len(items):
        b = sizes[j % len(sizes)]
        ev.update([p for p, _ in items[k : k + b]], [t for _, t in items[k : k + b]])
        k, j = k + b, j + 1
    return ev


def check_streaming(make, items: list, ref) -> None:
    """Batches of several sizes in order and shuffled, merged shards and pickled states: all give ``ref``."""
    rng = np.random.default_rng(0)
    assert_same(feed(make(), items, [1, 4, 2, 7]).compute(), ref)
    shuffled = [items[i] for i in rng.permutation(len(items))]
    assert_same(feed(make(), shuffled, [3, 1, 5]).compute(), ref)
    cuts = np.sort(rng.choice(np.arange(1, len(items)), size=3, replace=False))
    shards = [feed(make(), part, [2, 3]) for part in np.split(np.array(items, dtype=object), cuts)]
    assert_same(make().merge(*shards[::-1]).compute(), ref)
    states = [pickle.loads(pickle.dumps(s.state())) for s in shards]
    assert_same(make().merge(*states).compute(), ref)
    restored = pickle.loads(pickle.dumps(shards[0].merge(*shards[1:])))
    assert_same(restored.compute(), ref)
    assert_same(make().merge(merge_states(states[2:]), merge_states(states[:2])).compute(), ref)


# --------------------------------------------------------------------------------------
# data


def voc_data(tie_scores: bool) -> tuple[Detections, GroundTruth]:
    from deteval.io.voc_inputs import load_voc_inputs

    dets, gt = load_voc_inputs(f"{DATA}/voc100/coco_results_from_dets.json", f"{DATA}/voc100/coco_gt_from_voc.json")
    rng = np.random.default_rng(1)
    gt = dataclasses.replace(gt, difficult=rng.random(len(gt)) < 0.15)  # some difficult ground truth
    if tie_scores:  # coarse scores: ties across images and classes, where the rows' order decides
        dets = dataclasses.replace(dets, score=np.round(dets.score, 1))
    return image_ordered(dets), gt


def as_xyxy(c):
    x, y, w, h = c.boxes.T
    return dataclasses.replace(c, boxes=np.stack([x, y, x + w, y + h], axis=1), box_format="xyxy")


def dota_data() -> tuple[Detections, GroundTruth]:
    proto = protocols.get("dota")
    with warnings.catch_warnings():  # the fixture's self-intersecting quadrilaterals, dropped below
        warnings.simplefilter("ignore")
        dets, gt = proto.load(f"{DATA}/dota/dets", f"{DATA}/dota/gt", proto.params())
    from deteval.geometry.quads import is_simple_quad

    dets = take_rows(dets, is_simple_quad(dets.boxes))  # the Evaluator refuses self-intersecting ones
    gt = take_rows(gt, is_simple_quad(gt.boxes))
    return image_ordered(dataclasses.replace(dets, score=np.round(dets.score, 1))), gt


# --------------------------------------------------------------------------------------
# voc07, voc10


@pytest.mark.parametrize("protocol", ["voc07", "voc10"])
@pytest.mark.parametrize("ties", [True, False], ids=["tied", "scores"])
def test_voc_streams_equal_evaluate(protocol, ties):
    dets, gt = voc_data(ties)
    ref = deteval.evaluate(dets, gt, protocol=protocol)
    assert ref.stats["mAP"] > 0
    cats = categories_of(gt)
    check_streaming(lambda: Evaluator(protocol=protocol, box_format="xywh", categories=cats), per_image(gt, dets), ref)


@pytest.mark.parametrize("ties", ["argsort", "item"])
def test_voc_streams_equal_evaluate_with_contested_ties(ties):
    """200 detections per class on 7 score levels, duplicates of one ground truth at one score: which
    duplicate is the TP follows the class's ranking (under "argsort", numpy's introsort over every row)."""
    rng = np.random.default_rng(3)
    n_img, boxes, labels, g_img = 30, [], [], []
    for im in range(n_img):
        for slot in range(int(rng.integers(0, 7))):
            x, y = 50.0 * (slot % 3), 50.0 * (slot // 3)
            boxes.append((x, y, x + 20, y + 20))
            labels.append(int(rng.integers(1, 4)))
            g_img.append(im)
    gt = GroundTruth(
        image=np.array(g_img, np.int32), category=np.array(labels, np.int32) - 1, boxes=np.array(boxes),
        area=np.zeros(len(boxes)), crowd=np.zeros(len(boxes), bool), ignore=np.zeros(len(boxes), bool),
        difficult=rng.random(len(boxes)) < 0.1, ann_id=np.arange(1, len(boxes) + 1),
        images=IdTable(np.arange(10, 10 + n_img, dtype=np.int64)),
        categories=IdTable(np.arange(1, 4, dtype=np.int64), names=["a", "b", "c"]), box_format="xyxy",
    )  # fmt: skip
    pick = rng.integers(0, len(boxes), 600)
    shift = rng.choice([0.0, 0.0, 1.0, 2.0, 12.0], 600)
    d_boxes = gt.boxes[pick] + np.stack([shift, 0 * shift, shift, 0 * shift], 1)
    dets = Detections(
        image=gt.image[pick], category=gt.category[pick], boxes=d_boxes,
        score=rng.integers(1, 8, 600) / 7.0, area=np.zeros(600), box_format="xyxy",
    )  # fmt: skip
    dets = image_ordered(dets)
    for protocol in ("voc07", "voc10"):
        ref = deteval.evaluate(dets, gt, protocol=protocol, ties=ties, iou_thrs=[0.5, 0.85])
        make = lambda protocol=protocol: Evaluator(  # noqa: E731
            protocol=protocol, box_format="xyxy", categories=categories_of(gt), ties=ties, iou_thrs=[0.5, 0.85]
        )
        check_streaming(make, per_image(gt, dets), ref)
    stable = deteval.evaluate(dets, gt, protocol="voc10", ties="item")
    assert deteval.evaluate(dets, gt, protocol="voc10").stats != stable.stats  # the orders differ here


def test_voc_options_and_xyxy_boxes_as_given():
    dets, gt = voc_data(True)
    dets, gt = as_xyxy(dets), as_xyxy(gt)  # VOC reads xyxy as given: no round trip through xywh
    options = {"iou_thrs": [0.5, 0.7], "integrator": ["all_points", "voc11"], "plus_one": False, "ties": "group"}
    ref = deteval.evaluate(dets, gt, protocol="voc10", **options)
    cats = categories_of(gt)
    make = lambda: Evaluator(protocol="voc10", box_format="xyxy", categories=cats, **options)  # noqa: E731
    check_streaming(make, per_image(gt, dets), ref)


def test_voc_categories_default_to_the_labels_seen():
    dets, gt = voc_data(True)
    ref = deteval.evaluate(dets, gt, protocol="voc07")
    ev = feed(Evaluator(protocol="voc07", box_format="xywh"), per_image(gt, dets), [5])
    res = ev.compute()
    assert res.stats == ref.stats and np.array_equal(res.ap, ref.ap)  # every class of the fixture is seen
    assert [r["category_id"] for r in res.per_class] == [r["category_id"] for r in ref.per_class]


def test_voc_rejects_other_protocols_options():
    with pytest.raises(InputError, match="use_cats: not an option of protocol 'voc07'"):
        Evaluator(protocol="voc07", use_cats=False)
    with pytest.raises(InputError, match="names: not an option of protocol 'voc10'"):
        Evaluator(protocol="voc10", names=["a"])
    with pytest.raises(InputError, match="with protocol 'voc07' the Evaluator evaluates 'bbox', not 'segm'"):
        Evaluator(protocol="voc07", iou_type="segm")


def test_voc_merge_needs_the_same_parameters():
    a, b = Evaluator(protocol="voc07"), Evaluator(protocol="voc10")
    with pytest.raises(InputError, match="different protocol parameters"):
        a.merge(b)
    with pytest.raises(InputError, match="different protocol parameters"):
        a.merge(Evaluator(protocol="voc07", plus_one=False))


# --------------------------------------------------------------------------------------
# dota


def test_dota_streams_equal_evaluate():
    dets, gt = dota_data()
    ref = deteval.evaluate(dets, gt, protocol="dota")
    assert ref.stats["mAP"] > 0
    cats = categories_of(gt)
    items = per_image(gt, dets)
    check_streaming(lambda: Evaluator(protocol="dota", box_format="poly", categories=cats), items, ref)
    ref50 = deteval.evaluate(dets, gt, protocol="dota", integrator="all_points", iou_thrs=[0.5, 0.75])
    make = lambda: Evaluator(protocol="dota", categories=cats, integrator="all_points", iou_thrs=[0.5, 0.75])  # noqa: E731
    check_streaming(make, items, ref50)


def test_dota_box_formats():
    assert Evaluator(protocol="dota").box_format == "poly"
    with pytest.raises(InputError, match=r"choose from \('poly',\)"):
        Evaluator(protocol="dota", box_format="xyxy")


# --------------------------------------------------------------------------------------
# crowdpose


def crowdpose_files(synthetic: bool) -> tuple[list, dict]:
    gt = json.loads(open(f"{DATA}/crowdpose/example_crowdpose_val.json").read())
    preds = json.loads(open(f"{DATA}/crowdpose/example_crowdpose_preds.json").read())
    if not synthetic:
        return preds, gt
    rng = np.random.default_rng(7)
    images, anns, dts = [], [], []
    for _ in range(40):
        iid = int(rng.integers(1, 10**6))
        images.append({"id": iid, "crowdIndex": float(rng.choice([0.05, 0.19, 0.2, 0.5, 0.8, 0.95]))})
        for _ in range(int(rng.integers(0, 4))):
            x, y, w, h = (float(v) for v in rng.uniform([0, 0, 30, 30], [400, 400, 200, 200]))
            kp = np.stack([rng.uniform(x, x + w, 14), rng.uniform(y, y + h, 14), rng.integers(0, 3, 14)], 1)
            kp[kp[:, 2] == 0, :2] = 0
            crowd = int(rng.random() < 0.1)
            anns.append({"id": len(anns) + 1, "image_id": iid, "category_id": 1, "bbox": [x, y, w, h],
                         "keypoints": kp.reshape(-1).round(2).tolist(), "num_keypoints": int((kp[:, 2] > 0).sum()),
                         "iscrowd": crowd, "area": w * h})  # fmt: skip
            for _ in range(int(rng.integers(0, 3))):
                noisy = kp.copy()
                noisy[:, :2] += rng.normal(0, 6, (14, 2))
                noisy[:, 2] = rng.choice([0.0, 0.3, 0.9], 14)
                dts.append({"image_id": iid, "category_id": 1, "keypoints": noisy.reshape(-1).round(2).tolist(),
                            "score": float(np.round(rng.random(), 1))})  # fmt: skip
        for _ in range(int(rng.integers(0, 2))):  # a false positive
            kp = np.stack([rng.uniform(0, 500, 14), rng.uniform(0, 500, 14), np.full(14, 0.5)], 1)
            dts.append({"image_id": iid, "category_id": 1, "keypoints": kp.reshape(-1).round(2).tolist(),
                        "score": float(np.round(rng.random(), 1))})  # fmt: skip
    return dts, {"images": images, "annotations": anns, "categories": gt["categories"]}


def crowdpose_items(preds: list, gt: dict) -> list:
    out = []
    for img in sorted(gt["images"], key=lambda r: r["id"]):
        iid = img["id"]
        anns = [a for a in gt["annotations"] if a["image_id"] == iid]
        dts = [d for d in preds if d["image_id"] == iid]
        pred = {
            "keypoints": np.array([d["keypoints"] for d in dts], np.float64).reshape(len(dts), 42),
            "scores": np.array([d["score"] for d in dts], np.float64),
            "labels": np.array([d["category_id"] for d in dts], np.int64),
        }
        tgt = {
            "boxes": np.array([a["bbox"] for a in anns], np.float64).reshape(len(anns), 4),
            "keypoints": np.array([a["keypoints"] for a in anns], np.float64).reshape(len(anns), 42),
            "num_keypoints": np.array([a["num_keypoints"] for a in anns], np.float64),
            "labels": np.array([a["category_id"] for a in anns], np.int64),
            "iscrowd": np.array([a["iscrowd"] for a in anns], np.int64),
            "crowd_index": img["crowdIndex"],
            "image_id": iid,
        }
        out.append((pred, tgt))
    return out


@pytest.mark.parametrize("synthetic", [False, True], ids=["example", "synthetic"])
def test_crowdpose_streams_equal_evaluate(synthetic):
    preds, gt = crowdpose_files(synthetic)
    ref = deteval.evaluate(preds, gt, protocol="crowdpose", iou_type="keypoints")
    assert ref.stats["AP"] > 0
    cats = {c["id"]: c["name"] for c in gt["categories"]}
    make = lambda: Evaluator(protocol="crowdpose", iou_type="keypoints", box_format="xywh", categories=cats)  # noqa: E731
    check_streaming(make, crowdpose_items(preds, gt), ref)


def test_crowdpose_needs_crowd_index_and_keypoints():
    preds, gt = crowdpose_files(False)
    (p, t), *_ = crowdpose_items(preds, gt)
    ev = Evaluator(protocol="crowdpose", iou_type="keypoints", box_format="xywh")
    with pytest.raises(InputError, match=r"target\[0\]: missing key 'crowd_index'"):
        ev.update([p], [{k: v for k, v in t.items() if k != "crowd_index"}])
    with pytest.raises(InputError, match=r"preds\[0\].*missing key 'keypoints'"):
        ev.update([{k: v for k, v in p.items() if k != "keypoints"}], [t])
    with pytest.raises(InputError, match="with protocol 'crowdpose' the Evaluator evaluates 'keypoints', not 'bbox'"):
        Evaluator(protocol="crowdpose", iou_type="bbox")
    assert Evaluator(protocol="crowdpose").params.iou_type == "keypoints"  # its only iou type, by default
    assert ev.num_images == 0


# --------------------------------------------------------------------------------------
# a protocol without streaming


def test_a_protocol_without_streaming_names_protocol_and_capability():
    with pytest.raises(
        InputError, match=r"protocol 'openimages' does not support streaming evaluation \(Evaluator, Dask\)"
    ):
        Evaluator(protocol="openimages")


# --------------------------------------------------------------------------------------
# dask (its local scheduler: the tasks are those a cluster runs)


def test_dask_on_streamed_protocols_equals_evaluate():
    pytest.importorskip("dask", reason="the dask extra is not installed (pip install 'deteval[dask]')")
    import deteval.evaluator.dask as ddask

    for protocol in ("voc07", "voc10"):
        dets, gt = voc_data(True)
        ref = deteval.evaluate(dets, gt, protocol=protocol)
        for n in (1, 3, 7):
            assert_same(ddask.evaluate(dets, gt, protocol=protocol, npartitions=n, client=False), ref)
        shards = [dets_gt for dets_gt in _shards(dets, gt, 4)]
        assert_same(ddask.evaluate_shards(shards, protocol=protocol, client=False), ref)
    dets, gt = dota_data()
    ref = deteval.evaluate(dets, gt, protocol="dota")
    assert_same(ddask.evaluate(dets, gt, protocol="dota", npartitions=3, client=False), ref)
    preds, gt_json = crowdpose_files(True)
    ref = deteval.evaluate(preds, gt_json, protocol="crowdpose", iou_type="keypoints")
    shards = []
    for part in np.array_split(np.array(sorted(gt_json["images"], key=lambda r: r["id"]), dtype=object), 3):
        ids = {r["id"] for r in part}
        shard_gt = dict(
            gt_json, images=list(part), annotations=[a for a in gt_json["annotations"] if a["image_id"] in ids]
        )
        shards.append(([d for d in preds if d["image_id"] in ids], shard_gt))
    assert_same(ddask.evaluate_shards(shards, protocol="crowdpose", iou_type="keypoints", client=False), ref)
    with pytest.raises(
        InputError, match=r"protocol 'openimages' does not support streaming evaluation \(Evaluator, Dask\)"
    ):
        ddask.evaluate(dets, gt, protocol="openimages", client=False)


def _shards(dets: Detections, gt: GroundTruth, n: int) -> list:
    from deteval.types import images_between

    bounds = np.linspace(0, len(gt.images), n + 1).round().astype(int)
    return [images_between(dets, gt, int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]
