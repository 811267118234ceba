"""Bootstrap replicates against pycocotools on the materialised resampled datasets (issue 20, item 1).

A replicate's images are drawn by the documented rule; materialised, they are renumbered 1..n in draw
order with their annotations and detections copied, and pycocotools evaluates that dataset. deteval's
replicate (re-accumulated from the one matching pass) must give the same stats.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.fake100 import GT, PREDS
from support.oracle import load_json, run_pycocotools
from support.resampled import file_draws, materialise

import deteval
from deteval.analysis.intervals import draws_of, stats_of_draws


def _assert_replicates_equal_pycocotools(gt: dict, preds: list, n: int, seed: int, **kw) -> None:
    """deteval's first ``n`` replicates (seed ``seed``) equal pycocotools on each materialised dataset."""
    result = deteval.evaluate(preds, gt, **kw)
    reps = stats_of_draws(result, draws_of(result, n, seed))
    for b, idx in enumerate(file_draws(len(gt["images"]), n, seed)):
        gt_b, preds_b = materialise(gt, preds, idx)
        ref = run_pycocotools(preds_b, gt_b, **kw)
        assert reps[b].tolist() == [float(v) for v in ref.stats], b


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_replicates_equal_pycocotools_on_materialised_data(iou_type):
    _assert_replicates_equal_pycocotools(load_json(GT), load_json(PREDS[iou_type]), 3, 3, iou_type=iou_type)


def test_ties_between_images_break_by_draw_order():
    """Scores rounded to one decimal: many ties across images and within them, broken by draw order."""
    gt, preds = load_json(GT), load_json(PREDS["bbox"])
    for d in preds:
        d["score"] = round(d["score"], 1)
    _assert_replicates_equal_pycocotools(gt, preds, 3, 11)


def test_file_order_is_the_resampling_order():
    """Images listed out of id order: draw i is the i-th image of the file, not the i-th smallest id."""
    gt, preds = load_json(GT), load_json(PREDS["bbox"])
    gt["images"] = gt["images"][::-1]
    _assert_replicates_equal_pycocotools(gt, preds, 2, 5)


def test_identity_draw_is_the_evaluation():
    result = deteval.evaluate(PREDS["bbox"], GT)
    # every image once, in id order (the evaluation's order): the evaluation itself
    same = stats_of_draws(result, [np.arange(len(result.replay.file_order))])
    assert same[0].tolist() == list(result.stats.values())


def test_intervals_bracket_the_point_and_do_not_depend_on_threads(monkeypatch):
    from deteval.jit import using_threads

    result = deteval.evaluate(PREDS["bbox"], GT)
    runs = []
    for threads in (1, 2):
        with using_threads(threads):
            runs.append(deteval.bootstrap(result, n=200, seed=7, level=0.9))
    one, two = runs
    assert one.replicates.shape == (200, 12)
    assert np.array_equal(one.replicates, two.replicates)
    assert one.intervals == two.intervals
    for name, (lo, hi) in one.intervals.items():
        assert lo <= one.point[name] <= hi, name
    wider = deteval.bootstrap(result, n=200, seed=7, level=0.99)
    assert all(wider.intervals[k][0] <= one.intervals[k][0] for k in one.names)
    other = deteval.bootstrap(result, n=200, seed=8, level=0.9)
    assert not np.array_equal(other.replicates, one.replicates)
    d = json.loads(json.dumps(one.to_dict(replicates=True)))
    assert d["intervals"]["AP"]["low"] == one.intervals["AP"][0] and len(d["replicates"]) == 200


def test_bootstrap_of_inputs_and_bad_arguments():
    a = deteval.bootstrap(str(PREDS["bbox"]), str(GT), n=5, seed=1)
    b = deteval.bootstrap(deteval.evaluate(PREDS["bbox"], GT), n=5, seed=1)
    assert np.array_equal(a.replicates, b.replicates)
    with pytest.raises(deteval.InputError):
        deteval.bootstrap(deteval.evaluate(PREDS["bbox"], GT), n=0)
    with pytest.raises(deteval.InputError):
        deteval.bootstrap(deteval.evaluate(PREDS["bbox"], GT), n=5, level=1.0)
    with pytest.raises(deteval.InputError):  # a result without matches to re-accumulate
        deteval.bootstrap(deteval.evaluate(PREDS["bbox"], GT, protocol="lvis"), n=5)


# adversarial generated cases: tied scores, crowds, custom area ranges and max dets, pooled categories
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from support.examples import examples  # noqa: E402
from support.strategies import coco_cases  # noqa: E402


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=coco_cases(many_dets=False), seed=st.integers(0, 2**32 - 1))
def test_replicates_equal_pycocotools_on_generated_cases(case, seed):
    ann_ids = [a["id"] for a in case.gt["annotations"]]
    image_ids = [im["id"] for im in case.gt["images"]]
    # the materialised dataset renumbers annotations: pycocotools' id-0 quirk and repeated ids do not carry
    if 0 in ann_ids or len(set(ann_ids)) != len(ann_ids) or len(set(image_ids)) != len(image_ids):
        return
    kwargs = case.kwargs()
    result = deteval.evaluate(case.preds, case.gt, **kwargs)
    reps = stats_of_draws(result, draws_of(result, 2, seed))
    for b, idx in enumerate(file_draws(len(image_ids), 2, seed)):
        gt_b, preds_b = materialise(case.gt, case.preds, idx)
        if not preds_b:  # pycocotools' loadRes refuses an empty list
            continue
        ref = run_pycocotools(preds_b, gt_b, **kwargs)
        expected = [float(v) for v in ref.stats]
        assert reps[b].tolist()[: len(expected)] == expected, (b, idx)


def test_keypoint_replicates_equal_pycocotools():
    """keypoints1's one image made three (all detections, every other one, none): OKS matching, same rule."""
    kp = GT.parent.parent / "keypoints1"
    gt1, dt1 = load_json(kp / "gt_dataset.json"), load_json(kp / "dt_dataset.json")
    (image,) = gt1["images"]
    gt = {**gt1, "images": [{**image, "id": i} for i in (3, 1, 2)], "annotations": []}
    for i in (1, 2, 3):
        gt["annotations"] += [{**a, "image_id": i, "id": len(gt["annotations"]) + k + 1}
                              for k, a in enumerate(gt1["annotations"])]  # fmt: skip
    preds = [{**d, "image_id": 1} for d in dt1] + [{**d, "image_id": 2} for d in dt1[::2]]
    result = deteval.evaluate(preds, gt, iou_type="keypoints")
    reps = stats_of_draws(result, draws_of(result, 3, 1))
    compared = 0
    for b, idx in enumerate(file_draws(3, 3, 1)):
        gt_b, preds_b = materialise(gt, preds, idx)
        if not preds_b:
            continue
        ref = run_pycocotools(preds_b, gt_b, iou_type="keypoints")
        assert reps[b].tolist() == [float(v) for v in ref.stats], b
        compared += 1
    assert compared >= 2


def test_result_pickles_and_bootstraps_after():
    import pickle

    result = deteval.evaluate(PREDS["bbox"], GT)
    size = len(pickle.dumps(result))
    first = deteval.bootstrap(result, n=4, seed=2)
    assert len(pickle.dumps(result)) == size  # the cached index is not pickled
    again = deteval.bootstrap(pickle.loads(pickle.dumps(result)), n=4, seed=2)
    assert np.array_equal(first.replicates, again.replicates)
    assert json.loads(result.to_json()) == json.loads(pickle.loads(pickle.dumps(result)).to_json())
