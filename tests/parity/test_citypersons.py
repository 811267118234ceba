"""CityPersons MR^-2 (``--protocol citypersons``) against an independent oracle of the dataset authors'
``eval_MR_multisetup.py`` (tests/support/citypersons_oracle.py), on generated data built for its quirks,
and hand-computed cases for the quirks themselves."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.citypersons_oracle import citypersons_mr
from support.pedestrian_data import citypersons_case

import deteval
from deteval import protocols
from deteval.cli import main
from deteval.errors import InputError

SETUPS = ["Reasonable", "Reasonable_small", "Reasonable_occ=heavy", "All"]


def _mr(gt, res):
    result = deteval.evaluate(res, gt, protocol="citypersons")
    assert list(result.stats) == SETUPS
    return result


@pytest.mark.filterwarnings("ignore::deteval.DetevalWarning")
@pytest.mark.parametrize("seed", range(30))
def test_generated_equals_oracle(seed):
    gt, res = citypersons_case(seed, n_images=[3, 12, 25][seed % 3], scale=[4, 8, 16][seed % 3])
    assert list(_mr(gt, res).stats.values()) == citypersons_mr(gt, res)


def _gt(anns, n_images=1):
    images = [{"id": i + 1} for i in range(n_images)]
    full = []
    for k, a in enumerate(anns):
        full.append({"id": k + 1, "image_id": 1, "category_id": 1, "height": a["bbox"][3], "vis_ratio": 1.0, **a})
    return {"images": images, "categories": [{"id": 1, "name": "pedestrian"}], "annotations": full}


def _det(box, score, image=1):
    return {"image_id": image, "category_id": 1, "bbox": box, "score": score}


def test_perfect_detector_and_setup_without_positives():
    gt = _gt([{"bbox": [0, 0, 40, 100]}, {"bbox": [200, 0, 40, 120]}])
    res = [_det([0, 0, 40, 100], 0.9), _det([200, 0, 40, 120], 0.8)]
    stats = _mr(gt, res).stats
    # both are Reasonable (height >= 50, visible); none is 50..75 tall; none heavily occluded
    assert stats == {"Reasonable": 0.0, "Reasonable_small": -1.0, "Reasonable_occ=heavy": -1.0, "All": 0.0}
    assert list(stats.values()) == citypersons_mr(gt, res)


def test_detections_too_short_and_empty_results():
    gt = _gt([{"bbox": [0, 0, 40, 100]}])
    # 15.99 < 20 / 1.25: filtered out in every setup; no detection left: recall 0 at every point, MR 1
    res = [_det([0, 0, 40, 15.99], 0.9)]
    assert _mr(gt, res).stats["All"] == 1.0
    assert _mr(gt, res).stats["Reasonable"] == 1.0
    assert _mr(gt, []).stats == {"Reasonable": 1.0, "Reasonable_small": -1.0, "Reasonable_occ=heavy": -1.0,
                                 "All": 1.0}


def test_gt_id_zero_counts_a_match_as_a_false_positive():
    gt = _gt([{"bbox": [0, 0, 40, 100]}])
    res = [_det([0, 0, 40, 100], 0.9)]
    assert _mr(gt, res).stats["Reasonable"] == 0.0
    gt["annotations"][0]["id"] = 0
    assert _mr(gt, res).stats["Reasonable"] == 1.0
    assert _mr(gt, res).stats["Reasonable"] == citypersons_mr(gt, res)[0]


def test_iou_and_ioa_exactly_half():
    # IoU 4000 / 8000 = 0.5: a match (>= 0.5)
    gt = _gt([{"bbox": [0, 0, 40, 200]}])
    assert _mr(gt, [_det([0, 0, 40, 100], 0.9)]).stats["Reasonable"] == 0.0
    # intersection over the detection's area 0.5 with an ignore region: dropped, not a false positive
    gt = _gt([{"bbox": [500, 0, 40, 100]}, {"bbox": [0, 0, 100, 200], "ignore": 1}])
    res = [_det([50, 0, 100, 200], 0.95), _det([500, 0, 40, 100], 0.5)]
    row = _mr(gt, res).per_class[0]
    assert row["ndet"] == 1 and row["MR"] == 0.0
    assert [r["MR"] for r in _mr(gt, res).per_class] == citypersons_mr(gt, res)


def test_max_dets_truncates_before_the_height_filter():
    # 1,000 higher-scored detections inside an ignore region take the image's quota: the true one is cut
    gt = _gt([{"bbox": [500, 0, 40, 100]}, {"bbox": [0, 0, 300, 300], "ignore": 1}])
    res = [_det([0, 0, 40, 100], 0.9) for _ in range(1000)] + [_det([500, 0, 40, 100], 0.5)]
    assert _mr(gt, res).stats["Reasonable"] == 1.0
    assert _mr(gt, res[1:]).stats["Reasonable"] == 0.0
    assert list(_mr(gt, res).stats.values()) == citypersons_mr(gt, res)


def test_literal_fppi_points_and_the_negative_index():
    # 2249 images: the 40th false positive has FPPI 40/2249 = 0.0177857, <= the literal 0.0178 but above
    # 10 ** -1.75 = 0.0177828; the true positive after it counts at the second point
    gt = _gt([{"bbox": [1000, 0, 40, 100]}, {"bbox": [1500, 0, 40, 100]}], n_images=2249)
    fps = [_det([10 * i, 500, 20, 60], 0.9 - i * 1e-3) for i in range(41)]
    res = fps[:40] + [_det([1000, 0, 40, 100], 0.85)] + [fps[40]] + [_det([1500, 0, 40, 100], 0.1)]
    res[41]["score"] = 0.5
    row = _mr(gt, res).per_class[0]
    assert row["recall_at_fppi"][:2] == [0.0, 0.5]
    # no index with FPPI <= the point: the reference's -1 reads the final recall
    gt1 = _gt([{"bbox": [1000, 0, 40, 100]}])
    row = _mr(gt1, [_det([0, 0, 40, 100], 0.9), _det([1000, 0, 40, 100], 0.8)]).per_class[0]
    assert row["recall_at_fppi"] == [1.0] * 8 + [1.0] and row["MR"] == 0.0
    assert [r["MR"] for r in _mr(gt, res).per_class] == citypersons_mr(gt, res)


def test_mean_is_numpys():
    q = np.array([0.1, 0.2, 0.3, 0.35, 0.4, 0.6, 0.7, 0.71, 0.8])
    from deteval.protocols.citypersons import log_average_miss_rate

    assert log_average_miss_rate(q) == float(np.exp(np.mean(np.log(1 - q))))


def test_cli(tmp_path, capsys):
    gt, res = citypersons_case(3, n_images=12, scale=8)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(res))
    out = tmp_path / "out.json"
    argv = ["--protocol", "citypersons", "--quiet", "--json", str(out), str(tmp_path / "dt.json"),
            str(tmp_path / "gt.json")]
    assert main(argv) == 0, capsys.readouterr().err
    assert list(json.loads(out.read_text())["stats"].values()) == citypersons_mr(gt, res)


def test_bad_input():
    gt = _gt([{"bbox": [0, 0, 40, 100]}, {"bbox": [0, 0, 40, 100]}])
    gt["annotations"][1]["id"] = 1
    with pytest.raises(InputError, match="repeated"):
        deteval.evaluate([], gt, protocol="citypersons")
    gt = _gt([{"bbox": [0, 0, 40, 100]}])
    del gt["annotations"][0]["vis_ratio"]
    with pytest.raises(InputError, match="vis_ratio"):
        deteval.evaluate([], gt, protocol="citypersons")


def test_no_person_category_and_unlisted_images():
    gt = _gt([{"bbox": [0, 0, 40, 100]}])
    gt["categories"] = [{"id": 2, "name": "rider"}]
    gt["annotations"][0]["category_id"] = 2
    assert set(_mr(gt, []).stats.values()) == {-1.0}
    gt = _gt([{"bbox": [0, 0, 40, 100]}, {"bbox": [0, 0, 40, 100]}])
    gt["annotations"][1]["image_id"] = 99  # not in images: the reference never reads it
    with pytest.warns(deteval.DetevalWarning, match="not in images"):
        stats = _mr(gt, [_det([0, 0, 40, 100], 0.9)]).stats
    assert stats["Reasonable"] == 0.0


def _materialised(gt, res, draw, by_draw=True):
    """The dataset of the images ``draw`` (indices into the sorted image ids): a bootstrap's renumbered
    1..n in draw order, a slice's keeping its ids."""
    ids = sorted(im["id"] for im in gt["images"])
    images, anns, dets, next_id = [], [], [], 1
    for pos, i in enumerate(draw):
        new = pos + 1 if by_draw else ids[i]
        images.append({"id": new})
        for a in gt["annotations"]:
            if a["image_id"] == ids[i]:
                anns.append({**a, "image_id": new, "id": next_id})
                next_id += 1
        dets += [{**r, "image_id": new} for r in res if r["image_id"] == ids[i]]
    return {"images": images, "categories": gt["categories"], "annotations": anns}, dets


@pytest.mark.filterwarnings("ignore::deteval.DetevalWarning")
@pytest.mark.parametrize("seed", range(6))
def test_replay_equals_evaluating_the_materialised_dataset(seed):
    gt, res = citypersons_case(seed, n_images=10, scale=8)
    for a in gt["annotations"]:
        a["id"] += 1  # no id 0: the materialised copies are renumbered
    result = _mr(gt, res)
    replay = protocols.get("citypersons").replay(result)
    fn = replay.replicate_fn()
    assert fn(np.arange(10)) == list(result.stats.values())
    draw = np.random.default_rng(seed).integers(0, 10, 10)
    assert fn(draw) == citypersons_mr(*_materialised(gt, res, draw))
    part = np.array([1, 4, 5, 8])
    assert replay.replicate_fn(by_draw=False)(part) == citypersons_mr(*_materialised(gt, res, part, False))


def test_bootstrap_runs():
    gt, res = citypersons_case(2, n_images=12, scale=8)
    ci = deteval.bootstrap(deteval.evaluate(res, gt, protocol="citypersons"), n=20)
    assert ci is not None


def test_compare_runs_on_setups(tmp_path):
    gt, res = citypersons_case(2, n_images=12, scale=8)
    a = deteval.evaluate(res, gt, protocol="citypersons")
    b = deteval.evaluate(res[::2], gt, protocol="citypersons")
    out = deteval.compare(a, b, n=20)
    assert out.per_class == []  # setups are not categories: no per-class deltas
