"""CrowdHuman AP / MR^-2 / JI (``--protocol crowdhuman``) against CrowdDet's own ``lib/evaluate``, run here
from the vendored copy (tests/references/crowddet; run-time shims in tests/support/crowddet_reference.py):
AP, MR and JI ``==`` (the single-process driver sums JI's ratios in the ground truth's order, as deteval
does; the reference's 10 worker processes sum them in the order they finish, which moves its last bits)."""

from __future__ import annotations

import pytest
from support import crowddet_reference as ref
from support.pedestrian_data import crowdhuman_case, crowdhuman_edges

import deteval


def _both(tmp_path, gts, dts, box="fbox"):
    r = deteval.evaluate(dts, gts, protocol="crowdhuman", box=box)
    mine = (r.stats["AP"], r.stats["MR"])
    theirs = ref.apmr(tmp_path, gts, dts, box)
    if box == "hbox":
        return mine, theirs
    ji, per = ref.ji(tmp_path, gts, dts)
    return mine + (r.stats["JI"], [row["JI"] for row in r.per_class]), theirs + (ji, per)


@pytest.mark.parametrize("seed", range(12))
def test_generated_equals_crowddet(tmp_path, seed):
    gts, dts = crowdhuman_case(seed, n_images=[3, 10, 20][seed % 3], scale=[4, 10, 16][seed % 3])
    mine, theirs = _both(tmp_path, gts, dts)
    assert mine == theirs


def test_edges_equal_crowddet(tmp_path):
    gts, dts = crowdhuman_edges()
    mine, theirs = _both(tmp_path, gts, dts)
    assert mine == theirs
    # the edges are live: some IoU-edge detections match and some do not, so AP and MR are neither 0 nor 1
    assert 0 < mine[0] < 1 and 0 < mine[1] < 1


def test_each_edge_image_alone_equals_crowddet(tmp_path):
    gts, dts = crowdhuman_edges()
    for g, d in zip(gts, dts):
        if g["ID"] in ("only_ignore", "no_detections"):
            continue  # no positive or no detection at all: the reference divides by zero (AP) or takes a NaN
        mine, theirs = _both(tmp_path, [g], [d])
        assert mine == theirs, g["ID"]


@pytest.mark.parametrize("seed", range(4))
def test_head_boxes_equal_crowddet(tmp_path, seed):
    # --box hbox is the reference's head mode (Database mode 1): AP and MR
    gts, dts = crowdhuman_case(300 + seed, n_images=10, scale=10)
    for g in gts:
        for b in g["gtboxes"]:
            if b.get("extra", {}).get("ignore") == 0 and seed % 2:
                b["head_attr"] = {"ignore": 1}
    mine, theirs = _both(tmp_path, gts, dts, box="hbox")
    assert mine == theirs


def test_reference_is_the_vendored_one(tmp_path):
    # the driver runs CrowdDet's code, not the in-test oracle: its matcher is the blossom algorithm
    r = ref.load(tmp_path)
    assert r.ji.compute_matching.__module__.endswith("JI_tools")
    assert r.ji.compute_matching.__globals__["maxWeightMatching"].__module__.endswith("JIToolkits.matching")
