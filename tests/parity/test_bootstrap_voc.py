"""Bootstrap, slices and compare for the VOC protocols (issue 20, items 1, 2, 4 for voc07 and voc10).

A replicate's images are drawn by the documented rule and materialised: image ``idx[j]`` becomes image
``j``, with copies of its ground truth and detections, the detections draw after draw, each image's in
their original row order. VOC breaks score ties by row, so that is the rule a replicate follows. deteval's
replicate (re-ranked from the one matching pass, :mod:`deteval.accumulation.resample_voc`) must equal deteval's VOC
protocol on the materialised dataset (``==``) and the independent voc_eval oracle (``tests/support/voc_oracle.py``,
within 1e-12); a slice must equal evaluating its images alone, rows in their original order.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import DATA_DIR
from hypothesis import given, settings
from hypothesis import strategies as st
from support.examples import examples
from support.resampled import file_draws
from support.voc_oracle import mean_ap

import deteval
from deteval.analysis.intervals import draws_of, stats_of_draws
from deteval.io import voc as voc_io
from deteval.types import Detections, GroundTruth, IdTable

VOC = DATA_DIR / "voc100_native"
REF = json.loads((VOC / "reference" / "voc_eval_reference.json").read_text())
KEYS = {"voc07": "voc07_11pt", "voc10": "voc10_allpt"}


def voc100():
    return voc_io.load_voc(VOC / "dets_txt", VOC / "gt_xml", names=VOC / "voc.names")


def rows_of(dt: Detections, gt: GroundTruth):
    """The containers as the oracle's rows: (image, class, box, difficult) and (image, class, score, box)."""
    difficult = gt.difficult | gt.crowd | gt.ignore
    g = zip(gt.image, gt.category, gt.boxes.tolist(), difficult)
    d = zip(dt.image, dt.category, dt.score, dt.boxes.tolist())
    gts = [(int(i), int(c), tuple(b), bool(x)) for i, c, b, x in g]
    dets = [(int(i), int(c), float(s), tuple(b)) for i, c, s, b in d]
    return gts, dets


def containers(gts, dets, n_images: int, n_cls: int) -> tuple[Detections, GroundTruth]:
    """Containers of rows (images 0..n-1 with ids 1..n, classes 0..K-1), rows kept in the order given."""
    g = np.array([b for _, _, b, _ in gts], float).reshape(-1, 4)
    d = np.array([b for *_, b in dets], float).reshape(-1, 4)
    gt = GroundTruth(
        image=np.array([x[0] for x in gts], np.int32),
        category=np.array([x[1] for x in gts], np.int32),
        boxes=g,
        area=np.zeros(len(gts)),
        crowd=np.zeros(len(gts), bool),
        ignore=np.zeros(len(gts), bool),
        difficult=np.array([x[3] for x in gts], bool),
        ann_id=np.arange(1, len(gts) + 1),
        images=IdTable(np.arange(1, n_images + 1, dtype=np.int64)),
        categories=IdTable(np.arange(n_cls, dtype=np.int64), names=[f"c{k}" for k in range(n_cls)]),
        box_format="xyxy",
    )
    dt = Detections(
        image=np.array([x[0] for x in dets], np.int32),
        category=np.array([x[1] for x in dets], np.int32),
        boxes=d,
        score=np.array([x[2] for x in dets], float),
        area=np.zeros(len(dets)),
        box_format="xyxy",
    )
    return dt, gt


def materialise(gts, dets, idx):
    """Image ``idx[j]`` becomes image ``j``: its ground truth and detections copied, draw after draw, each
    image's rows in their original order."""
    new_g, new_d = [], []
    for j, i in enumerate(np.asarray(idx).tolist()):
        new_g += [(j, c, b, diff) for im, c, b, diff in gts if im == i]
        new_d += [(j, c, s, b) for im, c, s, b in dets if im == i]
    return new_g, new_d


def subset(gts, dets, images):
    """The rows of ``images`` (each once), in their original order, images renumbered in id order."""
    new = {i: k for k, i in enumerate(sorted(set(images)))}
    return ([(new[im], c, b, diff) for im, c, b, diff in gts if im in new],
            [(new[im], c, s, b) for im, c, s, b in dets if im in new])  # fmt: skip


def _check(reps_row, names, gts_b, dets_b, n_images, n_cls, protocol, thrs, integ_07):
    """A replicate's stats == deteval on the materialised dataset, and each mAP == the oracle's (1e-12)."""
    dt_b, gt_b = containers(gts_b, dets_b, n_images, n_cls)
    alone = deteval.evaluate(dt_b, gt_b, protocol=protocol, iou_thrs=list(thrs))
    assert reps_row.tolist() == list(alone.stats.values())
    got = dict(zip(names, reps_row.tolist()))
    per_t = [mean_ap(gts_b, dets_b, n_cls, t, integ_07) for t in thrs]
    if len(thrs) == 1:
        assert abs(got["mAP"] - per_t[0]) <= 1e-12, (got["mAP"], per_t[0])
    else:
        for t, v in zip(thrs, per_t):
            assert abs(got[f"mAP{round(t * 100)}"] - v) <= 1e-12, (t, got, v)


def test_oracle_is_voc_eval_on_voc100():
    """The oracle gives the stored voc_eval reference numbers (per class and mAP) on voc100."""
    gts, dets = rows_of(*voc100())
    for protocol, use_07 in (("voc07", True), ("voc10", False)):
        for thr in (0.5, 0.75):
            ref = REF[f"iou{thr}_{KEYS[protocol]}"]
            assert abs(mean_ap(gts, dets, 20, thr, use_07) - ref["mAP"]) <= 1e-12


@pytest.mark.parametrize("protocol", ["voc07", "voc10"])
def test_replicates_equal_the_materialised_evaluations_on_voc100(protocol):
    dt, gt = voc100()
    gts, dets = rows_of(dt, gt)
    thrs = (0.5, 0.75)
    result = deteval.evaluate(dt, gt, protocol=protocol, iou_thrs=list(thrs))
    reps = stats_of_draws(result, draws_of(result, 3, 4))
    for b, idx in enumerate(file_draws(len(gt.images), 3, 4)):
        gts_b, dets_b = materialise(gts, dets, idx)
        _check(reps[b], list(result.stats), gts_b, dets_b, len(idx), 20, protocol, thrs, protocol == "voc07")


def test_ties_between_images_break_by_draw_then_row():
    """Scores rounded to one decimal: ties across images and within them, broken by (draw, row)."""
    dt, gt = voc100()
    dt = Detections(**{**dt.__dict__, "score": np.round(dt.score, 1)})
    gts, dets = rows_of(dt, gt)
    result = deteval.evaluate(dt, gt, protocol="voc10")
    reps = stats_of_draws(result, draws_of(result, 3, 11))
    for b, idx in enumerate(file_draws(len(gt.images), 3, 11)):
        gts_b, dets_b = materialise(gts, dets, idx)
        _check(reps[b], list(result.stats), gts_b, dets_b, len(idx), 20, "voc10", (0.5,), False)


def test_duplicates_at_one_score_follow_the_classic_order():
    """Every detection written three times at one score (one decimal): which copy takes the ground truth
    follows the replicate's own ranking of its class (ties="argsort": numpy < 1.25's introsort over the
    materialised rows), in replicates and slices alike."""
    dt, gt = voc100()
    rows = np.repeat(np.arange(len(dt)), 3)
    dt = Detections(**{**dt.__dict__, "score": np.round(dt.score, 1)})
    dt = Detections(**{k: (v[rows] if isinstance(v, np.ndarray) and len(v) == len(dt) else v)
                       for k, v in dt.__dict__.items()})  # fmt: skip
    gts, dets = rows_of(dt, gt)
    result = deteval.evaluate(dt, gt, protocol="voc10", iou_thrs=[0.5, 0.7])
    draws = file_draws(len(gt.images), 2, 5)
    reps = stats_of_draws(result, draws_of(result, 2, 5))
    for b, idx in enumerate(draws):
        gts_b, dets_b = materialise(gts, dets, idx)
        _check(reps[b], list(result.stats), gts_b, dets_b, len(idx), 20, "voc10", (0.5, 0.7), False)
    picks = [np.unique(np.asarray(d, np.int64))[::2] for d in draws]
    for row, d in zip(stats_of_draws(result, picks, by_draw=False), picks):
        gts_s, dets_s = subset(gts, dets, d)
        _check(row, list(result.stats), gts_s, dets_s, len(d), 20, "voc10", (0.5, 0.7), False)


def test_intervals_bracket_the_point_and_json():
    dt, gt = voc100()
    result = deteval.evaluate(dt, gt, protocol="voc07", iou_thrs="0.5:0.95")
    boot = deteval.bootstrap(result, n=200, seed=7, level=0.9)
    assert boot.replicates.shape == (200, 11)
    for name, (lo, hi) in boot.intervals.items():
        assert lo <= boot.point[name] <= hi, name
    assert np.array_equal(boot.replicates, deteval.bootstrap(result, n=200, seed=7, level=0.9).replicates)
    d = json.loads(json.dumps(boot.to_dict(replicates=True)))
    assert d["intervals"]["mAP"]["low"] == boot.intervals["mAP"][0] and len(d["replicates"]) == 200


def test_slices_equal_the_sliced_evaluations():
    dt, gt = voc100()
    dt = Detections(**{**dt.__dict__, "score": np.round(dt.score, 1)})  # ties: the slice keeps row order
    gts, dets = rows_of(dt, gt)
    ids = gt.images.ids.tolist()
    rng = np.random.default_rng(0)
    slices = {"first half": ids[:50], "random 30": rng.choice(ids, 30, replace=False).tolist(), "one": ids[7:8],
              "shuffled, repeated": ids[40:60][::-1] + ids[40:45]}  # fmt: skip
    result = deteval.evaluate(dt, gt, protocol="voc10", slices=slices, iou_thrs=[0.5, 0.75])
    for name, members in slices.items():
        images = [ids.index(m) for m in members]
        gts_s, dets_s = subset(gts, dets, images)
        n = len(set(images))
        _check(np.array(list(result.slices[name].values())), list(result.stats), gts_s, dets_s, n, 20, "voc10",
               (0.5, 0.75), False)  # fmt: skip


def test_slices_from_an_image_set_file(tmp_path):
    """A slice equals deteval's VOC evaluation restricted by an image set (--image-set) on the files."""
    ids = [line.strip() for line in (VOC / "reference" / "imageset.txt").read_text().split()]
    part = ids[10:45]
    (tmp_path / "part.txt").write_text("\n".join(part) + "\n")
    (tmp_path / "dets").mkdir()
    for f in (VOC / "dets_txt").iterdir():  # the part's detection files alone
        if f.stem in part:
            (tmp_path / "dets" / f.name).write_text(f.read_text())
    res = deteval.evaluate(str(VOC / "dets_txt"), str(VOC / "gt_xml"), protocol="voc07", names=VOC / "voc.names",
                           slices={"part": part})  # fmt: skip
    alone = deteval.evaluate(str(tmp_path / "dets"), str(VOC / "gt_xml"), protocol="voc07", names=VOC / "voc.names",
                             image_set=tmp_path / "part.txt")  # fmt: skip
    assert res.slices["part"] == alone.stats


def test_compare_self_and_paired():
    dt, gt = voc100()
    a = deteval.evaluate(dt, gt, protocol="voc10")
    cmp = deteval.compare(a, a, n=50, seed=3)
    assert set(cmp.delta.values()) == {0.0} and set(cmp.p_values.values()) == {1.0}
    assert all(cmp.intervals[k] == (0.0, 0.0) for k in cmp.names)
    rng = np.random.default_rng(1)
    other = Detections(**{**dt.__dict__, "score": np.clip(dt.score + rng.normal(0, 0.2, len(dt)), 0, 1)})
    b = deteval.evaluate(other, gt, protocol="voc10")
    cmp = deteval.compare(a, b, n=40, seed=9)
    assert np.array_equal(cmp.replicates_b, deteval.bootstrap(b, n=40, seed=9).replicates)
    assert cmp.delta["mAP"] == b.stats["mAP"] - a.stats["mAP"] != 0
    assert [abs(r["delta"]) for r in cmp.per_class] == sorted((abs(r["delta"]) for r in cmp.per_class), reverse=True)


# adversarial generated cases: ties across and within images, difficult objects, empty images, repeated
# draws (arbitrary lists of images, not only the rule's), several thresholds, both protocols

_box = st.tuples(st.integers(0, 12), st.integers(0, 12), st.integers(0, 8), st.integers(0, 8)).map(
    lambda b: (float(b[0]), float(b[1]), float(b[0] + b[2]), float(b[1] + b[3]))
)


@st.composite
def voc_cases(draw):
    n_images = draw(st.integers(1, 5))
    gts = draw(st.lists(st.tuples(st.integers(0, n_images - 1), st.integers(0, 1), _box, st.booleans()), max_size=10))
    dets = draw(st.lists(st.tuples(st.integers(0, n_images - 1), st.integers(0, 1), st.integers(0, 2), _box,
                                   st.integers(-1, len(gts) - 1), st.integers(-1, 1)), max_size=16))  # fmt: skip
    # most on a ground truth's box (shifted by -1, 0 or 1: true positives and duplicates), in its image
    dets = [(im, c, s / 2.0, b) if g < 0 else (gts[g][0], gts[g][1], s / 2.0, tuple(v + sh for v in gts[g][2]))
            for im, c, s, b, g, sh in dets]  # fmt: skip
    draws = draw(st.lists(st.lists(st.integers(0, n_images - 1), min_size=0, max_size=2 * n_images),
                          min_size=1, max_size=3))  # fmt: skip
    return n_images, gts, dets, draws


@settings(max_examples=examples(60), deadline=None)
@given(case=voc_cases(), protocol=st.sampled_from(["voc07", "voc10"]), thrs=st.sampled_from([(0.5,), (0.3, 0.7)]))
def test_generated_replicates_and_slices(case, protocol, thrs):
    n_images, gts, dets, draws = case
    dt, gt = containers(gts, dets, n_images, 2)
    result = deteval.evaluate(dt, gt, protocol=protocol, iou_thrs=list(thrs))
    names = list(result.stats)
    reps = stats_of_draws(result, [np.array(d, np.int64) for d in draws])
    for row, d in zip(reps, draws):
        gts_b, dets_b = materialise(gts, dets, d)
        _check(row, names, gts_b, dets_b, len(d), 2, protocol, thrs, protocol == "voc07")
    # the same image lists as slices: each image once, rows in their original order
    sliced = stats_of_draws(result, [np.unique(np.array(d, np.int64)) for d in draws], by_draw=False)
    for row, d in zip(sliced, draws):
        gts_s, dets_s = subset(gts, dets, d)
        _check(row, names, gts_s, dets_s, len(set(d)), 2, protocol, thrs, protocol == "voc07")


def test_an_image_drawn_twice_interleaves_its_tied_rows_by_draw():
    """Image 0 holds a true positive and its duplicate (a false positive) at one score; drawn twice, its
    copies stand TP FP TP FP (draw, then row), not TP TP FP FP (row, then draw): AP 5/9, not 1."""
    gts = [(0, 0, (0.0, 0.0, 9.0, 9.0), False), (1, 0, (0.0, 0.0, 9.0, 9.0), False)]
    dets = [(0, 0, 0.5, (0.0, 0.0, 9.0, 9.0)), (0, 0, 0.5, (0.0, 0.0, 9.0, 9.0)), (1, 0, 0.5, (20.0, 20.0, 29.0, 29.0))]
    dt, gt = containers(gts, dets, 2, 1)
    result = deteval.evaluate(dt, gt, protocol="voc10")
    (row,) = stats_of_draws(result, [np.array([0, 0, 1])])
    gts_b, dets_b = materialise(gts, dets, [0, 0, 1])
    _check(row, list(result.stats), gts_b, dets_b, 3, 1, "voc10", (0.5,), False)
    assert row[0] == 5 / 9 != 1.0
