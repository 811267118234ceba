"""Oriented-box IoU (hotcoco's ``obb``): against shapely on the corners, and against hotcoco's own evaluation."""

from __future__ import annotations

import json

import numpy as np
import pytest
import shapely

from deteval.geometry.obb import obb_corners, obb_iou, obb_iou_blocks, obb_iou_matrix


def boxes(rng, n, spread=30.0):
    c = rng.uniform(0, spread, (n, 2))
    wh = rng.uniform(1, 40, (n, 2))
    a = np.where(rng.random(n) < 0.2, rng.integers(-4, 5, n) * (np.pi / 4), rng.uniform(-4, 4, n))
    return np.column_stack([c, wh, a])


def test_corners_follow_the_rotation():
    c = obb_corners([10.0, 20.0, 4.0, 2.0, np.pi / 2])[0].reshape(4, 2)
    # (-w/2, -h/2) = (-2, -1) turned by +90 degrees is (1, -2)
    assert np.allclose(c, [[11, 18], [11, 22], [9, 22], [9, 18]], atol=1e-14)


def test_against_shapely():
    rng = np.random.default_rng(31)
    d, g = boxes(rng, 3000), boxes(rng, 3000)
    crowd = rng.random(3000) < 0.3
    got = np.array([obb_iou(d[i], g[i], crowd[i]) for i in range(3000)])
    pd, pg = shapely.polygons(obb_corners(d).reshape(-1, 4, 2)), shapely.polygons(obb_corners(g).reshape(-1, 4, 2))
    inter = shapely.area(shapely.intersection(pd, pg))
    da, ga = d[:, 2] * d[:, 3], g[:, 2] * g[:, 3]
    want = np.where(crowd, inter / da, inter / (da + ga - inter))
    assert np.all(np.abs(got - want) <= 1e-12 * want + 1e-14)
    assert (want > 0.1).sum() > 300
    m = obb_iou_matrix(d[:20], g[:30], crowd[:30])
    assert m[7, 7] == got[7] and m[3, 12] == obb_iou(d[3], g[12], crowd[12])


def test_zero_area_and_validation():
    assert obb_iou(np.array([0.0, 0, 0, 5, 0]), np.array([0.0, 0, 0, 5, 0]), False) == 0.0
    assert obb_iou(np.array([0.0, 0, 0, 5, 0]), np.array([0.0, 0, 4, 5, 0]), True) == 0.0
    with pytest.raises(ValueError, match=r"\(N, 5\)"):
        obb_iou_matrix(np.zeros((2, 4)), np.zeros((1, 5)))
    with pytest.raises(ValueError, match="non-finite"):
        obb_iou_matrix(np.zeros((1, 5)), [[0, 0, 1, 1, np.nan]])
    with pytest.raises(ValueError, match="crowd"):
        obb_iou_matrix(np.zeros((1, 5)), np.zeros((2, 5)), crowd=[True])


def hotcoco_matched(tmp_path, d, g, crowd, thresholds, gt_area=None):
    """hotcoco's COCOeval("obb"): for pair i (image i: ground truth g[i], detection d[i]), whether the detection
    is matched at each threshold (pycocotools' rule: IoU >= t)."""
    hotcoco = pytest.importorskip("hotcoco")
    n = len(d)
    anns = []
    for i in range(n):
        ann = {"id": i + 1, "image_id": i + 1, "category_id": 1, "obb": g[i].tolist(), "iscrowd": int(crowd[i])}
        if gt_area is not None:
            ann["area"] = float(gt_area[i])
        anns.append(ann)
    gt = {"images": [{"id": i + 1, "width": 100, "height": 100} for i in range(n)],
          "categories": [{"id": 1, "name": "a"}], "annotations": anns}  # fmt: skip
    dt = [{"image_id": i + 1, "category_id": 1, "obb": d[i].tolist(), "score": 0.5} for i in range(n)]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dt))
    coco_gt = hotcoco.COCO(str(tmp_path / "gt.json"))
    ev = hotcoco.COCOeval(coco_gt, coco_gt.loadRes(str(tmp_path / "dt.json")), "obb")
    params = ev.params
    params.iou_thrs = list(thresholds)
    params.area_rng = [[0.0, 1e10]]
    params.area_rng_lbl = ["all"]
    ev.params = params
    ev.evaluate()
    out = np.zeros((n, len(thresholds)), bool)
    for e in ev.eval_imgs:
        if e is None or not e["dtIds"]:
            continue
        i = e["image_id"] - 1
        out[i] = [bool(m[0]) or bool(ig[0]) for m, ig in zip(e["dtMatches"], e["dtIgnore"])]
    return out


@pytest.mark.parametrize("crowd_share", [0.0, 0.5])
def test_against_hotcoco(tmp_path, crowd_share):
    """hotcoco's IoU lies within 1e-9 of deteval's on every pair: matched at deteval's value - 1e-9 and not at + 1e-9
    (a crowd match shows as an ignored detection)."""
    rng = np.random.default_rng(7 + int(crowd_share * 10))
    n = 250
    g = boxes(rng, n, spread=6.0)
    d = boxes(rng, n, spread=6.0)
    crowd = rng.random(n) < crowd_share
    iou = np.array([obb_iou(d[i], g[i], crowd[i]) for i in range(n)])
    use = (iou > 1e-6) & (iou < 1 - 1e-6)
    assert use.sum() > 150
    delta = 1e-9
    thr = np.unique(np.concatenate([iou[use] - delta, iou[use] + delta]))
    matched = hotcoco_matched(tmp_path, d, g, crowd, thr)
    lo, hi = np.searchsorted(thr, iou - delta), np.searchsorted(thr, iou + delta)
    for i in np.flatnonzero(use):
        assert matched[i, lo[i]] and not matched[i, hi[i]], (i, iou[i], d[i], g[i], crowd[i])


def test_gt_area_field_does_not_enter_the_iou(tmp_path):
    """A ground truth's ``area`` (for area ranges) is not its IoU area: hotcoco's IoU is the same with it set."""
    rng = np.random.default_rng(11)
    n = 120
    g, d = boxes(rng, n, spread=6.0), boxes(rng, n, spread=6.0)
    crowd = np.zeros(n, bool)
    iou = np.array([obb_iou(d[i], g[i], False) for i in range(n)])
    use = (iou > 1e-6) & (iou < 1 - 1e-6)
    thr = np.unique(np.concatenate([iou[use] - 1e-9, iou[use] + 1e-9]))
    matched = hotcoco_matched(tmp_path, d, g, crowd, thr, gt_area=g[:, 2] * g[:, 3] * rng.uniform(0.2, 3.0, n))
    lo, hi = np.searchsorted(thr, iou - 1e-9), np.searchsorted(thr, iou + 1e-9)
    assert all(matched[i, lo[i]] and not matched[i, hi[i]] for i in np.flatnonzero(use))


def test_blocks_are_the_matrix_per_group():
    """The flat per-group layout COCO's matching reads: group i's D x G block, row-major, from pair_off[i]."""
    rng = np.random.default_rng(5)
    gt, dt = boxes(rng, 9), boxes(rng, 7)
    crowd = rng.random(9) < 0.3
    gt_rows, gt_off = np.array([4, 0, 2, 8, 1, 3, 5, 6, 7]), np.array([0, 3, 3, 9])
    dt_rows, dt_off = np.array([6, 1, 0, 2, 3, 4, 5]), np.array([0, 2, 5, 7])
    pair_off = np.concatenate([[0], np.cumsum(np.diff(dt_off) * np.diff(gt_off))])
    out = obb_iou_blocks(gt_rows, gt_off, dt_rows, dt_off, pair_off, gt, crowd, dt)
    full = obb_iou_matrix(dt, gt, crowd)
    for i in range(3):
        d, g = dt_rows[dt_off[i] : dt_off[i + 1]], gt_rows[gt_off[i] : gt_off[i + 1]]
        assert np.array_equal(out[pair_off[i] : pair_off[i + 1]], full[np.ix_(d, g)].ravel())
    assert len(out) == pair_off[-1] == 2 * 3 + 2 * 6
