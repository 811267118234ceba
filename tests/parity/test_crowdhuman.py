"""CrowdHuman AP / MR^-2 / JI (``--protocol crowdhuman``) against an independent oracle of CrowdDet's
``lib/evaluate`` (tests/support/crowdhuman_oracle.py) on generated data built for its quirks, and
hand-computed cases."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.crowdhuman_oracle import crowdhuman_stats
from support.pedestrian_data import crowdhuman_case

import deteval
from deteval.cli import main
from deteval.errors import InputError


def _stats(gts, dts):
    r = deteval.evaluate(dts, gts, protocol="crowdhuman")
    return r.stats["AP"], r.stats["MR"], r.stats["JI"], [row["JI"] for row in r.per_class]


@pytest.mark.parametrize("seed", range(24))
def test_generated_equals_oracle(seed):
    gts, dts = crowdhuman_case(seed, n_images=[3, 10, 20][seed % 3], scale=[4, 10, 16][seed % 3])
    assert _stats(gts, dts) == crowdhuman_stats(gts, dts)


@pytest.mark.parametrize("seed", range(8))
def test_images_without_boxes_or_predictions(seed):
    # the reference crashes on both; deteval scores an image without boxes, a model without predictions there
    gts, dts = crowdhuman_case(100 + seed, n_images=10, scale=6, complete=False)
    assert any(not g["gtboxes"] for g in gts) or len(dts) < len(gts)
    assert _stats(gts, dts) == crowdhuman_stats(gts, dts)


def _gt(boxes, tags=None, W=1000, H=1000):
    tags = tags or ["person"] * len(boxes)
    return [{"ID": "a", "width": W, "height": H, "gtboxes": [{"tag": t, "fbox": b} for b, t in zip(boxes, tags)]}]


def _dt(boxes, scores):
    return [{"ID": "a", "dtboxes": [{"box": b, "score": s} for b, s in zip(boxes, scores)]}]


def test_iou_half_is_not_a_match():
    # inter 10000 / (union 20000 + 1e-6) < 0.5: a false positive; recall 0: AP 0 (one point), MR 1
    gts, dts = _gt([[0, 0, 100, 200]]), _dt([[0, 0, 100, 100]], [0.9])
    ap, mr, ji, _ = _stats(gts, dts)
    assert (ap, mr, ji) == (0.0, 1.0, 0.0)
    assert _stats(gts, _dt([[0, 0, 100, 100.001]], [0.9]))[1] == 0.0  # just above 0.5: a match, MR 0


def test_ji_is_maximum_weight_not_greedy():
    # A overlaps G1 (0.905) and G2 (0.739), B only G1 (0.538): greedy takes A-G1 (k=1), max weight A-G2, B-G1
    gts = _gt([[100, 0, 100, 100], [120, 0, 100, 100]])
    dts = _dt([[105, 0, 100, 100], [70, 0, 100, 100]], [0.9, 0.8])
    ji = _stats(gts, dts)[3]
    assert ji[0] == 2 / (2 + 2 - 2 + 1e-6)
    assert _stats(gts, dts) == crowdhuman_stats(gts, dts)


def test_ji_thresholds_are_the_references_floats():
    gts = _gt([[0, 0, 100, 100], [300, 0, 100, 100]])
    # 0.3 and 0.30000000000000004 are not above 1e-1 * 3; 0.3000000000000001 is
    dts = _dt([[0, 0, 100, 100], [300, 0, 100, 100]], [0.30000000000000004, 0.3000000000000001])
    ji = _stats(gts, dts)[3]
    assert ji[2] == 2 / (2 + 1e-6) and ji[3] == 1 / (2 + 1 - 1 + 1e-6) and ji[4] == 0.0
    dts = _dt([[0, 0, 100, 100], [300, 0, 100, 100]], [0.3, 0.3])
    assert _stats(gts, dts)[3][3] == 0.0


def test_ignore_regions_and_background():
    # a 'mask' region absorbs a detection inside it; 'background' is a positive that AP/MR never matches (it
    # absorbs as an ignore region) but JI does (tag 0 is not -1); one scored detection: no trapezoid, AP 0
    gts = _gt([[0, 0, 100, 100], [500, 500, 200, 200], [800, 0, 50, 100]], ["person", "mask", "background"])
    dts = _dt([[0, 0, 100, 100], [550, 550, 50, 50], [800, 0, 50, 100]], [0.9, 0.8, 0.7])
    ap, mr, ji, per = _stats(gts, dts)
    assert (ap, mr, ji, per) == crowdhuman_stats(gts, dts)
    assert ap == 0.0 and ji == 2 / (2 + 2 - 2 + 1e-6)


def test_cli_and_bad_input(tmp_path, capsys):
    gts, dts = crowdhuman_case(5, n_images=10, scale=8)
    (tmp_path / "gt.odgt").write_text("".join(json.dumps(r) + "\n" for r in gts))
    (tmp_path / "dt.odgt").write_text("".join(json.dumps(r) + "\n" for r in dts))
    out = tmp_path / "out.json"
    argv = ["--protocol", "crowdhuman", "--quiet", "--json", str(out), str(tmp_path / "dt.odgt"),
            str(tmp_path / "gt.odgt")]
    assert main(argv) == 0, capsys.readouterr().err
    stats = json.loads(out.read_text())["stats"]
    assert (stats["AP"], stats["MR"], stats["JI"]) == crowdhuman_stats(gts, dts)[:3]
    with pytest.raises(InputError, match="not an image"):
        deteval.evaluate([{"ID": "zzz", "dtboxes": []}], gts, protocol="crowdhuman")
    with pytest.raises(InputError, match="fbox"):
        deteval.evaluate([], [{"ID": "a", "width": 9, "height": 9, "gtboxes": [{"tag": "person"}]}],
                         protocol="crowdhuman")


def test_head_boxes_use_the_head_tags():
    # --box hbox: 'background' is a person; head_attr.ignore makes a box an ignore region
    gts = [{"ID": "a", "width": 1000, "height": 1000, "gtboxes": [
        {"tag": "background", "fbox": [0, 0, 10, 10], "hbox": [0, 0, 100, 100]},
        {"tag": "person", "fbox": [0, 0, 10, 10], "hbox": [300, 0, 100, 100], "head_attr": {"ignore": 1}},
    ]}]
    dts = _dt([[0, 0, 100, 100], [300, 0, 100, 100]], [0.9, 0.8])
    r = deteval.evaluate(dts, gts, protocol="crowdhuman", box="hbox")
    assert r.stats["JI"] == 1 / (1 + 1 - 1 + 1e-6)  # one match; the second detection dropped in the region
    assert r.stats["AP"] == 0.0 and r.stats["MR"] == 0.0  # one TP only: no trapezoid; recall 1: MR 0
    assert deteval.evaluate(dts, gts, protocol="crowdhuman").stats["JI"] == 0.0  # fbox: nothing overlaps


def _materialised(gts, dts, draw, order):
    """The dataset of the images ``draw`` (dense indices: sorted IDs), records in ``order`` of the draw."""
    ids = sorted(g["ID"] for g in gts)
    g_of = {g["ID"]: g for g in gts}
    d_of = {d["ID"]: d for d in dts}
    new_g, new_d = [], []
    for pos in order:
        old = ids[draw[pos]]
        new = f"{old}#{pos}"
        new_g.append({**g_of[old], "ID": new})
        if old in d_of:
            new_d.append({**d_of[old], "ID": new})
    return new_g, new_d


@pytest.mark.parametrize("seed", range(6))
def test_replay_equals_evaluating_the_materialised_dataset(seed):
    from deteval import protocols

    gts, dts = crowdhuman_case(200 + seed, n_images=10, scale=8, complete=seed % 2 == 0)
    result = deteval.evaluate(dts, gts, protocol="crowdhuman")
    replay = protocols.get("crowdhuman").replay(result)
    fn = replay.replicate_fn()
    assert fn(replay.file_order) == [result.stats["AP"], result.stats["MR"], result.stats["JI"]]
    draw = np.random.default_rng(seed).integers(0, 10, 10)
    assert fn(draw) == list(crowdhuman_stats(*_materialised(gts, dts, draw, range(10)))[:3])
    part = np.array([1, 4, 5, 8])
    place = np.argsort(replay.file_order)  # each dense image's place in the file
    in_file = np.argsort(place[part], kind="stable")
    expect = crowdhuman_stats(*_materialised(gts, dts, part, in_file))[:3]
    assert replay.replicate_fn(by_draw=False)(part) == list(expect)
