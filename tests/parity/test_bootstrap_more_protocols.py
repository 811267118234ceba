"""Bootstrap, slices and compare for the crowdpose, dota and openimages protocols: every replicate, slice and
paired replicate equals ``deteval.evaluate()`` on the materialised dataset (``==``, every stat).

A replicate's images are materialised by the rule of :mod:`deteval.analysis.intervals`: image ``idx[j]`` becomes the
``j``-th image, with copies of its ground truth and detections. COCO-style data (crowdpose) renumbers the
images ``1..n`` in draw order (``tests/support/resampled.py``), the tie order of its accumulation; dota and
openimages break score ties by row, so their copies' rows stand draw after draw, each image's in their
original order (openimages: the ground truth's rows too, its group-of boxes rank as rows). A slice is its
images alone, rows in their original order. The data is generated with tied scores, empty images, classes
without ground truth or detections, difficult (dota) and group-of (openimages) boxes, and lists of images
that repeat and leave images out, besides the bootstrap's own draws.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import DATA_DIR
from hypothesis import given, settings
from hypothesis import strategies as st
from support.examples import examples
from support.resampled import file_draws, materialise

import deteval
from deteval.analysis.intervals import draws_of, stats_of_draws
from deteval.analysis.slices import slice_stats
from deteval.io.openimages import OpenImagesGroundTruth
from deteval.types import Detections, GroundTruth, IdTable

EXAMPLES = settings(max_examples=examples(100), deadline=None)
TIED = (0.25, 0.5, 0.5, 1.0)


def _stats(result) -> list[float]:
    return [*result.stats.values(), *(getattr(result, "extra_stats", {}) or {}).values()]


def _check_lists(result, draws, evaluate_images) -> None:
    """Each list of images (as a replicate, then each image once as a slice) == evaluating those images."""
    reps = stats_of_draws(result, [np.asarray(d, np.int64) for d in draws])
    for row, d in zip(reps, draws):
        assert row.tolist() == _stats(evaluate_images(list(d), True)), d
    ids = result.replay.image_ids
    slices = {f"s{i}": [ids[j] for j in d] for i, d in enumerate(draws)}  # repeats count once
    got = slice_stats(result, slices)
    for i, d in enumerate(draws):
        assert list(got[f"s{i}"].values()) == _stats(evaluate_images(sorted(set(d)), False)), d


# --------------------------------------------------------------------------------------------------------------
# crowdpose: COCO keypoints data with each image's crowdIndex

K = 14
CROWD_INDEX = (0.0, 0.1, 0.2, 0.5, 0.8, 0.95)


@st.composite
def crowd_cases(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_images = draw(st.integers(1, 5))
    ids = draw(st.lists(st.integers(1, 60), min_size=n_images, max_size=n_images, unique=True))
    images = [{"id": i, "crowdIndex": draw(st.sampled_from(CROWD_INDEX))} for i in ids]
    cats = draw(st.sampled_from([[1], [1, 2, 3]]))  # 3: never given ground truth
    anns = []
    for im in images:
        for _ in range(draw(st.integers(0, 3))):
            x, y, w, h = rng.uniform(0, 100, 2).tolist() + rng.uniform(10, 60, 2).tolist()
            vis = rng.choice([0, 2, 2], K)
            kx, ky = rng.uniform(x, x + w, K), rng.uniform(y, y + h, K)
            anns.append({"id": len(anns) + 1, "image_id": im["id"], "category_id": draw(st.sampled_from(cats[:2])),
                         "bbox": [x, y, w, h], "area": w * h, "iscrowd": int(draw(st.integers(0, 7)) == 0),
                         "num_keypoints": int((vis > 0).sum()),
                         "keypoints": [float(v) for j in range(K) for v in (kx[j], ky[j], vis[j])]})  # fmt: skip
    preds = []
    for im in images:
        here = [a for a in anns if a["image_id"] == im["id"]]
        for _ in range(draw(st.integers(0, 5))):
            g = here[int(rng.integers(len(here)))] if here and draw(st.booleans()) else None
            if g is not None:
                kp = np.array(g["keypoints"], float).reshape(K, 3)
                kp[:, :2] += rng.uniform(-draw(st.sampled_from([0, 2, 8])), 2, (K, 2))
                cat = g["category_id"]
            else:
                kp = np.column_stack([rng.uniform(0, 160, (K, 2)), np.ones(K)])
                cat = draw(st.sampled_from(cats))
            kp[:, 2] = draw(st.sampled_from([1.0, 0.5, 0.0]))  # 0: dropped before the max-dets cut
            score = draw(st.sampled_from(TIED)) if draw(st.booleans()) else float(rng.uniform(0, 1))
            preds.append({"image_id": im["id"], "category_id": cat, "keypoints": kp.ravel().tolist(), "score": score})
    categories = [{"id": c, "name": f"person{c}", "keypoints": [str(j) for j in range(K)]} for c in cats]
    draws = draw(st.lists(st.lists(st.integers(0, n_images - 1), min_size=1, max_size=2 * n_images), min_size=1,
                          max_size=3))  # fmt: skip
    return {"images": images, "annotations": anns, "categories": categories}, preds, draws


def _crowd(preds, gt):
    return deteval.evaluate(preds, gt, protocol="crowdpose", iou_type="keypoints")


def _crowd_images(gt, preds):
    """The dataset of dense image indices (id order, as the replay numbers them)."""
    order = sorted(range(len(gt["images"])), key=lambda i: gt["images"][i]["id"])

    def evaluate_images(dense: list[int], repeated: bool):
        idx = [order[i] for i in dense]
        if repeated:
            return _crowd(*reversed(materialise(gt, preds, idx)))
        keep = {gt["images"][i]["id"] for i in idx}
        sub = {**gt, "images": [im for im in gt["images"] if im["id"] in keep],
               "annotations": [a for a in gt["annotations"] if a["image_id"] in keep]}  # fmt: skip
        return _crowd([p for p in preds if p["image_id"] in keep], sub)

    return evaluate_images


@EXAMPLES
@given(crowd_cases())
def test_crowdpose_replicates_and_slices(case):
    gt, preds, draws = case
    _check_lists(_crowd(preds, gt), draws, _crowd_images(gt, preds))


def test_crowdpose_bucket_ties_break_by_draw():
    """Two easy images, a true positive on one and a false positive on the other at one score: a bucket's
    copies stand in draw order, so drawn [1, 0] the false positive ranks first (AP_easy below 1)."""
    kpts = [float(v) for j in range(K) for v in (10 + 3 * j, 12 + 2 * j, 2)]
    images = [{"id": 1, "crowdIndex": 0.1}, {"id": 2, "crowdIndex": 0.1}]
    anns = [{"id": i, "image_id": i, "category_id": 1, "bbox": [5.0, 5.0, 60.0, 50.0], "area": 3000.0, "iscrowd": 0,
             "num_keypoints": K, "keypoints": kpts} for i in (1, 2)]  # fmt: skip
    gt = {"images": images, "annotations": anns, "categories": [{"id": 1, "name": "person"}]}
    far = [v + 300 if j % 3 != 2 else v for j, v in enumerate(kpts)]
    preds = [{"image_id": 1, "category_id": 1, "keypoints": kpts, "score": 0.5},
             {"image_id": 2, "category_id": 1, "keypoints": far, "score": 0.5}]  # fmt: skip
    result = _crowd(preds, gt)
    (row,) = stats_of_draws(result, [np.array([1, 0])])
    alone = _crowd(*reversed(materialise(gt, preds, [1, 0])))
    assert row.tolist() == list(alone.stats.values())
    assert alone.stats["AP_easy"] < result.stats["AP_easy"]


CROWD = DATA_DIR / "crowdpose"


def _crowd_example(seed: int | None = None):
    gt = json.loads((CROWD / "example_crowdpose_val.json").read_text())
    preds = json.loads((CROWD / "example_crowdpose_preds.json").read_text())
    if seed is not None:
        rng = np.random.default_rng(seed)
        for p in preds:
            p["score"] = float(np.round(rng.uniform(0, 1), 1))  # ties across images
    return gt, preds


def test_crowdpose_bootstrap_follows_the_documented_draws():
    gt, preds = _crowd_example(seed=3)
    result = _crowd(preds, gt)
    boot = deteval.bootstrap(result, n=6, seed=5)
    assert list(boot.names) == list(result.stats) and "AP_hard" in boot.names
    for row, idx in zip(boot.replicates, file_draws(len(gt["images"]), 6, 5)):
        assert row.tolist() == list(_crowd(*reversed(materialise(gt, preds, idx))).stats.values())


def test_crowdpose_compare_pairs_the_replicates():
    gt, preds = _crowd_example()
    _, other = _crowd_example(seed=1)
    cmp = deteval.compare(preds, other, gt, n=8, seed=2, protocol="crowdpose", iou_type="keypoints")
    a, b = _crowd(preds, gt), _crowd(other, gt)
    assert np.array_equal(cmp.replicates_a, deteval.bootstrap(a, n=8, seed=2).replicates)
    assert np.array_equal(cmp.replicates_b, deteval.bootstrap(b, n=8, seed=2).replicates)
    assert cmp.delta == {k: b.stats[k] - a.stats[k] for k in a.stats}
    same = deteval.compare(a, a, n=5)
    assert set(same.delta.values()) == {0.0} and set(same.p_values.values()) == {1.0}


# --------------------------------------------------------------------------------------------------------------
# dota: quadrilaterals on VOC's path; a class without positives scores AP 0 and counts in the mean


def _quad(x: float, y: float, w: float, h: float, turn: int) -> tuple[float, ...]:
    pts = [(x, y), (x + w, y), (x + w, y + h), (x, y + h)]
    pts = pts[turn:] + pts[:turn]  # the same box from another first vertex
    return tuple(float(v) for p in pts for v in p)


def _dota_containers(gts, dets, n_images: int, n_cls: int) -> tuple[Detections, GroundTruth]:
    gt = GroundTruth(
        image=np.array([g[0] for g in gts], np.int32),
        category=np.array([g[1] for g in gts], np.int32),
        boxes=np.array([g[2] for g in gts], float).reshape(-1, 8),
        area=np.zeros(len(gts)),
        crowd=np.zeros(len(gts), bool),
        ignore=np.zeros(len(gts), bool),
        difficult=np.array([g[3] for g in gts], bool),
        ann_id=np.arange(1, len(gts) + 1),
        images=IdTable(np.arange(1, n_images + 1, dtype=np.int64)),
        categories=IdTable(np.arange(n_cls, dtype=np.int64), names=[f"c{k}" for k in range(n_cls)]),
        box_format="quad",
    )
    dt = Detections(
        image=np.array([d[0] for d in dets], np.int32),
        category=np.array([d[1] for d in dets], np.int32),
        boxes=np.array([d[3] for d in dets], float).reshape(-1, 8),
        score=np.array([d[2] for d in dets], float),
        area=np.zeros(len(dets)),
        box_format="quad",
    )
    return dt, gt


def _rows_of(rows, images: list[int], repeated: bool = True) -> list:
    """The rows of ``images`` (image indices), image ``images[j]`` renumbered ``j``. ``repeated`` (a replicate,
    repeats allowed): draw after draw, each image's rows in their original order; else (a slice, ascending
    indices, each once) the rows in their original order."""
    if not repeated:
        new = {i: j for j, i in enumerate(images)}
        return [(new[r[0]], *r[1:]) for r in rows if r[0] in new]
    return [(j, *r[1:]) for j, i in enumerate(images) for r in rows if r[0] == i]


_side = st.integers(1, 6)


@st.composite
def dota_cases(draw):
    n_images, n_cls = draw(st.integers(1, 5)), 3  # class 2: difficult ground truth at most, or nothing
    gts = []
    for _ in range(draw(st.integers(0, 8))):
        c = draw(st.integers(0, 2))
        box = _quad(draw(st.integers(0, 8)), draw(st.integers(0, 8)), draw(_side), draw(_side), draw(st.integers(0, 3)))
        gts.append((draw(st.integers(0, n_images - 1)), c, box, c == 2 or draw(st.integers(0, 5)) == 0))
    dets = []
    for _ in range(draw(st.integers(0, 12))):
        score = draw(st.sampled_from(TIED))
        if gts and draw(st.booleans()):  # on a ground truth, shifted: true positives, duplicates, near misses
            im, c, box, _ = gts[draw(st.integers(0, len(gts) - 1))]
            sh = draw(st.sampled_from([0.0, 0.0, 1.0, 2.5]))
            dets.append((im, c, score, tuple(v + sh for v in box)))
        else:
            box = _quad(draw(st.integers(0, 8)), draw(st.integers(0, 8)), draw(_side), draw(_side), 0)
            dets.append((draw(st.integers(0, n_images - 1)), draw(st.integers(0, 2)), score, box))
    draws = draw(st.lists(st.lists(st.integers(0, n_images - 1), min_size=1, max_size=2 * n_images), min_size=1,
                          max_size=3))  # fmt: skip
    return n_images, n_cls, gts, dets, draws


@EXAMPLES
@given(case=dota_cases(), options=st.sampled_from([{}, {"integrator": "all_points"}, {"iou_thrs": [0.3, 0.7]}]))
def test_dota_replicates_and_slices(case, options):
    n_images, n_cls, gts, dets, draws = case
    result = deteval.evaluate(*_dota_containers(gts, dets, n_images, n_cls), protocol="dota", **options)

    def evaluate_images(images: list[int], repeated: bool):
        g, d = _rows_of(gts, images, repeated), _rows_of(dets, images, repeated)
        return deteval.evaluate(*_dota_containers(g, d, len(images), n_cls), protocol="dota", **options)

    _check_lists(result, draws, evaluate_images)


@pytest.mark.filterwarnings("ignore:.*(self-intersecting|ignored detections)")
def test_dota_files_bootstrap_and_compare():
    dota = DATA_DIR / "dota"
    with pytest.warns(deteval.DetevalWarning, match="does not name"):  # the fixture's helicopter file
        result = deteval.evaluate(str(dota / "dets"), str(dota / "gt"), protocol="dota")
    assert result.stats["mAP"] == list(stats_of_draws(result, [np.arange(len(result.replay.image_ids))])[0])[0]
    boot = deteval.bootstrap(result, n=30, seed=1)
    assert np.array_equal(boot.replicates, stats_of_draws(result, draws_of(result, 30, 1)))
    cmp = deteval.compare(result, result, n=10)
    assert set(cmp.delta.values()) == {0.0} and set(cmp.p_values.values()) == {1.0}


# --------------------------------------------------------------------------------------------------------------
# openimages: group-of boxes (weighted TPs), verified labels; ties rank detections, then group-of boxes, by row


def _oi_containers(gts, dets, verified, n_images: int, n_cls: int) -> tuple[Detections, OpenImagesGroundTruth]:
    """Images ``im00000 ...`` (id order = index order), classes ``/m/c0 ...``; rows in the order given."""
    n = len(gts)
    gt = OpenImagesGroundTruth(
        image=np.array([g[0] for g in gts], np.int32),
        category=np.array([g[1] for g in gts], np.int32),
        boxes=np.array([g[3] for g in gts], float).reshape(-1, 4),
        area=np.zeros(n),
        crowd=np.zeros(n, bool),
        ignore=np.zeros(n, bool),
        difficult=np.zeros(n, bool),
        ann_id=np.arange(n, dtype=np.int64),
        images=IdTable(np.array([f"im{i:05d}" for i in range(n_images)])),
        categories=IdTable(np.array([f"/m/c{k}" for k in range(n_cls)])),
        box_format="xyxy",
        group_of=np.array([g[2] for g in gts], bool),
        verified=np.unique(np.array([v[0] * n_cls + v[1] for v in verified], np.int64)),
    )
    dt = Detections(
        image=np.array([d[0] for d in dets], np.int32),
        category=np.array([d[1] for d in dets], np.int32),
        boxes=np.array([d[3] for d in dets], float).reshape(-1, 4),
        score=np.array([d[2] for d in dets], float),
        area=np.zeros(len(dets)),
        box_format="xyxy",
    )
    return dt, gt


_eighth = st.integers(0, 6).map(lambda v: v / 8)


@st.composite
def openimages_cases(draw):
    n_images, n_cls = draw(st.integers(1, 5)), 3  # class 2: verified on some images at most, never boxed

    def box():
        x, y = draw(_eighth), draw(_eighth)
        return (x, y, x + draw(st.sampled_from([0.125, 0.25, 0.5])), y + draw(st.sampled_from([0.125, 0.25])))

    gts = [(draw(st.integers(0, n_images - 1)), draw(st.integers(0, 1)), draw(st.integers(0, 3)) == 0, box())
           for _ in range(draw(st.integers(0, 7)))]  # fmt: skip
    verified = [(draw(st.integers(0, n_images - 1)), draw(st.integers(0, 2))) for _ in range(draw(st.integers(0, 4)))]
    dets = []
    for _ in range(draw(st.integers(0, 12))):
        score = draw(st.sampled_from((0.0, *TIED)))
        if gts and draw(st.booleans()):  # on or inside a ground truth box: TPs, duplicates, absorbed
            im, c, _, (x1, y1, x2, y2) = gts[draw(st.integers(0, len(gts) - 1))]
            sh = draw(st.sampled_from([0.0, 0.0, 0.0625]))
            dets.append((im, c, score, (x1 + sh, y1, x2, y2 + sh)))
        else:
            dets.append((draw(st.integers(0, n_images - 1)), draw(st.integers(0, 2)), score, box()))
    draws = draw(st.lists(st.lists(st.integers(0, n_images - 1), min_size=1, max_size=2 * n_images), min_size=1,
                          max_size=3))  # fmt: skip
    return n_images, n_cls, gts, verified, dets, draws


@pytest.mark.slow
@EXAMPLES
@given(case=openimages_cases(), weight=st.sampled_from([1.0, 0.5, 0.0]))
def test_openimages_replicates_and_slices(case, weight):
    n_images, n_cls, gts, verified, dets, draws = case
    containers = _oi_containers(gts, dets, verified, n_images, n_cls)
    result = deteval.evaluate(*containers, protocol="openimages", group_of_weight=weight)

    def evaluate_images(images: list[int], repeated: bool):
        g, d, v = (_rows_of(rows, images, repeated) for rows in (gts, dets, verified))
        alone = _oi_containers(g, d, v, len(images), n_cls)
        return deteval.evaluate(*alone, protocol="openimages", group_of_weight=weight)

    _check_lists(result, draws, evaluate_images)


def test_openimages_ties_rank_detections_then_group_of_boxes_by_draw():
    """Two images, each a group-of box absorbing a detection at score 0.5 and a false positive at 0.5: drawn
    [1, 0, 1], the materialised ranking at 0.5 is FP FP FP (draw order), then the three group-of TPs."""
    gts = [(0, 0, True, (0.0, 0.0, 0.5, 0.5)), (1, 0, True, (0.0, 0.0, 0.5, 0.5))]
    dets = [(i, 0, 0.5, b) for i in (0, 1) for b in ((0.1, 0.1, 0.2, 0.2), (0.6, 0.6, 0.9, 0.9))]
    result = deteval.evaluate(*_oi_containers(gts, dets, [], 2, 1), protocol="openimages")
    (row,) = stats_of_draws(result, [np.array([1, 0, 1])])
    alone = deteval.evaluate(*_oi_containers(_rows_of(gts, [1, 0, 1]), _rows_of(dets, [1, 0, 1]), [], 3, 1),
                             protocol="openimages")  # fmt: skip
    assert row.tolist() == [alone.stats["mAP"]] and 0 < row[0] < 1


def test_openimages_compare_pairs_the_replicates():
    rng = np.random.default_rng(4)
    gts = [(int(rng.integers(8)), int(rng.integers(3)), bool(rng.random() < 0.3), (x, x, x + 0.25, x + 0.25))
           for x in rng.integers(0, 6, 20) / 8]  # fmt: skip
    dets = [(g[0], g[1], float(rng.integers(0, 4)) / 4, g[3]) for g in gts if rng.random() < 0.8]
    dets += [(int(rng.integers(8)), int(rng.integers(3)), float(rng.random()), (0.7, 0.7, 0.9, 0.9)) for _ in range(9)]
    a = deteval.evaluate(*_oi_containers(gts, dets, [], 8, 3), protocol="openimages")
    b = deteval.evaluate(*_oi_containers(gts, dets[::2], [], 8, 3), protocol="openimages")
    cmp = deteval.compare(a, b, n=12, seed=6)
    assert np.array_equal(cmp.replicates_a, deteval.bootstrap(a, n=12, seed=6).replicates)
    assert np.array_equal(cmp.replicates_b, deteval.bootstrap(b, n=12, seed=6).replicates)
    assert cmp.delta["mAP"] == b.stats["mAP"] - a.stats["mAP"]
    for row, idx in zip(cmp.replicates_b, file_draws(8, 12, 6)):
        alone = _oi_containers(_rows_of(gts, list(idx)), _rows_of(dets[::2], list(idx)), [], 8, 3)
        assert row.tolist() == [deteval.evaluate(*alone, protocol="openimages").stats["mAP"]]


# --------------------------------------------------------------------------------------------------------------
# the door: a protocol without replay refuses with one InputError naming it and the capability


def test_a_protocol_without_replay_refuses(monkeypatch):
    from deteval.protocols.base import Protocol
    from deteval.protocols.openimages import OpenImagesProtocol

    result = deteval.evaluate(*_oi_containers([(0, 0, False, (0, 0, 0.5, 0.5))], [], [], 1, 1), protocol="openimages")
    monkeypatch.setattr(OpenImagesProtocol, "replay", Protocol.replay)  # the base's: no replay
    rule = r"^protocol: protocol 'openimages' does not support bootstrap, compare and slices$"
    with pytest.raises(deteval.InputError, match=rule):
        deteval.bootstrap(result, n=2)
    with pytest.raises(deteval.InputError, match=rule):
        deteval.compare(result, result, n=2)
    with pytest.raises(deteval.InputError, match=rule):
        slice_stats(result, {"a": ["im00000"]})


def test_a_result_without_its_replay_says_so():
    gt, preds = _crowd_example()
    result = _crowd(preds, gt)
    result.replay = None  # as the streaming Evaluator's results
    with pytest.raises(deteval.InputError, match=r"crowdpose results: this result keeps none \(evaluate with"):
        deteval.bootstrap(result, n=2)
