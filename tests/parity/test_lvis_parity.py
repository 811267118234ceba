"""LVIS parity: deteval's ``--protocol lvis`` == lvis-api 0.5.3, every stat with ``==`` and the precision
and recall arrays bit for bit, on lvis-api's own 100-image ground truth (bbox and segm) and on generated
federated datasets.

The generated datasets (:func:`lvis_cases`) hold what the federated rules turn on: categories of each
frequency and categories with no ground truth; per-image ``neg_category_ids`` and
``not_exhaustive_category_ids`` (overlapping the image's positives or not); more results per image than
the cut (300, or a small cut set through the preset to reach it cheaply, which lvis-api's
``LVISResults(max_dets=)`` takes too), with scores on a coarse grid so that ties at the cut are common
and results in shuffled file order; zero-area ground truth and results (never evaluated), areas on the
small/medium/large bounds, tiny boxes, a truthy ``ignore``, an ``iscrowd`` (not read by lvis-api),
annotation id 0; bbox and segm (polygon ground truth; box and polygon results, or RLE results without
boxes: the mask branch, empty masks included).
"""

from __future__ import annotations

import copy
import random

import pycocotools.mask as mask_utils
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.lvis_oracle import assert_same, fixture_files, lvis_api, run_lvis, with_unknown_categories
from support.warned import oddities_warned

import deteval


@pytest.fixture(scope="module")
def lvis100(tmp_path_factory):
    return fixture_files(tmp_path_factory.mktemp("lvis100"))


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_lvis100_fixture(lvis100, iou_type):
    gt, dets = lvis100["lvis_val_100"], lvis100[f"dets_{iou_type}"]
    ev = run_lvis(gt, dets, iou_type)
    res = deteval.evaluate(dets, gt, protocol="lvis", iou_type=iou_type)
    assert_same(res, ev)
    # the fixture reaches what it was made for: every frequency scored, images over the cut
    assert all(ev.results[k] > 0 for k in ("APr", "APc", "APf"))


# --------------------------------------------------------------------------------------------
# generated federated datasets

_SCORES = (0.1, 0.25, 0.5, 0.5, 0.75, 0.9)  # coarse: ties within and across images


def _box(rng: random.Random, size: int) -> list[float]:
    kind = rng.random()
    if kind < 0.1:  # boundary areas: 32x32 = 1024, 96x96 = 9216
        w = h = rng.choice([32, 96])
    elif kind < 0.2:  # degenerate or tiny
        w, h = rng.choice([(0, 5), (3, 0), (1, 1), (0.5, 2)])
    else:
        w, h = rng.randint(1, size), rng.randint(1, size)
    return [float(rng.randint(0, size // 2)), float(rng.randint(0, size // 2)), float(w), float(h)]


def _poly(box: list[float]) -> list[list[float]]:
    x, y, w, h = box
    return [[x, y, x + w, y, x + w, y + h, x, y + h]]


def _make_case(seed: int, n_img: int, n_cat: int, max_dets: int, iou_type: str) -> tuple[dict, list, int]:
    rng = random.Random(seed)
    size = rng.choice([40, 120])
    cat_ids = sorted(rng.sample(range(1, 3 * n_cat + 1), n_cat))
    categories = [{"id": c, "name": f"c{c}", "frequency": rng.choice("rcf")} for c in cat_ids]
    images, anns, dets = [], [], []
    next_id = rng.choice([0, 1])  # annotation id 0: a match to it reads as unmatched, as in pycocotools
    for img_id in range(1, n_img + 1):
        neg = sorted(rng.sample(cat_ids, rng.randint(0, n_cat)))
        nel = sorted(rng.sample(cat_ids, rng.randint(0, min(2, n_cat))))
        images.append({"id": img_id, "height": size, "width": size, "neg_category_ids": neg,
                       "not_exhaustive_category_ids": nel})  # fmt: skip
        gts = []
        for _ in range(rng.randint(0, 5)):
            box = _box(rng, size)
            area = rng.choice([box[2] * box[3]] * 4 + [0.0, 1024.0, 9216.0, 1024.5, 9215.5])
            ann = {"id": next_id, "image_id": img_id, "category_id": rng.choice(cat_ids), "bbox": box, "area": area,
                   "segmentation": _poly(box)}  # fmt: skip
            if rng.random() < 0.1:
                ann["ignore"] = rng.choice([0, 1])
            if rng.random() < 0.1:
                ann["iscrowd"] = 1
            next_id += 1
            gts.append(ann)
        anns += gts
        many = rng.random() < 0.3
        for _ in range(rng.randint(max_dets + 1, 2 * max_dets + 2) if many else rng.randint(0, 6)):
            if gts and rng.random() < 0.6:  # near a ground truth, of its category or not
                g = rng.choice(gts)
                box = [v + rng.choice([0, 0, 1, -1, 2]) for v in g["bbox"]]
                box[2], box[3] = max(box[2], 0.0), max(box[3], 0.0)
                cat = g["category_id"] if rng.random() < 0.8 else rng.choice(cat_ids)
            else:
                box, cat = _box(rng, size), rng.choice(cat_ids)
            score = rng.choice(_SCORES) if rng.random() < 0.7 else round(rng.random(), 3)
            det = {"image_id": img_id, "category_id": cat, "bbox": box, "score": score}
            if iou_type == "segm" and rng.random() < 0.5:
                det["segmentation"] = _poly([box[0] + 1, box[1], box[2], max(box[3] - 1, 0)])
            dets.append(det)
    if not dets:  # lvis-api reads the first result: it needs one
        dets.append({"image_id": 1, "category_id": cat_ids[0], "bbox": [0.0, 0.0, 4.0, 4.0], "score": 0.5})
    if iou_type == "segm" and rng.random() < 0.5:  # LVISResults' mask branch: RLE, area of the mask, no box
        for det in dets:
            poly = det.pop("segmentation", None) or _poly(det["bbox"])
            rle = mask_utils.merge(mask_utils.frPyObjects(poly, size, size))
            det["segmentation"] = {"size": rle["size"], "counts": rle["counts"].decode("ascii")}
            del det["bbox"]
    rng.shuffle(dets)
    return {"images": images, "annotations": anns, "categories": categories}, dets, max_dets


@st.composite
def lvis_cases(draw):
    iou_type = draw(st.sampled_from(["bbox", "bbox", "segm"]))
    max_dets = draw(st.sampled_from([1, 2, 3, 5, 300] if iou_type == "bbox" else [1, 2, 5]))
    return _make_case(
        draw(st.integers(0, 2**32 - 1)),
        draw(st.integers(1, 4 if max_dets < 300 else 2)),
        draw(st.integers(1, 6)),
        max_dets,
        iou_type,
    ), iou_type


@given(lvis_cases())
def test_lvis_generated(case):
    (gt, dets, max_dets), iou_type = case
    gt_before, dets_before = copy.deepcopy(gt), copy.deepcopy(dets)
    ev = run_lvis(gt, dets, iou_type, max_dets=max_dets)
    with oddities_warned():  # generated mask results may lack a segmentation: scored as lvis-api scores them
        res = deteval.evaluate(dets, gt, protocol="lvis", iou_type=iou_type, config={"max_dets": max_dets})
    assert gt == gt_before and dets == dets_before, "inputs were modified"
    assert_same(res, ev)


@pytest.mark.slow
def test_per_class_rows_are_lvis_api_on_that_category_alone(lvis100):
    """A category's row is lvis-api's results with ``params.cat_ids`` set to that category alone (a
    category's evaluation does not depend on the others once results are cut per image)."""
    lvis = lvis_api()
    gt, dets = lvis100["lvis_val_100"], lvis100["dets_bbox"]
    res = deteval.evaluate(dets, gt, protocol="lvis")
    rows = {r["category_id"]: r for r in res.per_class}
    gt_obj = lvis.LVIS(gt)
    results = run_lvis(gt, dets).lvis_dt
    picked = sorted(rows, key=lambda c: (-rows[c]["num_gt"], c))[:6] + [c for c in rows if rows[c]["num_gt"] == 0][:2]
    for cat in picked:
        ev = lvis.LVISEval(gt_obj, results, "bbox")
        ev.params.cat_ids = [cat]
        ev.run()
        for key, value in ev.results.items():
            if key not in ("APr", "APc", "APf"):
                assert rows[cat][key] == value, (cat, key, rows[cat][key], value)


# --------------------------------------------------------------------------------------------
# results of categories not in the ground truth: counted in their image's cut, then dropped


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_lvis100_unknown_categories_count_in_the_cut(lvis100, tmp_path, iou_type):
    import json

    gt = lvis100["lvis_val_100"]
    dets = json.loads(open(lvis100[f"dets_{iou_type}"]).read())
    mixed, n_busy = with_unknown_categories(dets, seed=7)
    assert n_busy >= 3  # the fixture has images at the cut
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(mixed))
    ev = run_lvis(gt, str(path), iou_type)
    with pytest.warns(deteval.DetevalWarning, match="category_id is not in the ground truth"):
        res = deteval.evaluate(str(path), gt, protocol="lvis", iou_type=iou_type)
    assert_same(res, ev)
    # in memory too (a list of records)
    with pytest.warns(deteval.DetevalWarning, match="category_id is not in the ground truth"):
        assert deteval.evaluate(mixed, gt, protocol="lvis", iou_type=iou_type).stats == res.stats
    # the unknown results moved the numbers: dropped before the cut, they would not
    plain = deteval.evaluate(lvis100[f"dets_{iou_type}"], gt, protocol="lvis", iou_type=iou_type)
    assert plain.stats["AP"] != res.stats["AP"]


@given(lvis_cases(), st.integers(0, 2**32 - 1))
def test_lvis_generated_unknown_categories(case, seed):
    (gt, dets, max_dets), iou_type = case
    mixed, _ = with_unknown_categories(dets, seed, per_image=max_dets + 1, cut=max_dets)
    ev = run_lvis(gt, mixed, iou_type, max_dets=max_dets)
    with oddities_warned() as caught:  # generated mask results may lack a segmentation: warned too
        res = deteval.evaluate(mixed, gt, protocol="lvis", iou_type=iou_type, config={"max_dets": max_dets})
    assert any("category_id is not in the ground truth" in str(w.message) for w in caught)
    assert_same(res, ev)
